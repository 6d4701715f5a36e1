package benchmarks

import (
	"fmt"
	"math"
	"strconv"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/redisx-go/kit/benchmarks/load"
	"github.com/redisx-go/kit/benchmarks/verdict"
)

// A probe of the SLO search decides whether a rate holds the SLO on the
// pooled latencies of its operations, with a distribution-free
// confidence interval for the percentile: the order statistics whose
// ranks come from Binomial(n, p) (see quantileRanks). It holds when the
// interval's upper end is within the bound, fails when its lower end is
// over it, and otherwise runs more operations, in looks that double the
// operations pooled, at most sloLooks of them; still undecided then, it
// does not hold.
//
// Pooled, not sample by sample: a short sample holds few operations — 300
// at 1,000/s for 300 ms — and its p99 is its third-worst one, which a
// single hiccup of the machine breaks, so that a low rate failed where a
// higher one, with more operations a sample, passed. The percentile of
// the pooled operations is the one a run of -rate reports.
const (
	// sloAlpha bounds the probability that a probe decides wrongly over
	// all its looks: that it holds while the percentile is over the
	// bound, or fails while it is within, sloAlpha/2 each. Each look
	// decides on an interval of level 1 − sloAlpha/sloLooks (Bonferroni
	// over a fixed number of looks).
	sloAlpha = 0.05
	// sloLooks is the most looks of a probe: the first of
	// sloFirstOps operations, each next one doubling those pooled.
	sloLooks = 4
	// sloLongestFirstLook bounds the time of a probe's first look: it
	// sets the lowest rate the search probes, sloFloor.
	sloLongestFirstLook = 2 * time.Second
)

// sloFirstOps is the operations of a probe's first look for the
// percentile pct: 10 expected above the percentile (1,000 for p99, 10,000
// for p99.9), at least 100 (p50, p90), at most a million; 1,000 for p100,
// the maximum.
func sloFirstOps(pct float64) int64 {
	if pct >= 100 {
		return 1000
	}
	return int64(min(max(100, math.Ceil(10/(1-pct/100))), 1e6))
}

// sloFloor is the lowest rate the SLO search probes for the percentile
// pct: the rate at which a first look lasts sloLongestFirstLook.
func sloFloor(pct float64) float64 {
	return float64(sloFirstOps(pct)) / sloLongestFirstLook.Seconds()
}

// quantileRanks returns the 1-based ranks of the order statistics
// X(lo) ≤ X(hi) of n independent observations that bound the q-quantile
// (0 < q < 1) of their distribution with probability at least 1 − alpha,
// at most alpha/2 on each side: P(X(lo) > x_q) ≤ alpha/2 and
// P(X(hi) < x_q) ≤ alpha/2. The number of observations below x_q is
// Binomial(n, q), so X(hi) < x_q when at least hi of them are; hi is the
// least rank for which that probability is at most alpha/2, lo the
// greatest for which P(fewer than lo below x_q) is. No distribution is
// assumed. lo = 0 means the interval is unbounded below, hi = n+1
// unbounded above: too few observations for the level.
func quantileRanks(n int64, q, alpha float64) (lo, hi int64) {
	if n <= 0 {
		return 0, 1
	}
	tail := alpha / 2
	// The number of observations above x_q, E = n − B, is Binomial(n,
	// c): its lower tail is summed from 0, each probability computed from
	// logarithms (c^n underflows for large n).
	c := 1 - q
	lgamma := func(x float64) float64 { v, _ := math.Lgamma(x); return v }
	logC, log1C, lgN := math.Log(c), math.Log1p(-c), lgamma(float64(n)+1)
	// Below 40 standard deviations under the mean the probabilities sum
	// to less than e^-800 (Chernoff): the sum starts there.
	mean := float64(n) * c
	k0 := int64(max(0, math.Floor(mean-40*math.Sqrt(mean*(1-c)))))
	cdf := 0.0
	m := k0 - 1 // the largest k with P(E ≤ k) ≤ tail
	for k := k0; k <= n; k++ {
		kf := float64(k)
		cdf += math.Exp(lgN - lgamma(kf+1) - lgamma(float64(n-k)+1) + kf*logC + float64(n-k)*log1C)
		if cdf <= tail {
			m = k
		}
		if cdf >= 1-tail {
			lo = n - k // P(E > k) ≤ tail: P(B < n−k) ≤ tail
			break
		}
	}
	return max(lo, 0), n - m // m = −1: hi = n+1
}

// valueAtRank returns the r-th smallest value of h (1 ≤ r ≤ its count)
// as the range of values h cannot tell apart from it: low is its
// bucket's lowest value, high its highest.
func valueAtRank(h *hdr.Histogram, r int64) (low, high int64) {
	var seen int64
	for _, b := range h.Distribution() {
		if seen += b.Count; seen >= r {
			return b.From, b.To
		}
	}
	return h.Max(), h.Max() // r over the count: not reached by callers
}

// unbounded is the upper end of an interval that has none.
const unbounded = time.Duration(math.MaxInt64)

// percentileCI returns the pct percentile of the latencies in h, and a
// confidence interval for it at level 1 − alpha (see quantileRanks), each
// end taken on the side of its bucket away from the percentile: lo is 0
// and hi unbounded when h holds too few latencies to bound them. For
// p100, the maximum, no interval bounds it from the sample: lo and hi are
// the largest latency measured.
func percentileCI(h *hdr.Histogram, pct, alpha float64) (p, lo, hi time.Duration) {
	n := h.TotalCount()
	if n == 0 {
		return 0, 0, unbounded
	}
	p = time.Duration(h.ValueAtQuantile(pct))
	if pct >= 100 {
		return p, p, p
	}
	l, u := quantileRanks(n, pct/100, alpha)
	if l >= 1 {
		v, _ := valueAtRank(h, l)
		lo = time.Duration(v)
	}
	hi = unbounded
	if u <= n {
		_, v := valueAtRank(h, u)
		hi = time.Duration(v)
	}
	return p, lo, hi
}

// Outcomes of a probe.
const (
	probeHolds     = "holds"
	probeFails     = "fails"
	probeUndecided = "undecided"
)

// probeResult is the outcome of one probe at one rate.
type probeResult struct {
	ok      bool
	outcome string // probeHolds, probeFails or probeUndecided
	samples int    // looks run
	ops     int64  // latencies pooled
	// pct is the SLO's percentile of the pooled latencies, [lo, hi] its
	// confidence interval (hi is unbounded for too few operations).
	pct, lo, hi time.Duration
	worst       time.Duration // the highest of the looks' own percentiles
	lateness    time.Duration // p99 of the client's send lateness over the looks
	why         string        // why it did not hold
}

// probeQuantile decides whether rate holds slo, one look after another:
// next runs an open loop at rate for d and returns its sample and
// latencies. The first look asks for sloFirstOps operations, each next
// one for as many as were pooled; a look lasts at least span. A look
// with an error, or with requests left unsent (the rate was not
// sustained), fails the probe.
func probeQuantile(slo SLO, rate float64, span time.Duration, next func(d time.Duration) (sample, *hdr.Histogram)) (res probeResult) {
	pooled, late := load.NewHistogram(), load.NewHistogram()
	defer func() { res.lateness = time.Duration(late.ValueAtQuantile(99)) }()
	want := sloFirstOps(slo.Percentile)
	alpha := sloAlpha / sloLooks
	for look := 1; ; look++ {
		d := max(span, time.Duration(float64(want-pooled.TotalCount())/rate*float64(time.Second)))
		s, h := next(d)
		pooled.Merge(h)
		if s.late != nil {
			late.Merge(s.late)
		}
		res.samples++
		res.ops = pooled.TotalCount()
		res.worst = max(res.worst, time.Duration(h.ValueAtQuantile(slo.Percentile)))
		res.pct, res.lo, res.hi = percentileCI(pooled, slo.Percentile, alpha)
		name := "p" + strconv.FormatFloat(slo.Percentile, 'f', -1, 64)
		switch {
		case s.Errs > 0:
			res.outcome, res.why = probeFails, fmt.Sprintf("%d errors, the first: %v", s.Errs, s.First)
		case s.Behind > 0:
			res.outcome, res.why = probeFails, fmt.Sprintf("%d requests still unsent after the drain: the rate was not sustained", s.Behind)
		case res.hi <= slo.Bound:
			res.ok, res.outcome = true, probeHolds
		case res.lo > slo.Bound:
			res.outcome = probeFails
			res.why = fmt.Sprintf("%s %v over the bound: its interval %s over %d operations lies above it", name, res.pct.Round(time.Microsecond), res.interval(), res.ops)
		case look == sloLooks:
			res.outcome = probeUndecided
			res.why = fmt.Sprintf("undecided: %s %v, its interval %s over %d operations contains the bound", name, res.pct.Round(time.Microsecond), res.interval(), res.ops)
		default:
			want = 2 * pooled.TotalCount()
			continue
		}
		return res
	}
}

// record is r as the report's record of a probe at rate.
func (r probeResult) record(rate float64) verdict.SLOProbe {
	ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
	p := verdict.SLOProbe{Rate: rate, Passed: r.ok, Outcome: r.outcome, Samples: r.samples, Ops: r.ops,
		PercentileMs: ms(r.pct), LoMs: ms(r.lo), WorstMs: ms(r.worst), LatenessP99ms: ms(r.lateness), Why: r.why}
	if r.hi != unbounded {
		p.HiMs = ms(r.hi)
	}
	return p
}

// interval writes [lo, hi] rounded to the microsecond.
func (r probeResult) interval() string {
	hi := "∞"
	if r.hi != unbounded {
		hi = r.hi.Round(time.Microsecond).String()
	}
	return fmt.Sprintf("[%v, %s]", r.lo.Round(time.Microsecond), hi)
}
