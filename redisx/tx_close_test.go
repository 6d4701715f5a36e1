package redisx_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redisx-go/kit/internal/launcher"
	"github.com/redisx-go/kit/localcache"
	"github.com/redisx-go/kit/redisx"
	"github.com/redisx-go/kit/strategy"
)

// TestCloseDoesNotWaitForWatchOverSentinel: over Sentinel, as over a
// server or a cluster (the conformance suite's WatchCloseReturnsPromptly),
// Close returns while a Watch callback waits for something that happens
// only after Close returns; the callback's calls then return ErrClosed,
// and so does Watch.
func TestCloseDoesNotWaitForWatchOverSentinel(t *testing.T) {
	g := launcher.SentinelForTest(t, launcher.SentinelOptions{Replicas: 1, Sentinels: 1})
	for _, tc := range []struct {
		name string
		s    strategy.Strategy
	}{
		{"multiplexed", strategy.Multiplexed{}},
		{"pool", strategy.Pool{Size: 4}},
		{"near", localcache.Near{MaxBytes: 1 << 20}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := redisx.Options{Sentinel: &redisx.SentinelOptions{Master: g.Name(), Addrs: g.SentinelAddrs()}}
			o.Strategy = tc.s
			c, err := redisx.New(t.Context(), o)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			inside, closed := make(chan struct{}), make(chan struct{})
			type outcome struct{ do, watch error }
			out := make(chan outcome, 1)
			go func() {
				var o outcome
				o.watch = c.Watch(context.Background(), func(tx *redisx.Tx) error {
					if _, err := tx.Do(context.Background(), "GET", "k"); err != nil {
						return err
					}
					close(inside)
					select {
					case <-closed:
					case <-time.After(10 * time.Second):
					}
					_, o.do = tx.Do(context.Background(), "GET", "k")
					return o.do
				}, "k")
				out <- o
			}()
			select {
			case <-inside:
			case o := <-out:
				t.Fatalf("Watch returned before Close: %v", o.watch)
			case <-time.After(5 * time.Second):
				t.Fatal("Watch's callback not called after 5s")
			}
			start := time.Now()
			c.Close()
			took := time.Since(start)
			close(closed)
			if took > 3*time.Second {
				t.Errorf("Close with a Watch callback running returned after %v; want it prompt", took.Round(time.Millisecond))
			}
			select {
			case o := <-out:
				if !errors.Is(o.do, redisx.ErrClosed) || !errors.Is(o.watch, redisx.ErrClosed) {
					t.Errorf("tx.Do after Close = %v, Watch = %v; want ErrClosed", o.do, o.watch)
				}
			case <-time.After(5 * time.Second):
				t.Error("Watch has not returned 5s after Close")
			}
		})
	}
}
