package benchmarks

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/redisx-go/kit/benchmarks/load"
)

// binomCDF is P(B ≤ k) for B ~ Binomial(n, p), summed term by term in
// big steps of logarithms: a second computation to check quantileRanks
// against (n small enough for a plain sum).
func binomCDF(n, k int64, p float64) float64 {
	sum := 0.0
	for j := int64(0); j <= min(k, n); j++ {
		lc, _ := math.Lgamma(float64(n + 1))
		a, _ := math.Lgamma(float64(j + 1))
		b, _ := math.Lgamma(float64(n - j + 1))
		sum += math.Exp(lc - a - b + float64(j)*math.Log(p) + float64(n-j)*math.Log1p(-p))
	}
	return sum
}

func TestQuantileRanksAreTheBinomialOnes(t *testing.T) {
	// The textbook case: the median of 10, at 95%, is bracketed by the
	// 2nd and 9th values (confidence 97.9%).
	if lo, hi := quantileRanks(10, 0.5, 0.05); lo != 2 || hi != 9 {
		t.Errorf("median of 10 at 95%%: ranks %d, %d; want 2, 9", lo, hi)
	}
	// Too few for a p99: 0.99^100 = 0.37, so even the largest of 100 is
	// under the p99 too often for a 95% upper end.
	if lo, hi := quantileRanks(100, 0.99, 0.05); hi != 101 || lo < 1 || lo > 100 {
		t.Errorf("p99 of 100: ranks %d, %d; want an unbounded upper end (101) and a lower one", lo, hi)
	}
	for _, tc := range []struct {
		n     int64
		q, al float64
	}{{1000, 0.99, 0.05}, {1000, 0.99, 0.0125}, {2000, 0.99, 0.0125}, {5000, 0.999, 0.0125}, {300, 0.5, 0.05}, {400, 0.9, 0.01}} {
		lo, hi := quantileRanks(tc.n, tc.q, tc.al)
		tail := tc.al / 2
		// P(X(hi) < x_q) = P(B ≥ hi) ≤ tail, and hi is the least such rank.
		if above := 1 - binomCDF(tc.n, hi-1, tc.q); above > tail+1e-12 {
			t.Errorf("n %d, q %v: upper rank %d: P(B ≥ %d) = %v; want ≤ %v", tc.n, tc.q, hi, hi, above, tail)
		}
		if above := 1 - binomCDF(tc.n, hi-2, tc.q); above <= tail {
			t.Errorf("n %d, q %v: upper rank %d is not the least: P(B ≥ %d) = %v", tc.n, tc.q, hi, hi-1, above)
		}
		// P(X(lo) > x_q) = P(B < lo) ≤ tail, and lo is the greatest such.
		if below := binomCDF(tc.n, lo-1, tc.q); below > tail+1e-12 {
			t.Errorf("n %d, q %v: lower rank %d: P(B < %d) = %v; want ≤ %v", tc.n, tc.q, lo, lo, below, tail)
		}
		if below := binomCDF(tc.n, lo, tc.q); below <= tail {
			t.Errorf("n %d, q %v: lower rank %d is not the greatest: P(B < %d) = %v", tc.n, tc.q, lo, lo+1, below)
		}
	}
	// Large counts take the sum from far below the mean: quick, and the
	// ranks around the mean.
	start := time.Now()
	lo, hi := quantileRanks(1_000_000, 0.5, 0.0125)
	if d := float64(hi-lo) / 2; d < 2*500 || d > 3.5*500 || lo > 500_000 || hi < 500_000 {
		t.Errorf("median of 1M: ranks %d, %d; want about 2.7 standard deviations (500) either side of 500,000", lo, hi)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("median of 1M took %v", d)
	}
}

// The interval covers the true quantile as often as it says: 400 samples
// of 2,000 uniform values, p99 at 95%.
func TestQuantileIntervalCoversTheQuantile(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	xs := make([]float64, 2000)
	lo, hi := quantileRanks(int64(len(xs)), 0.99, 0.05)
	over, under := 0, 0
	const trials = 400
	for range trials {
		for i := range xs {
			xs[i] = rng.Float64()
		}
		slices.Sort(xs)
		if xs[lo-1] > 0.99 {
			over++
		}
		if xs[hi-1] < 0.99 {
			under++
		}
	}
	// 2.5% each side, 10 of 400 expected at most: 20 is over 3 standard
	// deviations beyond.
	if over > 20 || under > 20 {
		t.Errorf("the interval [X(%d), X(%d)] missed the p99 above it %d times and below %d times in %d; want about 2.5%% each at most", lo, hi, over, under, trials)
	}
}

func TestPercentileIntervalFromAHistogram(t *testing.T) {
	h := load.NewHistogram()
	for i := range 1000 {
		load.Record(h, time.Duration(i+1)*time.Microsecond) // 1 µs to 1 ms
	}
	p, lo, hi := percentileCI(h, 99, 0.05)
	l, u := quantileRanks(1000, 0.99, 0.05)
	near := func(d time.Duration, rank int64) bool {
		v := float64(rank) * 1e3
		return math.Abs(float64(d)-v) <= 0.01*v
	}
	if !near(p, 990) || !near(lo, l) || !near(hi, u) || lo > p || hi < p {
		t.Errorf("p99 of 1..1000 µs: %v in [%v, %v]; want 990 µs in [%d µs, %d µs]", p, lo, hi, l, u)
	}
	if _, lo, hi := percentileCI(histOf(50, time.Millisecond), 99, 0.05); hi != unbounded || lo < 990*time.Microsecond || lo > time.Millisecond {
		t.Errorf("p99 of 50 latencies: interval [%v, %v]; want unbounded above", lo, hi)
	}
	if p, lo, hi := percentileCI(histOf(50, time.Millisecond), 100, 0.05); p != lo || p != hi {
		t.Errorf("p100: %v in [%v, %v]; want the maximum, the interval that point", p, lo, hi)
	}
}

// opsProbe returns the next of a probe at rate: each look holds d×rate
// operations whose latencies lat gives by their index over the probe,
// and records the durations asked for.
func opsProbe(rate float64, lat func(k int) time.Duration, looks *[]time.Duration) func(time.Duration) (sample, *hdr.Histogram) {
	k := 0
	return func(d time.Duration) (sample, *hdr.Histogram) {
		*looks = append(*looks, d)
		h := load.NewHistogram()
		n := int(math.Round(d.Seconds() * rate))
		for range n {
			load.Record(h, lat(k))
			k++
		}
		return sample{Outcome: load.Outcome{Ops: int64(n)}}, h
	}
}

// burstOps returns the latencies of a target whose p99 is 0.5 ms: every
// operation takes 0.5 ms, except three in a row, ops from..from+2, held
// 5 ms by one scheduling hiccup.
func burstOps(from int) func(k int) time.Duration {
	return func(k int) time.Duration {
		if k >= from && k < from+3 {
			return 5 * time.Millisecond
		}
		return 500 * time.Microsecond
	}
}

// slowShare returns the latencies of a target whose ops take 0.5 ms but
// one in every `every`, 5 ms.
func slowShare(every int) func(k int) time.Duration {
	return func(k int) time.Duration {
		if k%every == every-1 {
			return 5 * time.Millisecond
		}
		return 500 * time.Microsecond
	}
}

func TestSLOProbeHoldsDespiteOneHiccup(t *testing.T) {
	// At 2,000/s, 3 slow operations in a row out of the first 600 (in
	// samples of 100 ms, 3 of 200: their p99) fail a sample; pooled, they
	// are 0.15% of 2,000 and the p99 is 0.5 ms.
	slo := SLO{Percentile: 99, Bound: 2 * time.Millisecond}
	var looks []time.Duration
	r := probeQuantile(slo, 2000, 100*time.Millisecond, opsProbe(2000, burstOps(500), &looks))
	if !r.ok || r.outcome != probeHolds || r.ops < 1000 || r.hi > slo.Bound || r.pct < 500*time.Microsecond || r.pct > 505*time.Microsecond {
		t.Errorf("one hiccup of 3 operations: %+v; want the probe to hold, on at least 1,000 operations, p99 0.5 ms", r)
	}
	// The first look asks for 1,000 operations (a p99): 0.5 s at 2,000/s.
	if looks[0] != 500*time.Millisecond || len(looks) != r.samples {
		t.Errorf("looks of %v; want the first of 500ms (1,000 operations), one per sample", looks)
	}
}

func TestSLOProbeFailsOnAPercentileOverTheBound(t *testing.T) {
	slo := SLO{Percentile: 99, Bound: 2 * time.Millisecond}
	var looks []time.Duration
	r := probeQuantile(slo, 2000, 100*time.Millisecond, opsProbe(2000, slowShare(50), &looks)) // 2% at 5 ms
	if r.ok || r.outcome != probeFails || r.samples != 1 || r.lo <= slo.Bound || !strings.Contains(r.why, "over the bound") {
		t.Errorf("2%% of operations at 5 ms: %+v; want a failure at the first look, the interval above the bound", r)
	}
}

func TestSLOProbeUndecidedAtItsBudgetDoesNotHold(t *testing.T) {
	// 1% of the operations at 5 ms: the p99 sits on the edge of the
	// slow ones, and its interval contains the bound however many.
	slo := SLO{Percentile: 99, Bound: 2 * time.Millisecond}
	var looks []time.Duration
	r := probeQuantile(slo, 2000, 100*time.Millisecond, opsProbe(2000, slowShare(100), &looks))
	if r.ok || r.outcome != probeUndecided || r.samples != sloLooks || r.ops != 8000 || !strings.Contains(r.why, "undecided") {
		t.Errorf("1%% of operations at 5 ms: %+v; want undecided after %d looks and 8,000 operations, not held", r, sloLooks)
	}
	// Each look doubles the operations pooled: 1,000, 1,000, 2,000, 4,000.
	if want := []time.Duration{500 * time.Millisecond, 500 * time.Millisecond, time.Second, 2 * time.Second}; !slices.Equal(looks, want) {
		t.Errorf("looks of %v; want %v", looks, want)
	}
}

func TestSLOProbeLooksLastAtLeastASample(t *testing.T) {
	// At 100,000/s, 1,000 operations take 10 ms: a look lasts the
	// sample's duration anyway, so that a probe spans more than a blip.
	slo := SLO{Percentile: 99, Bound: 2 * time.Millisecond}
	var looks []time.Duration
	r := probeQuantile(slo, 100_000, 100*time.Millisecond, opsProbe(100_000, slowShare(1000), &looks))
	if !r.ok || looks[0] != 100*time.Millisecond || r.ops != 10_000 {
		t.Errorf("at 100,000/s: %+v after looks of %v; want a hold on 10,000 operations in one look of 100ms", r, looks)
	}
}

func TestSLOProbeFailsAtOnceOnErrorsOrUnsentRequests(t *testing.T) {
	slo := SLO{Percentile: 99, Bound: 2 * time.Millisecond}
	for _, l := range []load.Outcome{{Ops: 1000, Errs: 1}, {Ops: 1000, Behind: 3}} {
		n := 0
		r := probeQuantile(slo, 2000, 100*time.Millisecond, func(time.Duration) (sample, *hdr.Histogram) {
			n++
			return sample{Outcome: l}, histOf(1000, time.Microsecond)
		})
		if r.ok || r.outcome != probeFails || n != 1 {
			t.Errorf("a look with %+v: %+v after %d looks; want a failure at once", l, r, n)
		}
	}
}

// The probe's decisions err at most sloAlpha/2 each way over all its
// looks: exponential latencies with the p99 10% over the bound hold
// rarely, with the p99 10% within it fail rarely (and are otherwise
// held or undecided).
func TestSLOProbeErrsRarely(t *testing.T) {
	slo := SLO{Percentile: 99, Bound: 2 * time.Millisecond}
	rng := rand.New(rand.NewPCG(5, 6))
	const trials = 200
	for _, tc := range []struct {
		p99   float64 // the true p99 over the bound
		wrong string
	}{{1.1, probeHolds}, {0.9, probeFails}} {
		scale := tc.p99 * float64(slo.Bound) / math.Log(100) // P(X > scale·ln 100) = 1%
		lat := func(int) time.Duration { return time.Duration(rng.ExpFloat64() * scale) }
		wrong := 0
		outcomes := map[string]int{}
		for range trials {
			var looks []time.Duration
			r := probeQuantile(slo, 10_000, 100*time.Millisecond, opsProbe(10_000, lat, &looks))
			outcomes[r.outcome]++
			if r.outcome == tc.wrong {
				wrong++
			}
		}
		t.Logf("p99 at %.1fx the bound: %v", tc.p99, outcomes)
		// sloAlpha/2 = 2.5%: 5 of 200 expected at most; 12 is over 3
		// standard deviations beyond.
		if wrong > 12 {
			t.Errorf("p99 at %.1fx the bound: the probe said %s %d times in %d (%v); want 2.5%% at most", tc.p99, tc.wrong, wrong, trials, outcomes)
		}
	}
}
