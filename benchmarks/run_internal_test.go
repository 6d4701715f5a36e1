package benchmarks

import (
	"testing"
)

func TestRecommendURLPointsAtTheMeasuredServers(t *testing.T) {
	for _, tc := range []struct {
		raw   string
		addrs []string
		tls   bool
		want  string
	}{
		{"redis://127.0.0.1:6379?strategy=pool&size=32", []string{"10.0.0.1:6380"}, false, "redis://10.0.0.1:6380?strategy=pool&size=32"},
		{"redis://127.0.0.1:6379?strategy=slotgrouped", []string{"10.0.0.1:7000", "10.0.0.2:7000"}, true, "rediss://10.0.0.1:7000?strategy=slotgrouped&addr=10.0.0.2:7000"},
		// A user's URL: credentials dropped, its own seeds replaced.
		{"redis://u:secret@h:1/2?strategy=pool&addr=x:1&size=4", []string{"10.0.0.1:6379"}, false, "redis://10.0.0.1:6379/2?strategy=pool&size=4"},
		{"", []string{"10.0.0.1:6379"}, false, ""},
	} {
		if got := recommendURL(tc.raw, tc.addrs, tc.tls); got != tc.want {
			t.Errorf("recommendURL(%q, %v, %v) = %q; want %q", tc.raw, tc.addrs, tc.tls, got, tc.want)
		}
	}
}

func TestCountClientsByNamePrefix(t *testing.T) {
	list := "id=3 addr=127.0.0.1:1 laddr=127.0.0.1:6379 fd=8 name=redisx-bench-3.pool-32 age=1\n" +
		"id=4 addr=127.0.0.1:2 fd=9 name=redisx-bench-3.pool-32-invalidation age=1\n" +
		"id=5 addr=127.0.0.1:3 fd=10 name=redisx-bench-31.pool-32 age=1\n" +
		"id=6 addr=127.0.0.1:4 fd=11 name= age=1\n" +
		"id=7 addr=127.0.0.1:5 fd=12 name=redisx-bench-monitor age=1\n"
	if n := countClients(list, "redisx-bench-3."); n != 2 {
		t.Errorf("countClients = %d; want 2 (target 3's connections, its invalidation one included, not target 31's)", n)
	}
}

func TestPlanEstimateCountsCellsAndSamples(t *testing.T) {
	p := QuickPlan()
	all := p.Estimate(true, true)
	noCluster := p.Estimate(true, false)
	// The quick mget runs 3 targets at 3 levels on the cluster.
	if all.Cells-noCluster.Cells != 9 {
		t.Errorf("mget cells = %d; want 9", all.Cells-noCluster.Cells)
	}
	// Every cell has its repeats and a warm-up; an isolated target's
	// (the near-caches') have a warm-up before each repeat.
	isolated := 0
	for _, w := range p.Workloads {
		for _, tg := range p.targetsOf(w) {
			if tg.Isolated {
				isolated += len(p.LevelsOf(w))
			}
		}
	}
	if isolated == 0 {
		t.Fatal("the quick plan has no isolated target: the near workload lost its near-caches")
	}
	if want := all.Cells*(p.Repeats+1) + isolated*(p.Repeats-1); all.Samples != want {
		t.Errorf("samples = %d for %d cells, %d of them isolated; want %d", all.Samples, all.Cells, isolated, want)
	}
	// The sequential sampling's time comes within the bounds too.
	if all.Duration+all.MoreAtMost > 110e9 || all.MoreAtMost != 30e9 {
		t.Errorf("quick plan estimated at %v, %v more at most; it must fit in 2 minutes with the servers' start, its looks getting 30 s",
			all.Duration, all.MoreAtMost)
	}
	// The estimate runs high: the full plan of docs/results/report.json
	// (294 cells, estimated at 17m53s) ran for 16m46s (its started to
	// finished).
	if full := DefaultPlan().Estimate(true, true); full.Duration+full.MoreAtMost > 20*60e9 || full.MoreAtMost != full.Duration/10 {
		t.Errorf("full plan estimated at %v, %v more at most; it must fit in 20 minutes, its looks getting a tenth", full.Duration, full.MoreAtMost)
	}
}
