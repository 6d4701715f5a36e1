package benchmarks_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/redisx-go/kit/benchmarks"
)

// The verdict's error rates on synthetic samples, through the sequential
// sampling Run does (the same looks, the same stopping rule): log-normal
// noise of spreads from a quiet machine's (2%) to a busy one's (20%).

// synthTarget is a target of a synthetic cell: the median of its
// samples, their spread, and the connections the server would see.
type synthTarget struct {
	name   string
	median float64
	conns  int
}

// sequentialVerdict measures targets at level as Run does under p — p.Repeats
// samples each, then more for the contenders of an undecided verdict,
// look after look — drawing samples of spread sigma; it returns the
// verdict and the cells.
func sequentialVerdict(rng *rand.Rand, p benchmarks.Plan, workload string, level int, sigma float64, ts []synthTarget) (benchmarks.Recommendation, []benchmarks.Cell) {
	cells := make([]benchmarks.Cell, len(ts))
	for i, tg := range ts {
		cells[i] = synthCell(workload, tg.name, level, tg.conns, draw(rng, p.Repeats, tg.median, sigma))
	}
	for look := 1; look < benchmarks.Looks(p); look++ {
		_, more := benchmarks.NextLook(p, cells)
		if more == nil {
			break
		}
		want := benchmarks.LookSamples(p, look+1)
		for i, tg := range ts {
			if c := &cells[i]; slices.Contains(more, c.Target) && c.Samples < want {
				*c = synthCell(workload, tg.name, level, tg.conns, append(c.QPSSamples, draw(rng, want-c.Samples, tg.median, sigma)...))
			}
		}
	}
	recs := benchmarks.RecommendPlan(p, cells)
	if len(recs) != 1 {
		panic(fmt.Sprintf("%d verdicts of one level", len(recs)))
	}
	return recs[0], cells
}

// namesNoSlower fails t when rec names a target another target of cells
// beats with p < 0.05 (and an interval of the ratio above 1): bar V1,
// which the rule keeps even among equivalent targets.
func namesNoSlower(t *testing.T, rec benchmarks.Recommendation, cells []benchmarks.Cell) {
	t.Helper()
	if rec.Strategy == "" {
		return
	}
	i := slices.IndexFunc(cells, func(c benchmarks.Cell) bool { return c.Target == rec.Strategy })
	for _, c := range cells {
		if c.Target == rec.Strategy {
			continue
		}
		p := benchmarks.RankP(c.QPSSamples, cells[i].QPSSamples)
		if lo, _ := benchmarks.RatioInterval(c.QPSSamples, cells[i].QPSSamples, 0.05); p < 0.05 && lo > 1 {
			t.Errorf("%s named (%s) though %s beats it: p = %.4f, interval of the ratio from %.3f", rec.Strategy, rec.Confidence, c.Target, p, lo)
		}
	}
}

// outcomes counts verdicts by outcome, and how many named each target.
type outcomes struct {
	n                                  int
	significant, equivalent, undecided int
	named                              map[string]int
	samples                            int // of every target, summed
}

func (o *outcomes) add(rec benchmarks.Recommendation, cells []benchmarks.Cell) {
	if o.named == nil {
		o.named = map[string]int{}
	}
	o.n++
	switch rec.Confidence {
	case benchmarks.Significant:
		o.significant++
	case benchmarks.Equivalent:
		o.equivalent++
	case benchmarks.Undecided:
		o.undecided++
	}
	o.named[rec.Strategy]++
	for _, c := range cells {
		o.samples += c.Samples
	}
}

func (o outcomes) String() string {
	pct := func(k int) string { return fmt.Sprintf("%.1f%%", 100*float64(k)/float64(max(o.n, 1))) }
	return fmt.Sprintf("%d verdicts: significant %s, equivalent %s, undecided %s; named %v; %.1f samples per verdict",
		o.n, pct(o.significant), pct(o.equivalent), pct(o.undecided), o.named, float64(o.samples)/float64(max(o.n, 1)))
}

var spreads = []float64{0.02, 0.05, 0.1, 0.2}

// TestVerdictRateTwins is bar V2's twins on synthetic samples: targets of
// one distribution win in at most 5% of verdicts, and never cross.
func TestVerdictRateTwins(t *testing.T) {
	rng := rand.New(rand.NewPCG(29, 1))
	p := benchmarks.DefaultPlan()
	levels := []int{1, 10, 50, 100, 500, 1000}
	var all outcomes
	crossovers := 0
	for trial := range 120 {
		sigma := spreads[trial%len(spreads)]
		var ts []synthTarget
		for i := range 2 + trial%3 {
			ts = append(ts, synthTarget{fmt.Sprintf("t%d", i), 100_000, 1 + i})
		}
		var recs []benchmarks.Recommendation
		for _, l := range levels {
			rec, cells := sequentialVerdict(rng, p, "get", l, sigma, ts)
			namesNoSlower(t, rec, cells)
			all.add(rec, cells)
			recs = append(recs, rec)
		}
		crossovers += len(benchmarks.FindCrossovers(recs))
	}
	t.Logf("twins: %v; %d crossovers", all, crossovers)
	if float64(all.significant) > 0.05*float64(all.n) {
		t.Errorf("twins: %d of %d verdicts significant; want at most 5%%", all.significant, all.n)
	}
	if crossovers > 0 {
		t.Errorf("twins crossed %d times; want never", crossovers)
	}
}

// TestVerdictRateTenPercentSlower: the faster of two targets 10% apart
// wins or the verdict is undecided; the slower one is never named, though
// it holds fewer connections (the tie-break's favourite).
func TestVerdictRateTenPercentSlower(t *testing.T) {
	rng := rand.New(rand.NewPCG(29, 2))
	p := benchmarks.DefaultPlan()
	for _, sigma := range spreads {
		var o outcomes
		for range 150 {
			rec, cells := sequentialVerdict(rng, p, "get", 10, sigma, []synthTarget{{"fast", 100_000, 4}, {"slow", 90_000, 1}})
			namesNoSlower(t, rec, cells)
			o.add(rec, cells)
		}
		t.Logf("10%% slower, spread %v: %v", sigma, o)
		if o.named["slow"] > 0 || o.equivalent > 0 {
			t.Errorf("10%% slower, spread %v: the slower named %d times, equivalent %d times of %d; want never", sigma, o.named["slow"], o.equivalent, o.n)
		}
	}
}

// TestVerdictRateTwoPercent: two targets 2% apart are equivalent or
// undecided; a win is a false decision, which the procedure bounds by
// 2.5% (half of alpha: a win is one side of a two-sided test).
func TestVerdictRateTwoPercent(t *testing.T) {
	rng := rand.New(rand.NewPCG(29, 3))
	p := benchmarks.DefaultPlan()
	var all outcomes
	for _, sigma := range spreads {
		var o outcomes
		for range 150 {
			rec, cells := sequentialVerdict(rng, p, "get", 10, sigma, []synthTarget{{"fast", 100_000, 4}, {"slow", 98_000, 1}})
			namesNoSlower(t, rec, cells)
			o.add(rec, cells)
			all.add(rec, cells)
		}
		t.Logf("2%% apart, spread %v: %v", sigma, o)
	}
	if float64(all.significant) > 0.025*float64(all.n) {
		t.Errorf("2%% apart: %d of %d verdicts significant; want at most 2.5%%", all.significant, all.n)
	}
}

// TestVerdictNamesNoSlowerTargetAmongMany is bar V1 on synthetic cells of
// 2 to 5 targets whose medians lie within 15% of each other, with random
// connections: whatever the outcome, the target named is one no other is
// significantly faster than, and an alternative is slower than it.
func TestVerdictNamesNoSlowerTargetAmongMany(t *testing.T) {
	rng := rand.New(rand.NewPCG(29, 4))
	p := benchmarks.DefaultPlan()
	var o outcomes
	for trial := range 400 {
		var ts []synthTarget
		for i := range 2 + trial%4 {
			ts = append(ts, synthTarget{fmt.Sprintf("t%d", i), 100_000 * (0.85 + 0.15*rng.Float64()), 1 + rng.IntN(8)})
		}
		rec, cells := sequentialVerdict(rng, p, "get", 10, spreads[trial%len(spreads)], ts)
		namesNoSlower(t, rec, cells)
		if rec.Alternative != "" && rec.Confidence != benchmarks.Equivalent {
			t.Errorf("an alternative on a %s verdict: %q", rec.Confidence, rec.Alternative)
		}
		o.add(rec, cells)
	}
	t.Logf("targets within 15%%: %v", o)
}
