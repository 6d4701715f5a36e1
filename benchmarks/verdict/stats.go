package verdict

import (
	"math"
	"slices"

	"golang.org/x/perf/benchmath"
)

// thresholds are benchmath's: Compare panics without them.
func thresholds(alpha float64) *benchmath.Thresholds {
	return &benchmath.Thresholds{CompareAlpha: alpha}
}

// Summarize returns the median of xs and its 95% confidence interval
// (benchmath, no distributional assumption). With too few samples for an
// interval (fewer than 6), the interval is the samples' range.
func Summarize(xs []float64) (median, lo, hi float64) {
	if len(xs) == 0 {
		return 0, 0, 0
	}
	s := benchmath.NewSample(slices.Clone(xs), thresholds(0.05)) // NewSample sorts in place
	sum := benchmath.AssumeNothing.Summary(s, 0.95)
	lo, hi = sum.Lo, sum.Hi
	if math.IsInf(lo, 0) || math.IsNaN(lo) {
		lo = s.Values[0]
	}
	if math.IsInf(hi, 0) || math.IsNaN(hi) {
		hi = s.Values[len(s.Values)-1]
	}
	return sum.Center, lo, hi
}

// RankP returns the Mann-Whitney U p-value of the hypothesis that a and
// b come from the same distribution; 1 when either is empty.
func RankP(a, b []float64, alpha float64) float64 {
	if len(a) == 0 || len(b) == 0 {
		return 1
	}
	t := thresholds(alpha)
	sa := benchmath.NewSample(slices.Clone(a), t)
	sb := benchmath.NewSample(slices.Clone(b), t)
	return benchmath.AssumeNothing.Compare(sa, sb).P
}
