package load

import (
	"context"
	"slices"
	"testing"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/redisx-go/kit/internal/launcher"
	"github.com/redisx-go/kit/redisx"
	"github.com/redisx-go/kit/strategy"
)

// merged is the merge of hs.
func merged(hs []*hdr.Histogram) *hdr.Histogram {
	m := NewHistogram()
	for _, h := range hs {
		m.Merge(h)
	}
	return m
}

// quantile is h's q-th percentile.
func quantile(h *hdr.Histogram, q float64) time.Duration { return time.Duration(h.ValueAtQuantile(q)) }

// TestPacerSendsOnTime offers a request that costs nothing at 2,000,
// 10,000 and 50,000 per second: the sends' lateness is the pacer's
// alone. Paced by Go's timers, which wake on a millisecond grid, a p99
// of 1.1 ms comes back every time; the test wants the best p99 of five
// rounds under 500 µs, robust to the tests of other packages sharing the
// machine, and the bars (TestBars/H3) hold it to 50 µs.
func TestPacerSendsOnTime(t *testing.T) {
	for _, tc := range []struct {
		workers int
		rate    float64
	}{{1, 2000}, {1, 10_000}, {4, 50_000}} {
		best := time.Hour
		for range 5 {
			hists, late := newHists(tc.workers), newHists(tc.workers)
			l := Open(context.Background(), tc.workers, 100*time.Millisecond, tc.rate,
				func(context.Context, int, int) error { return nil }, hists, late)
			lh := merged(late)
			t.Logf("%v/s on %d workers: %d sent, lateness p50 %v, p90 %v, p99 %v", tc.rate, tc.workers, l.Ops, quantile(lh, 50), quantile(lh, 90), quantile(lh, 99))
			if want := int64(tc.rate / 10); l.Ops != want || l.Behind != 0 {
				t.Errorf("%v/s: %d sent, %d behind; want all %d sent", tc.rate, l.Ops, l.Behind, want)
			}
			best = min(best, quantile(lh, 99))
		}
		if best > 500*time.Microsecond {
			t.Errorf("%v/s: lateness p99 %v at best of 5 rounds; want it under 500µs (Go's timers alone send 1.1 ms late)", tc.rate, best)
		}
	}
}

// TestOpenLoopMeasuresTheServerNotTheTimer measures, against a real
// server on loopback, the closed loop at one goroutine and the open loop
// at 2,000/s on one worker, in alternating rounds: with the pacer late
// by Go's timer, the open loop's p50 would be about 0.6 ms against tens
// of µs (40x). Bar H3 (open p50 ≤ 2x closed p50) is checked by
// TestBars/H3; here the bound is 8x, robust to the other tests sharing
// the machine.
func TestOpenLoopMeasuresTheServerNotTheTimer(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: measures for a few seconds")
	}
	srv := launcher.Standalone(t, launcher.Options{})
	ctx := context.Background()
	c, err := redisx.New(ctx, redisx.Options{Addrs: []string{srv.Addr()}, Strategy: strategy.Multiplexed{}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	if err := c.Set(ctx, "redisx-bench:h3", []byte("v"), 0); err != nil {
		t.Fatal(err)
	}
	op := func(ctx context.Context, _, _ int) error { _, err := c.Get(ctx, "redisx-bench:h3"); return err }
	// Up to three tries of five alternating rounds, the best round of
	// each loop compared: this machine has spells of 100 ms or more in
	// which every latency is several times its usual (seen in closed loop
	// too: 130 µs rounds among 15 µs ones), and the pacer's spinning on
	// two cores shared with the server can slow the server's replies for
	// a whole try (its own send lateness stays under a microsecond at
	// p50 then). A pacer late by Go's timers is late in every round of
	// every try.
	var ratio float64
	for try := range 3 {
		var closed, open []float64
		for range 5 {
			h := newHists(1)
			if l := Closed(ctx, 1, 200*time.Millisecond, op, h); l.Errs > 0 {
				t.Fatal(l.First)
			}
			closed = append(closed, float64(quantile(h[0], 50)))
			h, late := newHists(1), newHists(1)
			if l := Open(ctx, 1, 200*time.Millisecond, 2000, op, h, late); l.Errs > 0 {
				t.Fatal(l.First)
			}
			open = append(open, float64(quantile(h[0], 50)))
		}
		c50, o50 := slices.Min(closed), slices.Min(open)
		ratio = o50 / c50
		t.Logf("try %d: p50 of the best round: closed loop ×1 %v, open loop at 2000/s ×1 %v (%.2fx); rounds closed %v, open %v",
			try+1, time.Duration(c50), time.Duration(o50), ratio, closed, open)
		if ratio <= 8 {
			return
		}
	}
	t.Errorf("open-loop p50 was %.1fx the closed loop's in the last of three tries; want at most 8x in one", ratio)
}
