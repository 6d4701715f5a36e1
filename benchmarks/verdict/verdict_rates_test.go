package verdict_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/redisx-go/kit/benchmarks/verdict"
	"github.com/redisx-go/kit/benchmarks/verdict/verdicttest"
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

// defaultSampling is the sequential sampling of the default plan: 6
// samples a look, up to 18, at alpha 0.05 and a margin of 5%.
var defaultSampling = verdict.Sampling{Alpha: 0.05, Margin: 0.05, Repeats: 6, MaxRepeats: 18}

// sequentialVerdict measures targets at level as Run does under p — p.Repeats
// samples each, then more for the contenders of an undecided verdict,
// look after look — drawing samples of spread sigma; it returns the
// verdict and the cells.
func sequentialVerdict(rng *rand.Rand, p verdict.Sampling, workload string, level int, sigma float64, ts []synthTarget) (verdict.Recommendation, []verdict.Cell) {
	cells := make([]verdict.Cell, len(ts))
	for i, tg := range ts {
		cells[i] = synthCell(workload, tg.name, level, tg.conns, draw(rng, p.Repeats, tg.median, sigma))
	}
	for look := 1; look < p.Looks(); look++ {
		_, more := p.NextLook(cells)
		if more == nil {
			break
		}
		want := p.LookSamples(look + 1)
		for i, tg := range ts {
			if c := &cells[i]; slices.Contains(more, c.Target) && c.Samples < want {
				*c = synthCell(workload, tg.name, level, tg.conns, append(c.QPSSamples, draw(rng, want-c.Samples, tg.median, sigma)...))
			}
		}
	}
	recs := p.Recommend(cells)
	if len(recs) != 1 {
		panic(fmt.Sprintf("%d verdicts of one level", len(recs)))
	}
	return recs[0], cells
}

var spreads = []float64{0.02, 0.05, 0.1, 0.2}

// TestVerdictRateTwins is bar V2's twins on synthetic samples: targets of
// one distribution win in at most 5% of verdicts, and never cross.
func TestVerdictRateTwins(t *testing.T) {
	rng := rand.New(rand.NewPCG(29, 1))
	p := defaultSampling
	levels := []int{1, 10, 50, 100, 500, 1000}
	var all verdicttest.Outcomes
	crossovers := 0
	for trial := range 120 {
		sigma := spreads[trial%len(spreads)]
		var ts []synthTarget
		for i := range 2 + trial%3 {
			ts = append(ts, synthTarget{fmt.Sprintf("t%d", i), 100_000, 1 + i})
		}
		var recs []verdict.Recommendation
		for _, l := range levels {
			rec, cells := sequentialVerdict(rng, p, "get", l, sigma, ts)
			verdicttest.NamesNoSlower(t, rec, cells)
			all.Add(rec, cells)
			recs = append(recs, rec)
		}
		crossovers += len(verdict.FindCrossovers(recs))
	}
	t.Logf("twins: %v; %d crossovers", all, crossovers)
	if float64(all.Significant) > 0.05*float64(all.N) {
		t.Errorf("twins: %d of %d verdicts significant; want at most 5%%", all.Significant, all.N)
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
	p := defaultSampling
	for _, sigma := range spreads {
		var o verdicttest.Outcomes
		for range 150 {
			rec, cells := sequentialVerdict(rng, p, "get", 10, sigma, []synthTarget{{"fast", 100_000, 4}, {"slow", 90_000, 1}})
			verdicttest.NamesNoSlower(t, rec, cells)
			o.Add(rec, cells)
		}
		t.Logf("10%% slower, spread %v: %v", sigma, o)
		if o.Named["slow"] > 0 || o.Equivalent > 0 {
			t.Errorf("10%% slower, spread %v: the slower named %d times, equivalent %d times of %d; want never", sigma, o.Named["slow"], o.Equivalent, o.N)
		}
	}
}

// TestVerdictRateTwoPercent: two targets 2% apart are equivalent or
// undecided; a win is a false decision, which the procedure bounds by
// 2.5% (half of alpha: a win is one side of a two-sided test).
func TestVerdictRateTwoPercent(t *testing.T) {
	rng := rand.New(rand.NewPCG(29, 3))
	p := defaultSampling
	var all verdicttest.Outcomes
	for _, sigma := range spreads {
		var o verdicttest.Outcomes
		for range 150 {
			rec, cells := sequentialVerdict(rng, p, "get", 10, sigma, []synthTarget{{"fast", 100_000, 4}, {"slow", 98_000, 1}})
			verdicttest.NamesNoSlower(t, rec, cells)
			o.Add(rec, cells)
			all.Add(rec, cells)
		}
		t.Logf("2%% apart, spread %v: %v", sigma, o)
	}
	if float64(all.Significant) > 0.025*float64(all.N) {
		t.Errorf("2%% apart: %d of %d verdicts significant; want at most 2.5%%", all.Significant, all.N)
	}
}

// TestVerdictNamesNoSlowerTargetAmongMany is bar V1 on synthetic cells of
// 2 to 5 targets whose medians lie within 15% of each other, with random
// connections: whatever the outcome, the target named is one no other is
// significantly faster than, and an alternative is slower than it.
func TestVerdictNamesNoSlowerTargetAmongMany(t *testing.T) {
	rng := rand.New(rand.NewPCG(29, 4))
	p := defaultSampling
	var o verdicttest.Outcomes
	for trial := range 400 {
		var ts []synthTarget
		for i := range 2 + trial%4 {
			ts = append(ts, synthTarget{fmt.Sprintf("t%d", i), 100_000 * (0.85 + 0.15*rng.Float64()), 1 + rng.IntN(8)})
		}
		rec, cells := sequentialVerdict(rng, p, "get", 10, spreads[trial%len(spreads)], ts)
		verdicttest.NamesNoSlower(t, rec, cells)
		if rec.Alternative != "" && rec.Confidence != verdict.Equivalent {
			t.Errorf("an alternative on a %s verdict: %q", rec.Confidence, rec.Alternative)
		}
		o.Add(rec, cells)
	}
	t.Logf("targets within 15%%: %v", o)
}
