package benchmarks_test

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redisx-go/kit/benchmarks"
	"github.com/redisx-go/kit/benchmarks/target"
	"github.com/redisx-go/kit/benchmarks/verdict"
	"github.com/redisx-go/kit/benchmarks/verdict/verdicttest"
	"github.com/redisx-go/kit/benchmarks/workload"
	"github.com/redisx-go/kit/internal/launcher"
	"github.com/redisx-go/kit/strategy"
)

// v1v2 is bars V1 and V2 on real servers: the harness's own Run, on a
// server of its own, measuring GETs of targets whose difference is known
// by construction — twins (one configuration under two names), and the
// same configuration slowed by 10% and by 2% (its client does a second
// GET, uncounted, after every 9th or 49th: 1/9 and 1/49 more work, so
// 0.9x and 0.98x the throughput). The slowed target claims fewer
// connections (Target.Conns: the tie-break's second key), so that the
// tie-break would pick it wherever it may. Samples of 100 ms, as -quick
// takes; 2 × ROUNDS runs of levels 1, 10 and 100.
//
// V2: twins win in at most 5% of cells and never cross; the 10%-slower
// target is never named; the 2%-slower pair is a win in at most 5% of
// cells (equivalent or undecided otherwise). V1, in every report: no
// verdict names a target another target of its cell beats with p < 0.05,
// and the answer is its cell's verdict.
func (br *bars) v1v2(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	servers := benchmarks.Servers{Standalone: srv.Addr()}
	i := slices.IndexFunc(workload.DefaultWorkloads(), func(w benchmarks.Workload) bool { return w.Name == "get" })
	get := workload.DefaultWorkloads()[i]
	base := func(name string) benchmarks.Target {
		tg := target.StrategyTarget(name, strategy.Multiplexed{})
		tg.Conns = 8
		return tg
	}
	experiments := []struct {
		name    string
		targets []benchmarks.Target
	}{
		{"twins", []benchmarks.Target{base("twin-a"), base("twin-b")}},
		{"ten", []benchmarks.Target{base("fast-10"), slowed("slow-10", 9)}},
		{"two", []benchmarks.Target{base("fast-2"), slowed("slow-2", 49)}},
	}
	p := benchmarks.DefaultPlan()
	p.Levels, p.Duration, p.Warmup = []int{1, 10, 100}, 100*time.Millisecond, 50*time.Millisecond
	p.Targets, p.Workloads = nil, nil
	for _, e := range experiments {
		w := get
		w.Name = "v2/" + e.name
		for _, tg := range e.targets {
			w.Targets = append(w.Targets, tg.Name)
			p.Targets = append(p.Targets, tg)
		}
		p.Workloads = append(p.Workloads, w)
	}
	out := map[string]*verdicttest.Outcomes{}
	crossovers := 0
	for run := range 2 * br.rounds {
		p.Seed = int64(run + 1)
		rep, err := benchmarks.Run(context.Background(), p, servers, nil)
		if err != nil {
			t.Fatalf("run %d: %v", run+1, err)
		}
		for _, rec := range rep.Recommendations {
			var cells []verdict.Cell
			for _, c := range rep.Cells {
				if c.Workload == rec.Workload && c.Concurrency == rec.Concurrency {
					cells = append(cells, c)
				}
			}
			verdicttest.NamesNoSlower(t, rec, cells) // V1
			if out[rec.Workload] == nil {
				out[rec.Workload] = &verdicttest.Outcomes{}
			}
			out[rec.Workload].Add(rec, cells)
			t.Logf("run %d %s at %d: %s %q, %+.1f%% [%+.1f%%, %+.1f%%], %d samples", run+1, rec.Workload, rec.Concurrency, rec.Confidence,
				rec.Strategy, 100*rec.Margin, 100*rec.MarginLo, 100*rec.MarginHi, rec.Samples)
		}
		for _, x := range verdict.FindCrossovers(rep.Recommendations) {
			if x.Workload == "v2/twins" {
				crossovers++
			}
		}
		if a := rep.Answer; a != nil { // V1: the answer is its cell's verdict
			k := slices.IndexFunc(rep.Recommendations, func(r verdict.Recommendation) bool {
				return r.Workload == a.Workload && r.Concurrency == a.Concurrency
			})
			if k < 0 || rep.Recommendations[k].Strategy != a.Strategy || rep.Recommendations[k].Confidence != a.Confidence {
				t.Errorf("run %d: the answer %s %q (%s) is not the verdict of its cell", run+1, a.Workload, a.Strategy, a.Confidence)
			}
		}
	}
	twins, ten, two := out["v2/twins"], out["v2/ten"], out["v2/two"]
	for name, o := range out {
		t.Logf("%s: %v", name, o)
	}
	br.record(t, "V2", fmt.Sprintf("twins: significant in %d of %d cells, %d crossovers", twins.Significant, twins.N, crossovers),
		twins.Rate(twins.Significant) <= 0.05 && crossovers == 0, "<= 5%, none")
	br.record(t, "V2", fmt.Sprintf("10%% slower named in %d of %d cells (faster won %d)", ten.Named["slow-10"], ten.N, ten.Named["fast-10"]),
		ten.Named["slow-10"] == 0, "never")
	br.record(t, "V2", fmt.Sprintf("2%% apart: significant in %d of %d cells (equivalent %d)", two.Significant, two.N, two.Equivalent),
		two.Rate(two.Significant) <= 0.05, "<= 5%")
}

// record records a bar that is a count rather than a ratio, and fails t
// when it is missed.
func (br *bars) record(t *testing.T, id, what string, met bool, bar string) {
	t.Helper()
	verdict := "met"
	if !met {
		verdict = "MISSED"
		t.Errorf("%s: %s; want %s", id, what, bar)
	}
	br.report = append(br.report, fmt.Sprintf("%s  %-58s (bar %s) %s", id, what, bar, verdict))
}

// slowed is Multiplexed{} whose client, after every every-th GET, does
// one more GET of the same key that no one counts: 1/every more work per
// operation counted. It claims 1 connection (Target.Conns), fewer than
// its twin's 8, so that a tie-break would prefer it.
func slowed(name string, every int64) benchmarks.Target {
	tg := target.StrategyTarget(name, strategy.Multiplexed{})
	tg.Conns = 1
	open := tg.Open
	tg.Open = func(ctx context.Context, env benchmarks.Env) (benchmarks.Client, error) {
		c, err := open(ctx, env)
		if err != nil {
			return nil, err
		}
		return &slowClient{Client: c, every: every}, nil
	}
	return tg
}

type slowClient struct {
	benchmarks.Client
	every int64
	n     atomic.Int64
}

func (c *slowClient) Get(ctx context.Context, key string) ([]byte, error) {
	v, err := c.Client.Get(ctx, key)
	if err == nil && c.n.Add(1)%c.every == 0 {
		_, err = c.Client.Get(ctx, key)
	}
	return v, err
}
