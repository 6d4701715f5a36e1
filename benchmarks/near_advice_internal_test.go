package benchmarks

import (
	"strings"
	"testing"

	"github.com/redisx-go/kit/benchmarks/target"
	"github.com/redisx-go/kit/benchmarks/verdict"
)

// TestNearAdviceSaysModeMemoryAndStaleness: a near-cache target's
// recommendation names its tracking mode, its memory and the staleness it
// can show; another target's says nothing.
func TestNearAdviceSaysModeMemoryAndStaleness(t *testing.T) {
	want := map[string][]string{
		"near-multiplexed": {"per-key tracking (TrackKeys", "milliseconds", "1.5 MiB of the 64MiB", "0.90 per write"},
		"near-broadcast":   {"broadcast tracking (TrackBroadcast)", "milliseconds", "every process", "0.90 per write"},
		"near-none":        {"without tracking (TrackNone)", "up to its TTL, 1m0s", "1.5 MiB of the 64MiB"},
		"multiplexed":      nil,
	}
	cell := &verdict.Cell{LocalBytes: 3 << 19, InvalidationsPerWrite: 0.9}
	for _, tg := range target.DefaultTargets() {
		parts, ok := want[tg.Name]
		if !ok {
			continue
		}
		got := nearAdvice(tg, cell)
		if parts == nil && got != "" {
			t.Errorf("%s: nearAdvice = %q; want none", tg.Name, got)
		}
		for _, p := range parts {
			if !strings.Contains(got, p) {
				t.Errorf("%s: nearAdvice = %q; want it to say %q", tg.Name, got, p)
			}
		}
	}
}
