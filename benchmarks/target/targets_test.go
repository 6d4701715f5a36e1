package target_test

import (
	"go/parser"
	"strings"
	"testing"

	"github.com/redisx-go/kit/benchmarks/target"
	"github.com/redisx-go/kit/localcache"
	"github.com/redisx-go/kit/redisx"
	"github.com/redisx-go/kit/strategy"
)

func TestDefaultTargetsDescribeThemselves(t *testing.T) {
	want := map[string][2]string{
		"multiplexed":          {"redis://127.0.0.1:6379?strategy=multiplexed", "strategy.Multiplexed{}"},
		"multiplexed-1":        {"redis://127.0.0.1:6379?strategy=multiplexed&conns=1", "strategy.Multiplexed{Conns: 1}"},
		"multiplexed-4":        {"redis://127.0.0.1:6379?strategy=multiplexed&conns=4", "strategy.Multiplexed{Conns: 4}"},
		"pool-8":               {"redis://127.0.0.1:6379?strategy=pool&size=8", "strategy.Pool{Size: 8}"},
		"pool-32":              {"redis://127.0.0.1:6379?strategy=pool&size=32", "strategy.Pool{Size: 32}"},
		"pool-100":             {"redis://127.0.0.1:6379?strategy=pool&size=100", "strategy.Pool{Size: 100}"},
		"slotgrouped":          {"redis://127.0.0.1:6379?strategy=slotgrouped", "strategy.SlotGrouped{}"},
		"near-multiplexed":     {"redis://127.0.0.1:6379?strategy=multiplexed&near=64MiB&near_ttl=1m", "localcache.Near{Inner: strategy.Multiplexed{}, MaxBytes: 64 << 20, TTL: time.Minute}"},
		"near-broadcast":       {"redis://127.0.0.1:6379?strategy=multiplexed&near=64MiB&near_ttl=1m&near_tracking=broadcast", "localcache.Near{Inner: strategy.Multiplexed{}, MaxBytes: 64 << 20, TTL: time.Minute, Tracking: localcache.TrackBroadcast}"},
		"near-none":            {"redis://127.0.0.1:6379?strategy=multiplexed&near=64MiB&near_ttl=1m&near_tracking=none", "localcache.Near{Inner: strategy.Multiplexed{}, MaxBytes: 64 << 20, TTL: time.Minute, Tracking: localcache.TrackNone}"},
		"rueidis":              {"", ""},
		"redigo-pool-100":      {"", ""},
		"go-redis":             {"", ""},
		"goredis-autopipeline": {"", ""},
	}
	ts := target.DefaultTargets()
	if len(ts) != len(want) {
		t.Errorf("%d default targets; want %d", len(ts), len(want))
	}
	for _, tg := range ts {
		w, ok := want[tg.Name]
		if !ok {
			t.Errorf("unexpected default target %s", tg.Name)
			continue
		}
		if tg.URL != w[0] || tg.Go != w[1] {
			t.Errorf("%s: URL %q, Go %q; want %q, %q", tg.Name, tg.URL, tg.Go, w[0], w[1])
		}
		if tg.Peer != (w[0] == "") {
			t.Errorf("%s: Peer = %v", tg.Name, tg.Peer)
		}
	}
}

func TestStrategyTargetSnippets(t *testing.T) {
	for _, tc := range []struct {
		s        strategy.Strategy
		url, src string
	}{
		{strategy.SlotGrouped{Transport: strategy.Pool{Size: 32}}, "redis://127.0.0.1:6379?strategy=slotgrouped&transport=pool&size=32", "strategy.SlotGrouped{Transport: strategy.Pool{Size: 32}}"},
		{strategy.SlotGrouped{Transport: strategy.Multiplexed{Conns: 2}}, "redis://127.0.0.1:6379?strategy=slotgrouped&conns=2", "strategy.SlotGrouped{Transport: strategy.Multiplexed{Conns: 2}}"},
		{localcache.Near{Inner: strategy.SlotGrouped{}, MaxBytes: 1 << 30, TTL: 30 * 1e9}, "redis://127.0.0.1:6379?strategy=slotgrouped&near=1GiB&near_ttl=30s", "localcache.Near{Inner: strategy.SlotGrouped{}, MaxBytes: 1 << 30, TTL: 30 * time.Second}"},
		// A field no URL parameter expresses: no URL, and %#v as the Go.
		{strategy.Pool{Size: 4, HealthCheckPeriod: 1e9}, "", "strategy.Pool{Size:4, MinIdle:0, MaxIdleTime:0, MaxLifetime:0, HealthCheckPeriod:1000000000}"},
	} {
		tg := target.StrategyTarget("x", tc.s)
		if tg.URL != tc.url || tg.Go != tc.src {
			t.Errorf("%#v: URL %q, Go %q; want %q, %q", tc.s, tg.URL, tg.Go, tc.url, tc.src)
		}
		if _, err := parser.ParseExpr(tg.Go); err != nil {
			t.Errorf("Go snippet %q does not parse: %v", tg.Go, err)
		}
	}
}

// TestDefaultTargetURLsParse checks that redisx.ParseURL reads every
// default target's URL back into the same strategy, slotgrouped and near
// included: a URL the report prints must configure what it names.
func TestDefaultTargetURLsParse(t *testing.T) {
	for _, tg := range target.DefaultTargets() {
		if tg.Peer {
			continue
		}
		t.Run(tg.Name, func(t *testing.T) {
			o, err := redisx.ParseURL(tg.URL)
			if err != nil {
				t.Fatalf("ParseURL(%q): %v", tg.URL, err)
			}
			if got := target.StrategyTarget("x", o.Strategy).Go; got != tg.Go {
				t.Errorf("ParseURL(%q) = %s; want %s", tg.URL, got, tg.Go)
			}
		})
	}
}

func TestURLTargetHidesEveryPassword(t *testing.T) {
	tg, err := target.URLTarget("s", "redis-sentinel://u:secret1@127.0.0.1:26379/m?sentinel_password=secret2&read_from=replica")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(tg.URL, "secret") || !strings.Contains(tg.URL, "read_from=replica") {
		t.Errorf("URL %q; want its passwords hidden and its read_from kept", tg.URL)
	}
	if tg.Servers == nil || tg.Servers.Sentinel == nil || tg.Servers.Sentinel.Password != "secret2" || tg.Servers.Standalone != "" {
		t.Errorf("Servers %+v; want the sentinels, their password, no standalone address yet", tg.Servers)
	}
}

// TestNearNoneTargetsAreStale: a near-cache without tracking, in the
// default targets or by URL, is marked Stale (a tie never goes to it over
// a coherent target); the tracking ones and the rest are not.
func TestNearNoneTargetsAreStale(t *testing.T) {
	for _, tg := range target.DefaultTargets() {
		if want := tg.Name == "near-none"; tg.Stale != want {
			t.Errorf("%s: Stale = %v; want %v", tg.Name, tg.Stale, want)
		}
	}
	for raw, want := range map[string]bool{
		"redis://?near=1MiB&near_tracking=none":      true,
		"redis://?near=1MiB&near_tracking=broadcast": false,
		"redis://?near=1MiB":                         false,
		"redis://?strategy=pool&size=8":              false,
	} {
		tg, err := target.URLTarget("u", raw)
		if err != nil {
			t.Fatal(err)
		}
		if tg.Stale != want {
			t.Errorf("URLTarget(%q).Stale = %v; want %v", raw, tg.Stale, want)
		}
	}
}
