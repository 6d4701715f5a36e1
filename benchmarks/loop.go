package benchmarks

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

func newHistogram() *hdr.Histogram { return hdr.New(histLowest, histHighest, histDigits) }

// record adds one latency to h, clamped into its range.
func record(h *hdr.Histogram, d time.Duration) {
	v := min(max(int64(d), histLowest), histHighest)
	_ = h.RecordValue(v) // in range: cannot fail
}

// load is the outcome of running an operation on many workers for a
// while.
type load struct {
	ops, errs int64
	first     error
	elapsed   time.Duration
	// behind counts the open-loop requests still unsent when the drain
	// period ended: the offered rate was not sustained.
	behind int64
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
func runWorkers(workers int, started func(start time.Time), body func(w int, start time.Time, c *counter)) load {
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
	l := load{elapsed: time.Since(start)}
	for _, c := range counters {
		l.ops += c.ops
		l.errs += c.errs
		l.behind += c.behind
		if l.first == nil {
			l.first = c.first
		}
	}
	return l
}

// closedLoop runs op on workers goroutines, each issuing its next call as
// soon as the previous one returns, for d or until ctx is done. When
// hists is not nil, worker w records each call's latency in hists[w].
func closedLoop(ctx context.Context, workers int, d time.Duration, op Op, hists []*hdr.Histogram) load {
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
				record(h, time.Since(t0))
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

// clock is the time source of the open loop, replaced in tests.
type clock interface {
	Now() time.Time
	// SleepUntil returns at t or when ctx is done, whichever is first.
	SleepUntil(ctx context.Context, t time.Time)
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) SleepUntil(ctx context.Context, t time.Time) {
	d := time.Until(t)
	if d <= 0 {
		return
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-ctx.Done():
	}
}

// schedule is one open-loop worker's timetable: request k is intended to
// be sent at start + offset + k×interval, for every such time before end.
// Workers of one run share start and interval and have offsets spread
// over one interval, so that together they send at an even rate.
type schedule struct {
	start    time.Time
	offset   time.Duration
	interval time.Duration
	end      time.Time
	// drain is the latest time a late worker may still send a request
	// intended before end; requests it has not sent by then are recorded
	// with their latency so far (a lower bound) and counted as behind.
	drain time.Time
}

// intended returns the intended send time of request k.
func (s schedule) intended(k int) time.Time {
	return s.start.Add(s.offset + time.Duration(k)*s.interval)
}

// workerSchedule returns worker w's schedule among workers sharing a
// total rate per second from start for d; a late worker may drain its
// backlog for another d.
func workerSchedule(start time.Time, w, workers int, rate float64, d time.Duration) schedule {
	interval := time.Duration(float64(workers) / rate * float64(time.Second))
	return schedule{
		start:    start,
		offset:   time.Duration(int64(interval) * int64(w) / int64(workers)),
		interval: max(interval, 1),
		end:      start.Add(d),
		drain:    start.Add(2 * d),
	}
}

// runSchedule runs one open-loop worker: it sends request k at its
// intended time, or at once when late, and records each latency from the
// intended send time, not from the actual one — so a slow reply delays
// the requests behind it and they are charged for the wait (no
// coordinated omission). It returns when every request intended before
// s.end has been sent, or at s.drain.
func runSchedule(ctx context.Context, clk clock, s schedule, do func(k int) error, rec func(time.Duration), c *counter) {
	for k := 0; ; k++ {
		at := s.intended(k)
		if !at.Before(s.end) || ctx.Err() != nil {
			return
		}
		now := clk.Now()
		if now.After(s.drain) {
			for ; at.Before(s.end); at = s.intended(k) {
				rec(now.Sub(at))
				c.behind++
				k++
			}
			return
		}
		if at.After(now) {
			clk.SleepUntil(ctx, at)
		}
		err := do(k)
		rec(clk.Now().Sub(at))
		c.ops++
		if err != nil {
			c.errs++
			if c.first == nil {
				c.first = err
			}
		}
	}
}

// openLoop offers rate requests per second spread over workers
// goroutines for d, each worker on its own schedule, and records every
// latency from its intended send time in hists[w].
func openLoop(ctx context.Context, workers int, d time.Duration, rate float64, op Op, hists []*hdr.Histogram) load {
	return runWorkers(workers, nil, func(w int, start time.Time, c *counter) {
		h := hists[w]
		s := workerSchedule(start, w, workers, rate, d)
		runSchedule(ctx, realClock{}, s,
			func(k int) error { return op(ctx, w, k) },
			func(lat time.Duration) { record(h, lat) }, c)
	})
}
