package load

import (
	"context"
	"time"
)

// Op is one operation of a workload; worker is the index of the
// goroutine running it and i counts that worker's operations.
type Op func(ctx context.Context, worker, i int) error

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
	l := Closed(ctx, goroutines, d, op, nil)
	return Result{Ops: l.Ops, Errors: l.Errs, Elapsed: l.Elapsed}, l.First
}
