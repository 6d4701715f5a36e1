package load

import (
	"context"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// The open loop paces its sends itself; Go's timers would not do. On
// Linux a sleeping runtime wakes on a millisecond grid (its netpoller
// waits whole milliseconds), so a timer due in 300 µs fires about 1 ms
// later, and every send paced by one is that late: the p50 of an open
// loop at 2,000/s was 0.6 ms against a closed loop's 0.02 ms.
//
// The pacer is one of the level's workers at a time, the holder of a
// token (see pace): it computes the next request's intended time
// (start + k/rate), sleeps in a nanosleep system call — a kernel
// high-resolution timer — until a spin window (200 µs, widened while
// sleeps overshoot it) before that time, spins through the rest, passes
// the token to a free worker and sends the request itself, with no
// hand-over between the wait and the send. How it spins matters:
//
//   - never with runtime.Gosched: a goroutine always runnable keeps the
//     scheduler from polling the network (it looks for runnable
//     goroutines first), so replies would wait;
//   - yielding the CPU to the operating system (sched_yield on Linux)
//     until the last 30 µs: a server or client thread woken on the
//     pacer's CPU runs at once, where a spinning thread would keep it
//     waiting for its time slice. When yields come back late (other
//     threads ran), the pacer stops yielding earlier (see spinClock).
//
// The spinning costs CPU — the window per request, all of a core from
// about 5,000/s — counted in the cells' CPU per operation. Elsewhere than
// Linux the pacer sleeps on a Go timer with a 2 ms window and spins
// without yielding. It needs a second P (GOMAXPROCS ≥ 2): while it spins
// it holds one.

// clock is the time source of the open loop, replaced in tests.
type clock interface {
	Now() time.Time
	// SleepUntil returns at t (not before), or earlier when ctx is done.
	SleepUntil(ctx context.Context, t time.Time)
}

// spinTight is the least last stretch before a send spun without
// yielding the CPU: a yield may lose it for a while, and the pacer must
// be on time.
const spinTight = 30 * time.Microsecond

// spinClock is the real clock of one open-loop run. SleepUntil sleeps
// (see sleepFor) until window before t, then spins, yielding the CPU
// (osYield) until guard before t, then spins without yielding. Both
// adapt to the machine: window widens to twice a sleep's overshoot when
// one wakes later than half of it, guard to twice the longest yield
// (another thread ran meanwhile), and both narrow back slowly — a loaded
// machine costs more spinning rather than late sends, an idle one gets
// its CPU back at once.
type spinClock struct{ window, guard time.Duration }

func newSpinClock() *spinClock { return &spinClock{window: sleepWindow, guard: spinTight} }

func (*spinClock) Now() time.Time { return time.Now() }

func (c *spinClock) SleepUntil(ctx context.Context, t time.Time) {
	if wake := t.Add(-c.window); time.Until(wake) > 0 {
		sleepFor(time.Until(wake))
		if ctx.Err() != nil {
			return
		}
		c.window = adapt(c.window, time.Since(wake), sleepWindow, 20*time.Millisecond)
	}
	for {
		left := time.Until(t)
		if left <= 0 {
			return
		}
		if left > c.guard {
			y := time.Now()
			osYield()
			c.guard = adapt(c.guard, time.Since(y), spinTight, c.window)
		}
	}
}

// adapt returns a margin d after a wait that overshot by over: twice
// over when that is more than half of d, else d narrowed by 1/64; within
// [lo, hi].
func adapt(d, over, lo, hi time.Duration) time.Duration {
	if over > d/2 {
		return max(lo, min(2*over, hi))
	}
	return max(lo, d-d/64)
}

// pacer is the timetable of one open-loop run: request k is intended to
// be sent at start + k/rate, for every such time before end.
type pacer struct {
	start time.Time
	rate  float64 // per second
	end   time.Time
	// drain is the latest time a request intended before end may still
	// be sent; those not sent by then are recorded with their latency so
	// far (a lower bound) and counted as behind.
	drain time.Time
}

// newPacer returns the timetable of rate requests per second from start
// for d, drained for another d.
func newPacer(start time.Time, rate float64, d time.Duration) pacer {
	return pacer{start: start, rate: rate, end: start.Add(d), drain: start.Add(2 * d)}
}

// intended returns the intended send time of request k.
func (p pacer) intended(k int) time.Time {
	return p.start.Add(time.Duration(float64(k) * float64(time.Second) / p.rate))
}

// pace is the shared state of one open loop's workers. The pacer's role
// passes from worker to worker: the worker holding token waits for the
// next request's intended time, passes the token on (to a free worker,
// which then waits for the request after) and sends the request itself,
// so that no hand-over to another goroutine lies between the wait and
// the send. When every worker is busy, the token waits for the first
// that is free, which sends at once the requests already due.
type pace struct {
	pacer
	clk   clock
	token chan struct{} // holds the pacer's role while no worker does
	next  int           // the next request to send: only the token's holder touches it
}

func newPace(p pacer, clk clock) *pace {
	s := &pace{pacer: p, clk: clk, token: make(chan struct{}, 1)}
	s.token <- struct{}{}
	return s
}

// serve is one open-loop worker. It sends each request it takes at its
// intended time (at once when that is past) and records its latency from
// the intended time, not from the actual one — so a slow reply delays
// the requests behind it and they are charged for the wait (no
// coordinated omission). It also records its own lateness: how long
// after a request could have gone (its intended time, or the moment the
// worker became free if every worker was busy then) it did go — the
// client's delay, not the server's. After the drain, the worker holding
// the token records every request left with its latency so far and
// counts it as behind. It returns when every request intended before
// end is accounted for, or ctx is done.
func (s *pace) serve(ctx context.Context, do func(i int) error, rec, recLate func(time.Duration), c *counter) {
	free := s.clk.Now()
	for i := 0; ; i++ {
		<-s.token
		at := s.intended(s.next)
		if !at.Before(s.end) || ctx.Err() != nil {
			s.token <- struct{}{}
			return
		}
		if now := s.clk.Now(); now.After(s.drain) {
			for ; at.Before(s.end); at = s.intended(s.next) {
				rec(now.Sub(at))
				c.behind++
				s.next++
			}
			s.token <- struct{}{}
			return
		}
		if s.clk.SleepUntil(ctx, at); ctx.Err() != nil {
			s.token <- struct{}{}
			return
		}
		s.next++
		s.token <- struct{}{} // a free worker paces the next request meanwhile
		recLate(max(s.clk.Now().Sub(later(at, free)), 0))
		err := do(i)
		free = s.clk.Now()
		rec(free.Sub(at))
		c.ops++
		if err != nil {
			c.errs++
			if c.first == nil {
				c.first = err
			}
		}
	}
}

// later returns the later of a and b.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// Open offers rate requests per second for d to workers goroutines,
// paced as pace says, and records every latency from its intended send
// time in hists[w] and every send's lateness in late[w].
func Open(ctx context.Context, workers int, d time.Duration, rate float64, op Op, hists, late []*hdr.Histogram) Outcome {
	return openOn(ctx, newSpinClock(), workers, d, rate, op, hists, late)
}

// openOn is Open on clk.
func openOn(ctx context.Context, clk clock, workers int, d time.Duration, rate float64, op Op, hists, late []*hdr.Histogram) Outcome {
	var s *pace
	started := func(start time.Time) { s = newPace(newPacer(start, rate, d), clk) }
	return runWorkers(workers, started, func(w int, _ time.Time, c *counter) {
		h, lh := hists[w], late[w]
		s.serve(ctx,
			func(i int) error { return op(ctx, w, i) },
			func(lat time.Duration) { Record(h, lat) },
			func(l time.Duration) { Record(lh, l) }, c)
	})
}

// LateHists are the lateness histograms of a run's open-loop samples:
// one per worker, and their merge, reused from sample to sample.
type LateHists struct {
	perWorker []*hdr.Histogram
	sum       *hdr.Histogram
}

// Workers returns n reset histograms, one per worker.
func (l *LateHists) Workers(n int) []*hdr.Histogram {
	for len(l.perWorker) < n {
		l.perWorker = append(l.perWorker, NewHistogram())
	}
	for _, h := range l.perWorker[:n] {
		h.Reset()
	}
	return l.perWorker[:n]
}

// Merged returns the merge of the first n workers' histograms, valid
// until the next call.
func (l *LateHists) Merged(n int) *hdr.Histogram {
	if l.sum == nil {
		l.sum = NewHistogram()
	}
	l.sum.Reset()
	for _, h := range l.perWorker[:n] {
		l.sum.Merge(h)
	}
	return l.sum
}
