package benchmarks

import (
	"context"
	"slices"
	"time"
)

// Result is the outcome of one closed-loop run.
type Result struct {
	Ops     int64
	Errors  int64
	Elapsed time.Duration
}

// QPS is the operations per second of r.
func (r Result) QPS() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Ops) / r.Elapsed.Seconds()
}

// ClosedLoop runs op on goroutines workers, each issuing its next call as
// soon as the previous one returns, for d. Errors are counted, not
// fatal; the first is returned alongside the result.
func ClosedLoop(ctx context.Context, goroutines int, d time.Duration, op Op) (Result, error) {
	l := closedLoop(ctx, goroutines, d, op, nil)
	return Result{Ops: l.ops, Errors: l.errs, Elapsed: l.elapsed}, l.first
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
