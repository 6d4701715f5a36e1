package report_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redisx-go/kit/benchmarks/report"
	"github.com/redisx-go/kit/benchmarks/verdict"
)

// TestAnswerOfANearCacheSaysModeMemoryAndStaleness: when the answer is a
// near-cache, every report says, beside the URL, what its mode risks.
func TestAnswerOfANearCacheSaysModeMemoryAndStaleness(t *testing.T) {
	const near = "a near-cache without tracking (TrackNone): another client's write may be served stale for up to its TTL, 1m0s"
	r := renderSyntheticReport()
	r.Answer = &verdict.Answer{
		Workload: "custom", Concurrency: 10, Strategy: "near-none", Confidence: verdict.Significant,
		Margin: 1.5, PValue: 0.002, RunnerUp: "multiplexed",
		URL:  "redis://127.0.0.1:6379?strategy=multiplexed&near=64MiB&near_ttl=1m&near_tracking=none",
		Near: near,
	}
	var text bytes.Buffer
	if err := report.WriteSummary(&text, r); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(strings.Fields(text.String()), " "); !strings.Contains(got, near) {
		t.Errorf("summary does not say %q:\n%.600s", near, text.String())
	}
	dir := t.TempDir()
	if err := report.WriteReports(dir, r); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"report.md", "report.html"} {
		b, _ := os.ReadFile(filepath.Join(dir, f))
		page := strings.ReplaceAll(string(b), "&#39;", "'")
		if !strings.Contains(page, "A near-cache without tracking (TrackNone)") || !strings.Contains(page, "up to its TTL, 1m0s") {
			t.Errorf("%s does not say what the near-cache risks", f)
		}
	}
}
