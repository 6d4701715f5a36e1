package load

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// Latencies are recorded in nanoseconds, from 1 ns to a minute, with two
// significant digits (1% resolution): a histogram then takes 30 KB,
// which one per worker at 1000 workers keeps at 30 MB (three digits
// would take 220 MB).
const (
	histLowest  = 1
	histHighest = int64(time.Minute)
	histDigits  = 2
)

// NewHistogram returns an empty latency histogram in that range.
func NewHistogram() *hdr.Histogram { return hdr.New(histLowest, histHighest, histDigits) }

// Record adds one latency to h, clamped into its range.
func Record(h *hdr.Histogram, d time.Duration) {
	v := min(max(int64(d), histLowest), histHighest)
	_ = h.RecordValue(v) // in range: cannot fail
}

// Outcome is what running an operation on many workers for a while came
// to.
type Outcome struct {
	Ops, Errs int64
	// First is the first error of any worker.
	First   error
	Elapsed time.Duration
	// Behind counts the open-loop requests still unsent when the drain
	// period ended: the offered rate was not sustained.
	Behind int64
}

// counter is one worker's tally; each worker writes only its own.
type counter struct {
	ops, errs, behind int64
	first             error
}

// runWorkers starts workers goroutines and, once all are running,
// releases them at once into body; it measures from that moment (start,
// also handed to started) until the last returns, and sums their
// counters.
func runWorkers(workers int, started func(start time.Time), body func(w int, start time.Time, c *counter)) Outcome {
	counters := make([]counter, workers)
	var ready, wg sync.WaitGroup
	release := make(chan struct{})
	var start time.Time
	ready.Add(workers)
	wg.Add(workers)
	for w := range workers {
		go func() {
			defer wg.Done()
			ready.Done()
			<-release
			body(w, start, &counters[w])
		}()
	}
	ready.Wait()
	start = time.Now()
	if started != nil {
		started(start)
	}
	close(release)
	wg.Wait()
	l := Outcome{Elapsed: time.Since(start)}
	for _, c := range counters {
		l.Ops += c.ops
		l.Errs += c.errs
		l.Behind += c.behind
		if l.First == nil {
			l.First = c.first
		}
	}
	return l
}

// Closed runs op on workers goroutines, each issuing its next call as
// soon as the previous one returns, for d or until ctx is done. When
// hists is not nil, worker w records each call's latency in hists[w].
func Closed(ctx context.Context, workers int, d time.Duration, op Op, hists []*hdr.Histogram) Outcome {
	var stop atomic.Bool
	var timer *time.Timer
	cancel := context.AfterFunc(ctx, func() { stop.Store(true) })
	defer cancel()
	started := func(time.Time) { timer = time.AfterFunc(d, func() { stop.Store(true) }) }
	defer func() { timer.Stop() }()
	return runWorkers(workers, started, func(w int, _ time.Time, c *counter) {
		var h *hdr.Histogram
		if hists != nil {
			h = hists[w]
		}
		for i := 0; !stop.Load(); i++ {
			t0 := time.Now()
			err := op(ctx, w, i)
			if h != nil {
				Record(h, time.Since(t0))
			}
			c.ops++
			if err != nil {
				c.errs++
				if c.first == nil {
					c.first = err
				}
			}
		}
	})
}
