package load

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// sleepClock is the open loop's clock inside a synctest bubble, where
// time moves only when every goroutine waits: SleepUntil sleeps, over by
// oversleep (a timer that wakes late). The spinning clock would spin
// forever there.
type sleepClock struct{ oversleep time.Duration }

func (sleepClock) Now() time.Time { return time.Now() }

func (c sleepClock) SleepUntil(_ context.Context, t time.Time) {
	time.Sleep(time.Until(t) + c.oversleep)
}

// runFake runs one open-loop worker paced at rate for d on clk, in a
// synctest bubble (so durations are exact), request k taking service(k),
// and returns the latencies and latenesses recorded, in order, and the
// worker's counts.
func runFake(t *testing.T, clk clock, rate float64, d time.Duration, service func(k int) time.Duration) (lats, lates []time.Duration, c counter) {
	synctest.Test(t, func(t *testing.T) {
		s := newPace(newPacer(time.Now(), rate, d), clk)
		s.serve(context.Background(),
			func(k int) error { time.Sleep(service(k)); return nil },
			func(d time.Duration) { lats = append(lats, d) },
			func(d time.Duration) { lates = append(lates, d) }, &c)
	})
	return lats, lates, c
}

func TestOpenLoopChargesTheWaitBehindASlowReply(t *testing.T) {
	ms := time.Millisecond
	// One request every 10 ms for 50 ms; request 0 takes 25 ms, the
	// others 1 ms. Measured from their actual send times they would take
	// 25, 1, 1, 1, 1 ms (coordinated omission); from their intended send
	// times, 1 and 2 waited.
	lats, lates, c := runFake(t, sleepClock{}, 100, 50*ms, func(k int) time.Duration {
		if k == 0 {
			return 25 * ms
		}
		return ms
	})
	if want := []time.Duration{25 * ms, 16 * ms, 7 * ms, ms, ms}; !slices.Equal(lats, want) {
		t.Errorf("latencies = %v; want %v", lats, want)
	}
	// The waits were the server's: the worker sent each request as soon
	// as it was free, so the client was never late.
	if want := []time.Duration{0, 0, 0, 0, 0}; !slices.Equal(lates, want) {
		t.Errorf("latenesses = %v; want %v", lates, want)
	}
	if c.ops != 5 || c.behind != 0 {
		t.Errorf("ops = %d, behind = %d; want 5, 0", c.ops, c.behind)
	}
}

func TestOpenLoopCountsRequestsLeftBehindAfterTheDrain(t *testing.T) {
	ms := time.Millisecond
	// Every request takes 30 ms, three times the interval: the worker
	// falls further behind with each one.
	lats, _, c := runFake(t, sleepClock{}, 100, 50*ms, func(int) time.Duration { return 30 * ms })
	// Sent at 0, 30, 60, 90 ms; at 120 ms the drain is over, and request
	// 4 (intended at 40 ms) is recorded as waiting 80 ms so far.
	if want := []time.Duration{30 * ms, 50 * ms, 70 * ms, 90 * ms, 80 * ms}; !slices.Equal(lats, want) {
		t.Errorf("latencies = %v; want %v", lats, want)
	}
	if c.ops != 4 || c.behind != 1 {
		t.Errorf("ops = %d, behind = %d; want 4, 1", c.ops, c.behind)
	}
}

func TestOpenLoopRecordsTheClientsOwnLateness(t *testing.T) {
	us := time.Microsecond
	// A pacer whose timer wakes 300 µs late, a server that answers in
	// 100 µs: each request goes 300 µs late and is charged for it.
	lats, lates, _ := runFake(t, sleepClock{oversleep: 300 * us}, 1000, 5*time.Millisecond, func(int) time.Duration { return 100 * us })
	if len(lates) != 5 || len(lats) != 5 {
		t.Fatalf("%d latenesses, %d latencies; want 5 each", len(lates), len(lats))
	}
	for i := range lates {
		if lates[i] != 300*us || lats[i] != 400*us {
			t.Errorf("request %d: lateness %v, latency %v; want 300µs, 400µs", i, lates[i], lats[i])
		}
	}
}

func TestPacerSpreadsSendsEvenly(t *testing.T) {
	t0 := time.Unix(1000, 0)
	p := newPacer(t0, 1000, 10*time.Millisecond)
	var sends []time.Duration
	for k := 0; p.intended(k).Before(p.end); k++ {
		sends = append(sends, p.intended(k).Sub(t0))
	}
	if len(sends) != 10 {
		t.Fatalf("%d sends in 10 ms at 1000/s; want 10", len(sends))
	}
	for i, d := range sends {
		if d != time.Duration(i)*time.Millisecond {
			t.Fatalf("sends at %v; want one every millisecond", sends)
		}
	}
	// A rate that does not divide a second: no drift from rounding.
	p = newPacer(t0, 3000, time.Second)
	if n := p.intended(3000).Sub(t0); n != time.Second {
		t.Errorf("request 3000 at 3000/s intended at %v; want 1s", n)
	}
}

func newHists(n int) []*hdr.Histogram {
	hs := make([]*hdr.Histogram, n)
	for i := range hs {
		hs[i] = NewHistogram()
	}
	return hs
}

func total(hs []*hdr.Histogram) int64 {
	var n int64
	for _, h := range hs {
		n += h.TotalCount()
	}
	return n
}

func TestOpenLoopSendsEveryScheduledRequest(t *testing.T) {
	hists, late := newHists(4), newHists(4)
	var calls atomic.Int64
	l := Open(context.Background(), 4, 100*time.Millisecond, 2000, func(context.Context, int, int) error {
		calls.Add(1)
		return nil
	}, hists, late)
	// 2000/s for 100 ms: 200 intended sends; a worker late past the drain
	// would count the rest as behind, but none is lost.
	if l.Ops+l.Behind != 200 || calls.Load() != l.Ops {
		t.Errorf("ops %d + behind %d, calls %d; want 200 in all, calls = ops", l.Ops, l.Behind, calls.Load())
	}
	if n := total(hists); n != 200 {
		t.Errorf("%d latencies recorded; want 200", n)
	}
	if n := total(late); n != l.Ops {
		t.Errorf("%d latenesses recorded; want one per send, %d", n, l.Ops)
	}
}

func TestClosedLoopRecordsOneLatencyPerOperation(t *testing.T) {
	hists := []*hdr.Histogram{NewHistogram(), NewHistogram(), NewHistogram()}
	l := Closed(context.Background(), 3, 20*time.Millisecond, func(context.Context, int, int) error {
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
	if l.Ops == 0 || recorded != l.Ops {
		t.Errorf("ops = %d, recorded = %d; want equal and positive", l.Ops, recorded)
	}
}

func TestOpenLoopStopsWhenTheContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	start := time.Now()
	l := Open(ctx, 3, time.Hour, 100, func(context.Context, int, int) error { return nil }, newHists(3), newHists(3))
	if d := time.Since(start); d > 3*time.Second || l.Ops > 10 {
		t.Errorf("Open ran %v and sent %d after its context was cancelled at 20 ms", d, l.Ops)
	}
}

func TestClosedLoopStopsWhenTheContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	start := time.Now()
	Closed(ctx, 2, time.Hour, func(context.Context, int, int) error { return nil }, nil)
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("Closed ran %v after its context was cancelled", d)
	}
}
