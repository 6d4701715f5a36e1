package benchmarks_test

import (
	"strings"
	"testing"

	"github.com/redisx-go/kit/benchmarks"
)

// cell is a synthetic cell of workload "get" whose QPS samples are base
// plus the offsets (in QPS); QPS is their median, as Run computes it.
func cell(target string, level, conns int, base float64, offsets ...float64) benchmarks.Cell {
	xs := make([]float64, len(offsets))
	for i, o := range offsets {
		xs[i] = base + o
	}
	return benchmarks.Cell{
		Workload: "get", Target: target, Concurrency: level, Conns: conns,
		QPS: benchmarks.Median(xs), QPSSamples: xs, Samples: len(xs),
	}
}

// six spreads of samples: tight (±0.5%) and noisy (±20%) around 0.
var (
	tight = []float64{-500, -300, -100, 100, 300, 500}
	noisy = []float64{-20000, 15000, -8000, 4000, -1000, 19000}
)

func only(t *testing.T, recs []benchmarks.Recommendation) benchmarks.Recommendation {
	t.Helper()
	if len(recs) != 1 {
		t.Fatalf("Recommend returned %d verdicts, want 1: %+v", len(recs), recs)
	}
	return recs[0]
}

func TestVerdictClearWinIsSignificant(t *testing.T) {
	rec := only(t, benchmarks.Recommend([]benchmarks.Cell{
		cell("pool-32", 10, 32, 100_000, tight...),
		cell("multiplexed-1", 10, 1, 130_000, tight...),
		cell("pool-8", 10, 8, 90_000, tight...),
	}, 0.05, 0.05))
	if rec.Strategy != "multiplexed-1" || rec.Confidence != benchmarks.Significant || rec.RunnerUp != "pool-32" {
		t.Fatalf("verdict = %s (%s) over %s; want multiplexed-1 (significant) over pool-32", rec.Strategy, rec.Confidence, rec.RunnerUp)
	}
	if rec.PValue >= 0.05 || rec.Margin < 0.29 || rec.Margin > 0.31 {
		t.Errorf("p = %v, margin = %v; want p < 0.05, margin 0.30", rec.PValue, rec.Margin)
	}
	if rec.TieBreak != "" {
		t.Errorf("TieBreak = %q on a significant win", rec.TieBreak)
	}
}

func TestVerdictNoiseIsATie(t *testing.T) {
	// pool-32's median is higher, but the samples overlap: no rank test
	// can tell them apart.
	rec := only(t, benchmarks.Recommend([]benchmarks.Cell{
		cell("pool-32", 10, 32, 104_000, noisy...),
		cell("multiplexed-1", 10, 1, 100_000, noisy...),
	}, 0.05, 0.05))
	if rec.Confidence != benchmarks.Tie {
		t.Fatalf("confidence = %s (p = %v); want tie", rec.Confidence, rec.PValue)
	}
	if rec.PValue < 0.05 {
		t.Errorf("p = %v; the samples are the same noise, want p >= 0.05", rec.PValue)
	}
}

func TestVerdictSmallSignificantWinIsATie(t *testing.T) {
	// 3% apart with tight samples: significant, but under the 5% margin.
	rec := only(t, benchmarks.Recommend([]benchmarks.Cell{
		cell("multiplexed-1", 10, 1, 100_000, tight...),
		cell("pool-32", 10, 32, 103_000, tight...),
	}, 0.05, 0.05))
	if rec.Confidence != benchmarks.Tie {
		t.Fatalf("confidence = %s; a 3%% win must be a tie", rec.Confidence)
	}
	if rec.PValue >= 0.05 {
		t.Errorf("p = %v; want < 0.05 (significant, yet a tie by margin)", rec.PValue)
	}
	if !strings.Contains(rec.TieBreak, "margin") {
		t.Errorf("TieBreak = %q; want it to say the margin was too small", rec.TieBreak)
	}
	// And with a 2% margin the same samples make a significant win.
	rec = only(t, benchmarks.Recommend([]benchmarks.Cell{
		cell("multiplexed-1", 10, 1, 100_000, tight...),
		cell("pool-32", 10, 32, 103_000, tight...),
	}, 0.05, 0.02))
	if rec.Strategy != "pool-32" || rec.Confidence != benchmarks.Significant {
		t.Errorf("with a 2%% margin: %s (%s); want pool-32 (significant)", rec.Strategy, rec.Confidence)
	}
}

func TestVerdictTieBreakPicksFewerConnections(t *testing.T) {
	rec := only(t, benchmarks.Recommend([]benchmarks.Cell{
		cell("pool-100", 100, 100, 102_000, noisy...),
		cell("multiplexed-1", 100, 1, 100_000, noisy...),
		cell("pool-8", 100, 8, 99_000, noisy...),
		cell("pool-32", 100, 32, 60_000, tight...), // clearly slower: not in the tie
	}, 0.05, 0.05))
	if rec.Strategy != "multiplexed-1" || rec.Confidence != benchmarks.Tie {
		t.Fatalf("verdict = %s (%s); want multiplexed-1 by tie-break", rec.Strategy, rec.Confidence)
	}
	if rec.RunnerUp != "pool-100" || rec.Margin >= 0 {
		t.Errorf("runner-up %s, margin %v; want the leader pool-100 and a negative margin", rec.RunnerUp, rec.Margin)
	}
	if !strings.Contains(rec.TieBreak, "fewest connections") || strings.Contains(rec.TieBreak, "pool-32") {
		t.Errorf("TieBreak = %q; want the tied set without pool-32, and the rule", rec.TieBreak)
	}
}

func TestVerdictTieBreakEqualConnectionsPrefersLowerBound(t *testing.T) {
	// At one goroutine a pool opens one connection, like a multiplexer.
	a := cell("pool-100", 1, 1, 41_000, noisy...)
	a.MaxConns = 100
	b := cell("multiplexed-1", 1, 1, 40_000, noisy...)
	b.MaxConns = 1
	rec := only(t, benchmarks.Recommend([]benchmarks.Cell{a, b}, 0.05, 0.05))
	if rec.Strategy != "multiplexed-1" {
		t.Fatalf("verdict = %s; want multiplexed-1 (same connections seen, lower bound)", rec.Strategy)
	}
}

func TestVerdictNeverRecommendsAPeerOrAFailedCell(t *testing.T) {
	peer := cell("rueidis", 100, 2, 300_000, tight...)
	peer.Peer = true
	broken := cell("pool-32", 100, 32, 500_000, tight...)
	broken.Failed, broken.Errors = true, 3
	rec := only(t, benchmarks.Recommend([]benchmarks.Cell{
		peer, broken,
		cell("multiplexed-1", 100, 1, 200_000, tight...),
		cell("pool-8", 100, 8, 100_000, tight...),
	}, 0.05, 0.05))
	if rec.Strategy != "multiplexed-1" || rec.RunnerUp != "pool-8" || rec.Confidence != benchmarks.Significant {
		t.Fatalf("verdict = %s (%s) over %s; want multiplexed-1 (significant) over pool-8", rec.Strategy, rec.Confidence, rec.RunnerUp)
	}
	if rec.Peer != "rueidis" || rec.PeerRatio < 0.66 || rec.PeerRatio > 0.67 {
		t.Errorf("peer %s ratio %v; want rueidis 0.67", rec.Peer, rec.PeerRatio)
	}
}

func TestCrossoverBracketsTheLevelsWhereTheLeaderChanges(t *testing.T) {
	var cells []benchmarks.Cell
	for _, l := range []int{1, 4, 10, 100} {
		mux, pool := 100_000.0, 60_000.0
		if l >= 10 {
			mux, pool = 60_000, 100_000
		}
		cells = append(cells, cell("multiplexed-1", l, 1, mux, tight...), cell("pool-32", l, 32, pool, tight...))
	}
	recs := benchmarks.Recommend(cells, 0.05, 0.05)
	xs := benchmarks.FindCrossovers(recs)
	if len(xs) != 1 {
		t.Fatalf("crossovers = %+v; want one", xs)
	}
	x := xs[0]
	if x.From != "multiplexed-1" || x.To != "pool-32" || x.Below != 4 || x.Above != 10 || x.Confidence != benchmarks.Significant {
		t.Errorf("crossover = %+v; want multiplexed-1 → pool-32 between 4 and 10, significant", x)
	}
	if want := "pool-32 overtakes multiplexed-1 between 4 and 10 goroutines"; x.Text != want {
		t.Errorf("text = %q; want %q", x.Text, want)
	}
}

func TestCrossoverNeedsSignificantVerdictsOnBothSides(t *testing.T) {
	recs := []benchmarks.Recommendation{
		{Workload: "get", Concurrency: 1, Strategy: "pool-8", Confidence: benchmarks.Tie},
		{Workload: "get", Concurrency: 10, Strategy: "multiplexed-1", Confidence: benchmarks.Significant},
		{Workload: "get", Concurrency: 50, Strategy: "pool-8", Confidence: benchmarks.Tie},
		{Workload: "get", Concurrency: 100, Strategy: "pool-8", Confidence: benchmarks.Significant},
		{Workload: "get", Concurrency: 500, Strategy: "multiplexed-1", Confidence: benchmarks.Tie},
		// Ties alone never cross, whatever their tie-breaks named.
		{Workload: "setget", Concurrency: 1, Strategy: "multiplexed-1", Confidence: benchmarks.Tie},
		{Workload: "setget", Concurrency: 10, Strategy: "multiplexed-2", Confidence: benchmarks.Tie},
		{Workload: "setget", Concurrency: 50, Strategy: "multiplexed-1", Confidence: benchmarks.Tie},
	}
	xs := benchmarks.FindCrossovers(recs)
	if len(xs) != 1 {
		t.Fatalf("crossovers = %+v; want one, between the significant verdicts at 10 and 100", xs)
	}
	x := xs[0]
	if x.From != "multiplexed-1" || x.To != "pool-8" || x.Between != [2]int{10, 100} || x.Below != 10 || x.Above != 100 ||
		x.Confidence != benchmarks.Significant {
		t.Errorf("crossover = %+v; want multiplexed-1 → pool-8 between [10, 100], significant", x)
	}
	if want := "pool-8 overtakes multiplexed-1 between 10 and 100 goroutines (ties at 50)"; x.Text != want {
		t.Errorf("text = %q; want %q", x.Text, want)
	}
}
