package benchmarks_test

import (
	"context"
	"testing"
	"time"

	"github.com/redisx-go/kit/benchmarks"
	"github.com/redisx-go/kit/benchmarks/target"
	"github.com/redisx-go/kit/benchmarks/verdict"
	"github.com/redisx-go/kit/internal/faultproxy"
	"github.com/redisx-go/kit/internal/launcher"
	"github.com/redisx-go/kit/strategy"
)

// sloPlan is the plan of TestSLOHoldsWhereItSaysOnRealServers: GETs on 4
// workers, 6 short samples (a re-run's cell pools them, as a probe pools
// its own).
func sloPlan(targets ...benchmarks.Target) benchmarks.Plan {
	p := tinyPlan("get")
	p.Targets = targets
	p.Levels = []int{4}
	p.Duration, p.Warmup, p.Repeats = 100*time.Millisecond, 50*time.Millisecond, 6
	return p
}

// TestSLOHoldsWhereItSaysOnRealServers is bar H2 on a real server: a
// pool of 4 connections, and the same behind a proxy that holds every
// request for 3 ms (a timer of Go's, which wakes up to a millisecond
// later: the pool then serves 1,000 to 1,300 requests a second). The slower one's
// rate must come out lower, and re-run at the rate the search reported,
// each target must hold the bound in at least 9 of 10 runs. The bound,
// p99 = 200 ms, is loose for loopback, and still far under the delayed
// pool's latency past its capacity (seconds): the tests of other packages
// share the machine, and at a load average of 8 to 12 on its 2 cores
// re-runs of the plain pool at 8,000/s measured p99s of 30 to 150 ms in
// 100 ms samples, which failed a 50 ms bound at every rate.
func TestSLOHoldsWhereItSaysOnRealServers(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs SLO searches and re-runs of about 40 s")
	}
	if raceEnabled {
		t.Skip("-race: the client runs several times slower; make test runs this without -race")
	}
	ctx := context.Background()
	srv := launcher.Standalone(t, launcher.Options{})
	proxy, err := faultproxy.Start(ctx, srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = proxy.Close() }()
	proxy.Delay(faultproxy.Upstream, 3*time.Millisecond)

	plain := target.StrategyTarget("pool-4", strategy.Pool{Size: 4})
	slow := target.StrategyTarget("pool-4-delayed", strategy.Pool{Size: 4})
	open := slow.Open
	slow.Open = func(ctx context.Context, env benchmarks.Env) (benchmarks.Client, error) {
		env.Addrs = []string{proxy.Addr()}
		return open(ctx, env)
	}
	slo, _ := benchmarks.ParseSLO("p99=200ms")
	p := sloPlan(plain, slow)
	// From 1% of the plain pool's closed-loop peak (about 1,000/s on this
	// kind of machine), doubling 4 times, to 8,000/s: far above the
	// delayed pool's capacity, and, for the plain pool (which holds to the
	// end of the ramp), a rate its re-runs hold on a shared machine too. (At
	// 16,000/s, 4,000/s a connection, a burst of the host's CPU steal made
	// 2 re-runs of 3 miss the bound: p99 125 and 112 ms.)
	p.SLO, p.SLOSteps, p.SLOBisects = &slo, 5, 4
	servers := benchmarks.Servers{Standalone: srv.Addr()}
	rep, err := benchmarks.Run(ctx, p, servers, testWriter{t})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]verdict.SLOResult{}
	for _, s := range rep.SLO {
		got[s.Target] = s
		t.Logf("%s: max rate %.0f/s (confirmed %v), first failing %.0f/s, %d probes; %s", s.Target, s.MaxRate, s.Confirmed, s.FirstFailingRate, len(s.Probes), s.Note)
		if s.BoundMs != 200 || s.Workload != "get" || s.Concurrency != 4 || len(s.Probes) == 0 {
			t.Errorf("%s: SLO result %+v; want get, bound 200 ms, 4 workers, its probes", s.Target, s)
		}
	}
	fast, delayed := got["pool-4"], got["pool-4-delayed"]
	if !(fast.MaxRate > 0 && delayed.MaxRate > 0) {
		t.Fatalf("max rates %v and %v; want both to hold some rate", fast.MaxRate, delayed.MaxRate)
	}
	if a, b := fast.Probes[0].Rate, delayed.Probes[0].Rate; a != b {
		t.Errorf("first probes at %v/s and %v/s; want every target's search to start at the same rate", a, b)
	}
	// 4 connections each held 3 ms serve at most 1,333/s; a short sample
	// absorbs a little more, its backlog drained after it.
	if !(delayed.FirstFailingRate > 0 && delayed.FirstFailingRate <= 2000) {
		t.Errorf("delayed pool: first failing %v; want a failure by 1.5x its capacity, 2,000/s", delayed.FirstFailingRate)
	}
	if fast.MaxRate < delayed.MaxRate || (fast.FirstFailingRate > 0 && fast.FirstFailingRate < delayed.FirstFailingRate) {
		t.Errorf("plain pool max %v, first failing %v; delayed pool max %v, first failing %v: the faster must rank at least as high",
			fast.MaxRate, fast.FirstFailingRate, delayed.MaxRate, delayed.FirstFailingRate)
	}

	// Re-run each at its reported rate, ten times, as a user would:
	// -rate max_rate, the p99 of the cell.
	for _, s := range []verdict.SLOResult{fast, delayed} {
		held := 0
		var p99s []float64
		for range 10 {
			tg := plain
			if s.Target == slow.Name {
				tg = slow
			}
			q := sloPlan(tg)
			q.Rate = s.MaxRate
			r, err := benchmarks.Run(ctx, q, servers, nil)
			if err != nil || len(r.Cells) != 1 {
				t.Fatalf("re-run of %s at %v/s: %v, %d cells", s.Target, s.MaxRate, err, len(r.Cells))
			}
			c := r.Cells[0]
			p99s = append(p99s, c.P99ms)
			if c.P99ms <= s.BoundMs && c.Errors == 0 && c.Unsent == 0 {
				held++
			}
		}
		t.Logf("%s re-run at %.0f/s: p99 %v ms", s.Target, s.MaxRate, p99s)
		if held < 9 {
			t.Errorf("%s re-run at its max rate %.0f/s held p99 ≤ %v ms in %d of 10 runs (p99 %v ms); want at least 9", s.Target, s.MaxRate, s.BoundMs, held, p99s)
		}
	}
}

// testWriter writes a run's progress to the test log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(string(b))
	return len(b), nil
}
