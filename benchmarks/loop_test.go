package benchmarks

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// fakeClock is a clock that moves only when told: SleepUntil jumps to the
// time, and the operation under test advances it by its service time.
type fakeClock struct{ now time.Time }

func (c *fakeClock) Now() time.Time { return c.now }

func (c *fakeClock) SleepUntil(_ context.Context, t time.Time) {
	if t.After(c.now) {
		c.now = t
	}
}

// runFake runs one open-loop worker on a fake clock whose request k takes
// service(k), and returns the latencies recorded and the worker's counts.
func runFake(s schedule, clk *fakeClock, service func(k int) time.Duration) ([]time.Duration, counter) {
	var lats []time.Duration
	var c counter
	runSchedule(context.Background(), clk, s,
		func(k int) error { clk.now = clk.now.Add(service(k)); return nil },
		func(d time.Duration) { lats = append(lats, d) }, &c)
	return lats, c
}

func TestOpenLoopChargesTheWaitBehindASlowReply(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ms := time.Millisecond
	s := schedule{start: t0, interval: 10 * ms, end: t0.Add(50 * ms), drain: t0.Add(100 * ms)}
	// Request 0 takes 25 ms, the others 1 ms. Measured from their actual
	// send times they would take 25, 1, 1, 1, 1 ms (coordinated
	// omission); from their intended send times, 1 and 2 waited.
	lats, c := runFake(s, &fakeClock{now: t0}, func(k int) time.Duration {
		if k == 0 {
			return 25 * ms
		}
		return ms
	})
	want := []time.Duration{25 * ms, 16 * ms, 7 * ms, ms, ms}
	if !slices.Equal(lats, want) {
		t.Errorf("latencies = %v; want %v", lats, want)
	}
	if c.ops != 5 || c.behind != 0 {
		t.Errorf("ops = %d, behind = %d; want 5, 0", c.ops, c.behind)
	}
}

func TestOpenLoopCountsRequestsLeftBehindAfterTheDrain(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ms := time.Millisecond
	s := schedule{start: t0, interval: 10 * ms, end: t0.Add(50 * ms), drain: t0.Add(100 * ms)}
	// Every request takes 30 ms, three times the interval: the worker
	// falls further behind with each one.
	lats, c := runFake(s, &fakeClock{now: t0}, func(int) time.Duration { return 30 * ms })
	// Sent at 0, 30, 60, 90 ms; at 120 ms the drain is over, and request
	// 4 (intended at 40 ms) is recorded as waiting 80 ms so far.
	want := []time.Duration{30 * ms, 50 * ms, 70 * ms, 90 * ms, 80 * ms}
	if !slices.Equal(lats, want) {
		t.Errorf("latencies = %v; want %v", lats, want)
	}
	if c.ops != 4 || c.behind != 1 {
		t.Errorf("ops = %d, behind = %d; want 4, 1", c.ops, c.behind)
	}
}

func TestOpenLoopWorkersInterleaveEvenly(t *testing.T) {
	t0 := time.Unix(1000, 0)
	var sends []time.Duration
	for w := range 4 {
		s := workerSchedule(t0, w, 4, 1000, 10*time.Millisecond)
		if s.interval != 4*time.Millisecond {
			t.Fatalf("interval = %v; want 4ms for 1000/s over 4 workers", s.interval)
		}
		for k := 0; s.intended(k).Before(s.end); k++ {
			sends = append(sends, s.intended(k).Sub(t0))
		}
	}
	slices.Sort(sends)
	if len(sends) != 10 {
		t.Fatalf("%d sends in 10 ms at 1000/s; want 10", len(sends))
	}
	for i, d := range sends {
		if d != time.Duration(i)*time.Millisecond {
			t.Fatalf("sends at %v; want one every millisecond", sends)
		}
	}
}

func TestOpenLoopSendsEveryScheduledRequest(t *testing.T) {
	hists := make([]*hdr.Histogram, 4)
	for i := range hists {
		hists[i] = newHistogram()
	}
	var calls atomic.Int64
	l := openLoop(context.Background(), 4, 100*time.Millisecond, 2000, func(context.Context, int, int) error {
		calls.Add(1)
		return nil
	}, hists)
	// 2000/s for 100 ms: 200 intended sends; a worker late past the drain
	// would count the rest as behind, but none is lost.
	if l.ops+l.behind != 200 || calls.Load() != l.ops {
		t.Errorf("ops %d + behind %d, calls %d; want 200 in all, calls = ops", l.ops, l.behind, calls.Load())
	}
	var recorded int64
	for _, h := range hists {
		recorded += h.TotalCount()
	}
	if recorded != 200 {
		t.Errorf("%d latencies recorded; want 200", recorded)
	}
}

func TestClosedLoopRecordsOneLatencyPerOperation(t *testing.T) {
	hists := []*hdr.Histogram{newHistogram(), newHistogram(), newHistogram()}
	l := closedLoop(context.Background(), 3, 20*time.Millisecond, func(context.Context, int, int) error {
		time.Sleep(100 * time.Microsecond)
		return nil
	}, hists)
	var recorded int64
	for _, h := range hists {
		recorded += h.TotalCount()
		if h.TotalCount() == 0 {
			t.Errorf("a worker recorded nothing")
		}
	}
	if l.ops == 0 || recorded != l.ops {
		t.Errorf("ops = %d, recorded = %d; want equal and positive", l.ops, recorded)
	}
}

func TestClosedLoopStopsWhenTheContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	start := time.Now()
	closedLoop(ctx, 2, time.Hour, func(context.Context, int, int) error { return nil }, nil)
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("closedLoop ran %v after its context was cancelled", d)
	}
}
