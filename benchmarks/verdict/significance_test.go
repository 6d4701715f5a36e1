package verdict_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/redisx-go/kit/benchmarks/verdict"
)

// draw returns n throughput samples around median: log-normal noise of
// relative spread sigma, as a shared machine gives.
func draw(rng *rand.Rand, n int, median, sigma float64) []float64 {
	xs := make([]float64, n)
	for i := range xs {
		xs[i] = median * math.Exp(sigma*rng.NormFloat64())
	}
	return xs
}

// synthCell is a cell of workload w whose samples are xs.
func synthCell(w, target string, level, conns int, xs []float64) verdict.Cell {
	return verdict.Cell{
		Workload: w, Target: target, Concurrency: level, Conns: conns, MaxConns: conns,
		QPS: verdict.Median(xs), QPSSamples: xs, Samples: len(xs),
	}
}

func TestMinRepeatsIsTheRankTestsOwn(t *testing.T) {
	// Mann-Whitney's smallest two-sided p-value for n against n is
	// 2/C(2n, n): 0.1 for 3, 0.029 for 4.
	if got := verdict.MinRepeats(0.05); got != 4 {
		t.Errorf("MinRepeats(0.05) = %d; want 4", got)
	}
	if got := verdict.MinRepeats(0.01); got != 5 {
		t.Errorf("MinRepeats(0.01) = %d; want 5 (2/C(10,5) = 0.0079)", got)
	}
	// With 3 samples a side nothing is ever significant, however far
	// apart; with 4 it can be.
	for n, want := range map[int]string{3: verdict.Undecided, 4: verdict.Significant} {
		fast, slow := make([]float64, n), make([]float64, n)
		for i := range n {
			fast[i], slow[i] = 200_000+float64(i), 100_000+float64(i)
		}
		rec := only(t, verdict.Recommend([]verdict.Cell{
			synthCell("get", "a", 10, 1, fast), synthCell("get", "b", 10, 1, slow),
		}, 0.05, 0.05))
		if rec.Confidence != want {
			t.Errorf("%d samples a side, 2x apart: %s (p = %v); want %s", n, rec.Confidence, rec.PValue, want)
		}
	}
}

func TestRatioIntervalIsTheInvertedRankTest(t *testing.T) {
	// 6 against 6: P(U ≤ 5) = 19/924 ≤ 0.025 < P(U ≤ 6) = 26/924, so
	// the interval runs from the 6th smallest to the 6th largest of the
	// 36 pairwise ratios.
	a := []float64{10, 11, 12, 13, 14, 15}
	b := []float64{10, 10, 10, 10, 10, 10}
	lo, hi := verdict.RatioInterval(a, b, 0.05)
	if math.Abs(lo-1.0) > 1e-12 || math.Abs(hi-1.5) > 1e-12 {
		t.Errorf("interval of %v over %v = [%v, %v]; want [1, 1.5]", a, b, lo, hi)
	}
	b2 := []float64{20, 20, 20, 20, 20, 20}
	lo, hi = verdict.RatioInterval(a, b2, 0.05)
	if math.Abs(lo-0.5) > 1e-12 || math.Abs(hi-0.75) > 1e-12 {
		t.Errorf("interval of %v over %v = [%v, %v]; want [0.5, 0.75]", a, b2, lo, hi)
	}
	// Too few samples for a 95% interval: the range of the ratios.
	lo, hi = verdict.RatioInterval([]float64{2, 3}, []float64{1, 2}, 0.05)
	if math.Abs(lo-1) > 1e-12 || math.Abs(hi-3) > 1e-12 {
		t.Errorf("interval of 2 against 2 samples = [%v, %v]; want the range [1, 3]", lo, hi)
	}
	if lo, hi := verdict.RatioInterval(nil, b, 0.05); lo != 0 || !math.IsInf(hi, 1) {
		t.Errorf("interval with an empty side = [%v, %v]; want [0, +Inf]", lo, hi)
	}
}

func TestRatioIntervalCoversTheTrueRatio(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for _, n := range []int{6, 10, 60} { // 60: the normal approximation
		covered, trials := 0, 60_000/n
		for range trials {
			lo, hi := verdict.RatioInterval(draw(rng, n, 130_000, 0.1), draw(rng, n, 100_000, 0.1), 0.05)
			if lo <= 1.3 && 1.3 <= hi {
				covered++
			}
		}
		if share := float64(covered) / float64(trials); share < 0.93 {
			t.Errorf("%d samples: the 95%% interval covered the true ratio in %.1f%% of %d trials; want about 95%%", n, 100*share, trials)
		}
	}
}

func TestAdjustBH(t *testing.T) {
	got := verdict.AdjustBH([]float64{0.04, 0.01, 0.03, 0.5})
	// Sorted 0.01, 0.03, 0.04, 0.5: ×4/1, ×4/2, ×4/3, ×4/4, then the
	// running minimum from the largest down.
	want := []float64{0.04 * 4 / 3, 0.04, 0.04 * 4 / 3, 0.5}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-12 {
			t.Fatalf("AdjustBH = %v; want %v", got, want)
		}
	}
}

// TestVerdictIdenticalTargetsAreRarelySignificant is bar H1 on synthetic
// samples: targets drawn from one distribution are declared different in
// at most 5% of verdicts, and never cross.
func TestVerdictIdenticalTargetsAreRarelySignificant(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 16))
	levels := []int{1, 10, 50, 100, 500, 1000}
	verdicts, significant, crossovers := 0, 0, 0
	for trial := range 400 {
		sigma := []float64{0.02, 0.1, 0.3}[trial%3]
		targets := 2 + trial%3
		var cells []verdict.Cell
		for _, l := range levels {
			for i := range targets {
				cells = append(cells, synthCell("get", fmt.Sprintf("t%d", i), l, 1+i, draw(rng, 6, 100_000, sigma)))
			}
		}
		recs := verdict.Recommend(cells, 0.05, 0.05)
		for _, r := range recs {
			verdicts++
			if r.Confidence == verdict.Significant {
				significant++
			}
		}
		crossovers += len(verdict.FindCrossovers(recs))
	}
	t.Logf("identical targets: %d of %d verdicts significant, %d crossovers", significant, verdicts, crossovers)
	if float64(significant) > 0.05*float64(verdicts) {
		t.Errorf("identical targets: %d of %d verdicts significant; want at most 5%%", significant, verdicts)
	}
	if crossovers > 0 {
		t.Errorf("identical targets crossed %d times; want never", crossovers)
	}
}

func TestVerdictTwiceAsSlowIsSignificant(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 16))
	for trial := range 300 {
		sigma := []float64{0.02, 0.1, 0.2}[trial%3]
		rec := only(t, verdict.Recommend([]verdict.Cell{
			synthCell("get", "slow", 10, 1, draw(rng, 6, 50_000, sigma)),
			synthCell("get", "fast", 10, 4, draw(rng, 6, 100_000, sigma)),
		}, 0.05, 0.05))
		if rec.Strategy != "fast" || rec.Confidence != verdict.Significant {
			t.Fatalf("trial %d (spread %v): %s (%s, margin %v [%v, %v], p %v); want fast, significant",
				trial, sigma, rec.Strategy, rec.Confidence, rec.Margin, rec.MarginLo, rec.MarginHi, rec.PValue)
		}
	}
}

func TestVerdictWinNeedsTheIntervalToClearTheMargin(t *testing.T) {
	// The medians are 17% apart and the rank test is sure (p = 0.0043),
	// but one sample of the runner-up is as fast as the leader's slowest:
	// the interval of the ratio reaches below 5% (to 3.8%).
	lead := synthCell("get", "lead", 10, 1, []float64{118_000, 119_000, 120_000, 121_000, 122_000, 123_000})
	next := synthCell("get", "next", 10, 1, []float64{100_000, 101_000, 102_000, 103_000, 104_000, 118_500})
	rec := only(t, verdict.Recommend([]verdict.Cell{lead, next}, 0.05, 0.05))
	if rec.Confidence != verdict.Undecided || rec.Strategy != "" || rec.PValue >= 0.05 || rec.MarginLo >= 0.05 {
		t.Fatalf("verdict %s %q, p %v, margin %v [%v, %v]; want undecided with p < 0.05 and the interval under 5%%",
			rec.Confidence, rec.Strategy, rec.PValue, rec.Margin, rec.MarginLo, rec.MarginHi)
	}
	if !rec.Underpowered {
		t.Errorf("undecided with interval [%v, %v] not marked underpowered", rec.MarginLo, rec.MarginHi)
	}
	// Tight samples 20% apart: a win, its interval clearing 5%.
	rec = only(t, verdict.Recommend([]verdict.Cell{
		cell("lead", 10, 4, 120_000, tight...), cell("next", 10, 1, 100_000, tight...),
	}, 0.05, 0.05))
	if rec.Confidence != verdict.Significant || rec.MarginLo < 0.05 || rec.MarginHi < rec.Margin || rec.Underpowered {
		t.Errorf("tight samples 20%% apart: %s, margin %v [%v, %v], underpowered %v; want significant, interval over 5%%",
			rec.Confidence, rec.Margin, rec.MarginLo, rec.MarginHi, rec.Underpowered)
	}
	// Equal tight samples: equivalent, the one of fewer connections named.
	rec = only(t, verdict.Recommend([]verdict.Cell{
		cell("a", 10, 4, 100_000, tight...), cell("b", 10, 1, 100_000, tight...),
	}, 0.05, 0.05))
	if rec.Confidence != verdict.Equivalent || rec.Strategy != "b" || rec.Underpowered {
		t.Errorf("equal tight samples: %s %s, underpowered %v, interval [%v, %v]; want b, equivalent",
			rec.Strategy, rec.Confidence, rec.Underpowered, rec.MarginLo, rec.MarginHi)
	}
}

// TestBaselineIdenticalRunsShowNoChange is bar H1's baseline half on
// synthetic samples: two runs drawn from one distribution never show a
// significant change in more than 5% of trials.
func TestBaselineIdenticalRunsShowNoChange(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 16))
	run := func(sigma float64) *verdict.Report {
		r := &verdict.Report{}
		for _, w := range []string{"get", "setget", "values"} {
			for _, target := range []string{"multiplexed-1", "pool-8", "pool-32"} {
				for _, l := range []int{1, 10, 100, 1000} {
					r.Cells = append(r.Cells, synthCell(w, target, l, 1, draw(rng, 6, 100_000, sigma)))
				}
			}
		}
		return r
	}
	flagged, trials := 0, 300
	for trial := range trials {
		sigma := []float64{0.02, 0.1, 0.3}[trial%3]
		bc := verdict.CompareBaseline(run(sigma), run(sigma), 0.05, 0.05)
		if len(bc.Cells) != 36 {
			t.Fatalf("compared %d cells; want 36", len(bc.Cells))
		}
		if slices.ContainsFunc(bc.Cells, func(d verdict.Delta) bool { return d.Significant }) {
			flagged++
		}
	}
	t.Logf("identical runs: %d of %d trials flagged a cell", flagged, trials)
	if float64(flagged) > 0.05*float64(trials) {
		t.Errorf("identical runs: %d of %d trials flagged a significant change; want at most 5%%", flagged, trials)
	}
}

// TestBaselineSeesAChangeOfEveryCell is why Benjamini–Hochberg and not
// Holm: with 6 samples a side the smallest p-value is 0.0022, over Holm's
// first threshold 0.05/36, yet a change that moves every cell must show.
func TestBaselineSeesAChangeOfEveryCell(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 16))
	base, cur := &verdict.Report{}, &verdict.Report{}
	for i := range 36 {
		target := fmt.Sprintf("t%d", i)
		base.Cells = append(base.Cells, synthCell("get", target, 10, 1, draw(rng, 6, 100_000, 0.03)))
		cur.Cells = append(cur.Cells, synthCell("get", target, 10, 1, draw(rng, 6, 80_000, 0.03)))
	}
	bc := verdict.CompareBaseline(base, cur, 0.05, 0.05)
	n := 0
	for _, d := range bc.Cells {
		if d.Significant {
			n++
			if d.ChangeHi > -0.0476 || d.PAdjusted >= 0.05 {
				t.Errorf("%s flagged with change %v [%v, %v], adjusted p %v", d.Target, d.Change, d.ChangeLo, d.ChangeHi, d.PAdjusted)
			}
		}
	}
	if n < 30 {
		t.Errorf("a 20%% slowdown of every cell: %d of 36 cells significant; want nearly all", n)
	}
}
