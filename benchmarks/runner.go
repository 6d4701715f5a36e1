package benchmarks

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Op is one operation of a closed-loop workload; worker is the index of
// the goroutine running it and i counts that worker's operations.
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
	var ops, errs atomic.Int64
	var first atomic.Value
	var stop atomic.Bool
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < goroutines; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			n := int64(0)
			for i := 0; !stop.Load(); i++ {
				if err := op(ctx, w, i); err != nil {
					errs.Add(1)
					first.CompareAndSwap(nil, err)
				}
				n++
			}
			ops.Add(n)
		}(w)
	}
	t := time.NewTimer(d)
	select {
	case <-t.C:
	case <-ctx.Done():
		t.Stop()
	}
	stop.Store(true)
	wg.Wait()
	r := Result{Ops: ops.Load(), Errors: errs.Load(), Elapsed: time.Since(start)}
	err, _ := first.Load().(error)
	return r, err
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
