package verdict

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/aclements/go-moremath/stats"
)

// The statistics behind verdicts and baseline comparisons, beyond the
// median and the rank test of stats.go: the interval of a ratio of two
// targets' throughputs, a multiple-comparison correction, and the least
// number of samples that can ever be significant.

// RatioInterval returns the 1-alpha confidence interval of the ratio of
// a's throughput to b's: the Hodges–Lehmann interval of the shift between
// the logarithms of the samples, found by inverting the same Mann–Whitney
// test that gives the p-value (so that "p < alpha" and "the interval
// excludes 1" agree), with no assumption about the samples' distribution
// and no random resampling (the same samples always give the same
// interval, which a bootstrap would not).
//
// The interval runs from the k-th smallest to the k-th largest of the
// len(a)·len(b) pairwise ratios a[i]/b[j], k being the largest count for
// which P(U < k) ≤ alpha/2 under the null hypothesis: exact for up to 50
// samples a side, the normal approximation beyond. With too few samples
// for any such k (fewer than 4 a side at alpha 0.05), the interval is
// the range of the pairwise ratios, which no 95% interval can be narrower
// than. With an empty side, or a sample that is not positive (no ratio of
// logarithms), it is [0, +Inf].
func RatioInterval(a, b []float64, alpha float64) (lo, hi float64) {
	return newLogRatios(a, b).interval(alpha)
}

// logRatios are the sorted pairwise differences log(a[i]) - log(b[j]) of
// two samples: every interval of their ratio (RatioInterval) and its
// Hodges–Lehmann estimate are order statistics of them.
type logRatios struct {
	d    []float64
	n, m int
}

// newLogRatios returns the pairwise log-ratios of a over b; none when a
// side is empty or holds a sample that is not positive.
func newLogRatios(a, b []float64) logRatios {
	n, m := len(a), len(b)
	if n == 0 || m == 0 || slices.ContainsFunc(a, notPositive) || slices.ContainsFunc(b, notPositive) {
		return logRatios{}
	}
	d := make([]float64, 0, n*m)
	for _, x := range a {
		for _, y := range b {
			d = append(d, math.Log(x)-math.Log(y))
		}
	}
	slices.Sort(d)
	return logRatios{d: d, n: n, m: m}
}

// interval is the 1-alpha interval of the ratio (see RatioInterval).
func (r logRatios) interval(alpha float64) (lo, hi float64) {
	if len(r.d) == 0 {
		return 0, math.Inf(1)
	}
	k := max(uCritical(r.n, r.m, alpha), 1)
	return math.Exp(r.d[k-1]), math.Exp(r.d[len(r.d)-k])
}

// covers reports whether there are samples enough for a 1-alpha interval
// (rather than the range of the ratios, which interval falls back to).
func (r logRatios) covers(alpha float64) bool {
	return len(r.d) > 0 && uCritical(r.n, r.m, alpha) > 0
}

// estimate is the Hodges–Lehmann estimate of the ratio: the median of the
// pairwise ratios; 1 when there are none.
func (r logRatios) estimate() float64 {
	if len(r.d) == 0 {
		return 1
	}
	return math.Exp(Median(r.d))
}

func notPositive(x float64) bool { return !(x > 0) || math.IsInf(x, 0) }

// uCritical is the largest k with P(U ≤ k-1) ≤ alpha/2 for the
// Mann–Whitney U statistic of samples of sizes n and m without ties; 0
// when even P(U = 0) is larger (too few samples for a 1-alpha interval).
func uCritical(n, m int, alpha float64) int {
	if n > stats.MannWhitneyExactLimit || m > stats.MannWhitneyExactLimit {
		z := stats.StdNormal.InvCDF(1 - alpha/2)
		nm := float64(n * m)
		return max(int(math.Floor(nm/2-z*math.Sqrt(nm*float64(n+m+1)/12))), 0)
	}
	dist := stats.UDist{N1: n, N2: m}
	// P(U ≤ k) grows with k and passes 1/2 at the middle: the first k
	// past alpha/2 is found by bisection over [0, nm/2].
	return sort.Search(n*m/2+1, func(k int) bool { return dist.CDF(float64(k)) > alpha/2 })
}

// adjustBH returns the Benjamini–Hochberg adjusted p-values (q-values) of
// ps, in the same order: q < alpha marks the discoveries of the procedure
// at false discovery rate alpha.
//
// Benjamini–Hochberg rather than Holm: a baseline compares dozens of
// cells, each of 6 samples a side by default, and the smallest p-value
// Mann–Whitney can give 6 against 6 is 0.0022, so Holm (whose first
// threshold is alpha/m) could never flag a single cell of a plan of more
// than 22 cells, however large the change. Benjamini–Hochberg bounds the
// expected share of false discoveries instead, keeps its power when a
// change moves many cells at once (what a change of code or of
// configuration does), and when nothing changed at all, which is what
// matters for two identical runs, it bounds the chance of flagging any
// cell by alpha, as Holm does.
func adjustBH(ps []float64) []float64 {
	m := len(ps)
	order := make([]int, m)
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(i, j int) int { return cmp.Compare(ps[i], ps[j]) })
	q := make([]float64, m)
	next := 1.0
	for r := m - 1; r >= 0; r-- {
		i := order[r]
		next = min(next, ps[i]*float64(m)/float64(r+1))
		q[i] = next
	}
	return q
}

// MinRepeats returns the fewest samples per cell with which a verdict
// can be significant at alpha: the smallest n for which two samples of n
// that do not overlap at all give a Mann–Whitney p-value under alpha and
// a finite 1-alpha interval of their ratio. It is 4 at alpha 0.05 (5 at
// 0.05/3, a look of three); with fewer, no verdict is significant and no
// baseline change either, whatever the data.
func MinRepeats(alpha float64) int {
	const limit = 50
	for n := 2; n < limit; n++ {
		a, b := make([]float64, n), make([]float64, n)
		for i := range n {
			a[i], b[i] = float64(i+1), float64(n+i+1)
		}
		if RankP(a, b, alpha) < alpha && uCritical(n, n, alpha) > 0 {
			return n
		}
	}
	return limit
}

// PowerWarning says when s is too small for any verdict to be
// significant or equivalent: fewer samples, even at the last look, than
// MinRepeats at the alpha of a look; empty otherwise.
func (s Sampling) PowerWarning() string {
	look := s.rule().look
	need := MinRepeats(look)
	if s.MaxRepeats >= need {
		return ""
	}
	flag := fmt.Sprintf("-repeats %d or more", need)
	if s.Looks() > 1 {
		flag = fmt.Sprintf("-max-repeats %d or more", need)
	}
	return fmt.Sprintf("%d samples per cell cannot reach significance: Mann-Whitney at alpha %.3g needs at least %d a side, "+
		"so every verdict will be undecided and every baseline change insignificant (%s)", s.MaxRepeats, look, need, flag)
}

// Median returns the median of xs (the mean of the middle two for an even
// count); 0 for none.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
