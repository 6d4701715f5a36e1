package verdict_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/redisx-go/kit/benchmarks/verdict"
)

// cell is a synthetic cell of workload "get" whose QPS samples are base
// plus the offsets (in QPS); QPS is their median, as Run computes it.
func cell(target string, level, conns int, base float64, offsets ...float64) verdict.Cell {
	xs := make([]float64, len(offsets))
	for i, o := range offsets {
		xs[i] = base + o
	}
	return verdict.Cell{
		Workload: "get", Target: target, Concurrency: level, Conns: conns,
		QPS: verdict.Median(xs), QPSSamples: xs, Samples: len(xs),
	}
}

// six spreads of samples: tight (±0.5%) and noisy (±20%) around 0.
var (
	tight = []float64{-500, -300, -100, 100, 300, 500}
	noisy = []float64{-20000, 15000, -8000, 4000, -1000, 19000}
)

func only(t *testing.T, recs []verdict.Recommendation) verdict.Recommendation {
	t.Helper()
	if len(recs) != 1 {
		t.Fatalf("Recommend returned %d verdicts, want 1: %+v", len(recs), recs)
	}
	return recs[0]
}

func TestVerdictClearWinIsSignificant(t *testing.T) {
	rec := only(t, verdict.Recommend([]verdict.Cell{
		cell("pool-32", 10, 32, 100_000, tight...),
		cell("multiplexed-1", 10, 1, 130_000, tight...),
		cell("pool-8", 10, 8, 90_000, tight...),
	}, 0.05, 0.05))
	if rec.Strategy != "multiplexed-1" || rec.Confidence != verdict.Significant || rec.RunnerUp != "pool-32" {
		t.Fatalf("verdict = %s (%s) over %s; want multiplexed-1 (significant) over pool-32", rec.Strategy, rec.Confidence, rec.RunnerUp)
	}
	if rec.PValue >= 0.05 || rec.Margin < 0.29 || rec.Margin > 0.31 {
		t.Errorf("p = %v, margin = %v; want p < 0.05, margin 0.30", rec.PValue, rec.Margin)
	}
	if rec.TieBreak != "" {
		t.Errorf("TieBreak = %q on a significant win", rec.TieBreak)
	}
}

func TestVerdictNoiseIsUndecided(t *testing.T) {
	// pool-32's median is higher, but the samples overlap: no rank test
	// can tell them apart, nor put them within 5% of each other.
	rec := only(t, verdict.Recommend([]verdict.Cell{
		cell("pool-32", 10, 32, 104_000, noisy...),
		cell("multiplexed-1", 10, 1, 100_000, noisy...),
	}, 0.05, 0.05))
	if rec.Confidence != verdict.Undecided || rec.Strategy != "" {
		t.Fatalf("verdict %q (%s, p = %v); want undecided, naming no target", rec.Strategy, rec.Confidence, rec.PValue)
	}
	if want := []string{"pool-32", "multiplexed-1"}; !slices.Equal(rec.Contenders, want) || rec.RunnerUp != "multiplexed-1" {
		t.Errorf("contenders %q, runner-up %s; want %q, the leader first", rec.Contenders, rec.RunnerUp, want)
	}
	if rec.PValue < 0.05 || !rec.Underpowered || rec.SuggestedMaxRepeats < 0 {
		t.Errorf("p = %v, underpowered %v, suggested %d; want the same noise: p >= 0.05, an interval wider than the margin",
			rec.PValue, rec.Underpowered, rec.SuggestedMaxRepeats)
	}
}

func TestVerdictSmallSignificantDifferenceIsEquivalentAndNamesTheFaster(t *testing.T) {
	// 3% apart with tight samples: significant, but under the 5% margin,
	// and measured well enough to be within it: equivalent. The
	// tie-break would pick multiplexed-1 (1 connection), but it is
	// significantly slower: pool-32 is named, multiplexed-1 offered as
	// the alternative, with its cost.
	rec := only(t, verdict.Recommend([]verdict.Cell{
		cell("multiplexed-1", 10, 1, 100_000, tight...),
		cell("pool-32", 10, 32, 103_000, tight...),
	}, 0.05, 0.05))
	if rec.Confidence != verdict.Equivalent || rec.Strategy != "pool-32" {
		t.Fatalf("verdict %s (%s, margin %v [%v, %v]); want pool-32, equivalent", rec.Strategy, rec.Confidence, rec.Margin, rec.MarginLo, rec.MarginHi)
	}
	if rec.PValue >= 0.05 || rec.MarginLo < -0.048 || rec.MarginHi > 0.05 || rec.IntervalLevel != 0.9 {
		t.Errorf("p = %v, interval [%v, %v] at %v; want p < 0.05 and the 90%% interval inside ±5%%", rec.PValue, rec.MarginLo, rec.MarginHi, rec.IntervalLevel)
	}
	if !strings.Contains(rec.TieBreak, "multiplexed-1 is significantly slower than pool-32") {
		t.Errorf("TieBreak = %q; want it to say why multiplexed-1 was passed over", rec.TieBreak)
	}
	if want := "pool-32 is +3.0% faster ["; !strings.HasPrefix(rec.Alternative, want) ||
		!strings.HasSuffix(rec.Alternative, "] with 32 connections; multiplexed-1 uses 1 connection") {
		t.Errorf("Alternative = %q; want %q…, quantified", rec.Alternative, want)
	}
	// And with a 2% margin the same samples make a significant win.
	rec = only(t, verdict.Recommend([]verdict.Cell{
		cell("multiplexed-1", 10, 1, 100_000, tight...),
		cell("pool-32", 10, 32, 103_000, tight...),
	}, 0.05, 0.02))
	if rec.Strategy != "pool-32" || rec.Confidence != verdict.Significant {
		t.Errorf("with a 2%% margin: %s (%s); want pool-32 (significant)", rec.Strategy, rec.Confidence)
	}
}

func TestVerdictNeverNamesASignificantlySlowerTarget(t *testing.T) {
	// A newcomer's run: pool-8 faster in every sample, both on one
	// connection.
	pool := synthCell("custom", "pool-8", 1, 1, []float64{30_500, 30_800, 31_000, 31_200, 31_500, 31_800})
	pool.MaxConns = 8
	mux1 := synthCell("custom", "multiplexed-1", 1, 1, []float64{25_400, 26_400, 27_400, 28_400, 29_400, 30_300})
	mux1.MaxConns = 1
	rec := only(t, verdict.Recommend([]verdict.Cell{pool, mux1}, 0.05, 0.05))
	if rec.Strategy == "multiplexed-1" {
		t.Errorf("verdict names multiplexed-1 (%s, margin %+.3f [%+.3f, %+.3f], p %.3f), slower than pool-8 in every sample",
			rec.Confidence, rec.Margin, rec.MarginLo, rec.MarginHi, rec.PValue)
	}
	if rec.Confidence != verdict.Undecided || rec.Strategy != "" {
		t.Errorf("verdict %q (%s, margin %+.3f [%+.3f, %+.3f]); want undecided: 10%% apart, the interval reaching under 5%%",
			rec.Strategy, rec.Confidence, rec.Margin, rec.MarginLo, rec.MarginHi)
	}
}

func TestVerdictEquivalentPicksFewerConnections(t *testing.T) {
	rec := only(t, verdict.Recommend([]verdict.Cell{
		cell("pool-100", 100, 100, 100_200, tight...),
		cell("multiplexed-1", 100, 1, 100_000, tight...),
		cell("pool-8", 100, 8, 99_900, tight...),
		cell("pool-32", 100, 32, 60_000, tight...), // clearly slower: not among the equivalent
	}, 0.05, 0.05))
	if rec.Strategy != "multiplexed-1" || rec.Confidence != verdict.Equivalent {
		t.Fatalf("verdict = %s (%s; %s); want multiplexed-1 by tie-break", rec.Strategy, rec.Confidence, rec.TieBreak)
	}
	if rec.RunnerUp != "pool-100" || rec.Margin >= 0 || rec.Alternative != "" {
		t.Errorf("runner-up %s, margin %v, alternative %q; want the leader pool-100, a negative margin, no alternative",
			rec.RunnerUp, rec.Margin, rec.Alternative)
	}
	if !strings.Contains(rec.TieBreak, "fewest connections") || strings.Contains(rec.TieBreak, "pool-32") {
		t.Errorf("TieBreak = %q; want the equivalent set without pool-32, and the rule", rec.TieBreak)
	}
}

func TestVerdictEquivalentEqualConnectionsPrefersLowerBound(t *testing.T) {
	// At one goroutine a pool opens one connection, like a multiplexer.
	a := cell("pool-100", 1, 1, 40_100, tight...)
	a.MaxConns = 100
	b := cell("multiplexed-1", 1, 1, 40_000, tight...)
	b.MaxConns = 1
	rec := only(t, verdict.Recommend([]verdict.Cell{a, b}, 0.05, 0.05))
	if rec.Strategy != "multiplexed-1" || rec.Confidence != verdict.Equivalent || rec.Alternative != "" {
		t.Fatalf("verdict = %s (%s), alternative %q; want multiplexed-1 (same connections seen, lower bound), no alternative",
			rec.Strategy, rec.Confidence, rec.Alternative)
	}
}

func TestVerdictNeverRecommendsAPeerOrAFailedCell(t *testing.T) {
	peer := cell("rueidis", 100, 2, 300_000, tight...)
	peer.Peer = true
	broken := cell("pool-32", 100, 32, 500_000, tight...)
	broken.Failed, broken.Errors = true, 3
	rec := only(t, verdict.Recommend([]verdict.Cell{
		peer, broken,
		cell("multiplexed-1", 100, 1, 200_000, tight...),
		cell("pool-8", 100, 8, 100_000, tight...),
	}, 0.05, 0.05))
	if rec.Strategy != "multiplexed-1" || rec.RunnerUp != "pool-8" || rec.Confidence != verdict.Significant {
		t.Fatalf("verdict = %s (%s) over %s; want multiplexed-1 (significant) over pool-8", rec.Strategy, rec.Confidence, rec.RunnerUp)
	}
	if rec.Peer != "rueidis" || rec.PeerRatio < 0.66 || rec.PeerRatio > 0.67 {
		t.Errorf("peer %s ratio %v; want rueidis 0.67", rec.Peer, rec.PeerRatio)
	}
}

func TestCrossoverBracketsTheLevelsWhereTheLeaderChanges(t *testing.T) {
	var cells []verdict.Cell
	for _, l := range []int{1, 4, 10, 100} {
		mux, pool := 100_000.0, 60_000.0
		if l >= 10 {
			mux, pool = 60_000, 100_000
		}
		cells = append(cells, cell("multiplexed-1", l, 1, mux, tight...), cell("pool-32", l, 32, pool, tight...))
	}
	recs := verdict.Recommend(cells, 0.05, 0.05)
	xs := verdict.FindCrossovers(recs)
	if len(xs) != 1 {
		t.Fatalf("crossovers = %+v; want one", xs)
	}
	x := xs[0]
	if x.From != "multiplexed-1" || x.To != "pool-32" || x.Below != 4 || x.Above != 10 || x.Confidence != verdict.Significant {
		t.Errorf("crossover = %+v; want multiplexed-1 → pool-32 between 4 and 10, significant", x)
	}
	if want := "pool-32 overtakes multiplexed-1 between 4 and 10 goroutines"; x.Text != want {
		t.Errorf("text = %q; want %q", x.Text, want)
	}
}

func TestCrossoverNeedsSignificantVerdictsOnBothSides(t *testing.T) {
	recs := []verdict.Recommendation{
		{Workload: "get", Concurrency: 1, Strategy: "pool-8", Confidence: verdict.Equivalent},
		{Workload: "get", Concurrency: 10, Strategy: "multiplexed-1", Confidence: verdict.Significant},
		{Workload: "get", Concurrency: 50, Confidence: verdict.Undecided, Contenders: []string{"pool-8", "multiplexed-1"}},
		{Workload: "get", Concurrency: 100, Strategy: "pool-8", Confidence: verdict.Significant},
		{Workload: "get", Concurrency: 500, Strategy: "multiplexed-1", Confidence: verdict.Equivalent},
		// Equivalent verdicts never cross, whatever their tie-breaks named.
		{Workload: "setget", Concurrency: 1, Strategy: "multiplexed-1", Confidence: verdict.Equivalent},
		{Workload: "setget", Concurrency: 10, Strategy: "multiplexed-2", Confidence: verdict.Equivalent},
		{Workload: "setget", Concurrency: 50, Strategy: "multiplexed-1", Confidence: verdict.Equivalent},
	}
	xs := verdict.FindCrossovers(recs)
	if len(xs) != 1 {
		t.Fatalf("crossovers = %+v; want one, between the significant verdicts at 10 and 100", xs)
	}
	x := xs[0]
	if x.From != "multiplexed-1" || x.To != "pool-8" || x.Between != [2]int{10, 100} || x.Below != 10 || x.Above != 100 ||
		x.Confidence != verdict.Significant {
		t.Errorf("crossover = %+v; want multiplexed-1 → pool-8 between [10, 100], significant", x)
	}
	if want := "pool-8 overtakes multiplexed-1 between 10 and 100 goroutines (no significant winner at 50)"; x.Text != want {
		t.Errorf("text = %q; want %q", x.Text, want)
	}
}

func TestVerdictTieNeverGoesToAStaleTargetOverACoherentOne(t *testing.T) {
	// A near-cache without tracking holds no invalidation connection: one
	// connection fewer than the coherent ones, which the tie-break would
	// otherwise prefer. Its reads may be stale up to its TTL.
	none := cell("near-none", 10, 1, 100_100, tight...)
	none.Stale = true
	rec := only(t, verdict.Recommend([]verdict.Cell{
		none,
		cell("near-multiplexed", 10, 2, 100_000, tight...),
		cell("near-broadcast", 10, 2, 99_950, tight...),
	}, 0.05, 0.05))
	if rec.Strategy != "near-multiplexed" || rec.Confidence != verdict.Equivalent {
		t.Fatalf("verdict = %s (%s; %s); want near-multiplexed, the coherent target with the best score among the fewest connections", rec.Strategy, rec.Confidence, rec.TieBreak)
	}
	if !strings.Contains(rec.TieBreak, "near-none") || !strings.Contains(rec.TieBreak, "stale") {
		t.Errorf("TieBreak = %q; want it to say that near-none was passed over as stale", rec.TieBreak)
	}
	// Faster by more than the margin, it is named all the same: the rule
	// breaks ties only.
	none = cell("near-none", 10, 1, 130_000, tight...)
	none.Stale = true
	rec = only(t, verdict.Recommend([]verdict.Cell{none, cell("near-multiplexed", 10, 2, 100_000, tight...)}, 0.05, 0.05))
	if rec.Strategy != "near-none" || rec.Confidence != verdict.Significant {
		t.Errorf("verdict = %s (%s); want near-none, significant", rec.Strategy, rec.Confidence)
	}
}
