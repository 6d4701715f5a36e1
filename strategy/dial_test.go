package strategy_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redisx-go/kit/internal/launcher"
	"github.com/redisx-go/kit/redisx"
	"github.com/redisx-go/kit/strategy"
)

// Dials shared by callers with different contexts, and abandoned by
// Close.

// TestDialIsSharedNotBoundToOneCaller: caller A, with a short
// deadline, starts the dial of a server slow to accept; caller B, without
// a deadline, waits for the same dial. A gets its own context's error, B
// its value: A's deadline does not end the dial B waits for.
func TestDialIsSharedNotBoundToOneCaller(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	for _, tc := range edgeTransports() {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := startProxy(t, srv.Addr())
			c := edgeNew(t, redisx.Options{Addrs: []string{p.addr()}, Strategy: tc.s})
			key := "edge:dial:" + tc.name
			if err := c.Set(edgeCtx(t, 5*time.Second), key, []byte("v"), time.Minute); err != nil {
				t.Fatalf("Set: %v", err)
			}
			breakConn(t, c, p, tc.name)
			for len(p.accepted) > 0 {
				<-p.accepted
			}
			const slow = time.Second
			p.delay.Store(int64(slow))

			errA := make(chan error, 1)
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
				defer cancel()
				_, err := c.Get(ctx, key)
				errA <- err
			}()
			select {
			case <-p.accepted: // A's dial is under way
			case <-time.After(5 * time.Second):
				t.Fatal("no dial 5s after A's call")
			}
			start := time.Now()
			v, err := c.Get(context.Background(), key)
			if err != nil || string(v) != "v" {
				t.Fatalf("B (no deadline) during A's dial: Get = %q, %v; want %q, nil", v, err, "v")
			}
			t.Logf("B got its value after %v", time.Since(start).Round(time.Millisecond))
			if err := <-errA; !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, redisx.ErrConnection) {
				t.Fatalf("A (200ms deadline, dial of %v): error = %v; want context.DeadlineExceeded alone", slow, err)
			}
		})
	}
}

// TestDialOutlivesItsFirstCaller checks the caller that starts the
// dial: it leaves at its deadline, and the dial still completes for the
// next caller, which finds the connection without dialling again.
func TestDialOutlivesItsFirstCaller(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	p := startProxy(t, srv.Addr())
	c := edgeNew(t, redisx.Options{Addrs: []string{p.addr()}, Strategy: strategy.Multiplexed{}})
	breakConn(t, c, p, "multiplexed")
	p.delay.Store(int64(300 * time.Millisecond))
	dials := c.Stats().Dials
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	_, err := c.Get(ctx, "edge:first")
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Get with 50ms deadline during a 300ms dial = %v; want context.DeadlineExceeded", err)
	}
	for deadline := time.Now().Add(5 * time.Second); c.Stats().Conns == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the dial abandoned by its caller did not complete: %+v", c.Stats().Stats)
		}
	}
	if _, err := c.Get(edgeCtx(t, 5*time.Second), "edge:first"); !errors.Is(err, redisx.ErrNotFound) {
		t.Fatalf("Get after the dial = %v; want ErrNotFound", err)
	}
	if got := c.Stats().Dials - dials; got != 1 {
		t.Fatalf("%d dials; want 1, shared by both calls", got)
	}
}

// TestSidePoolDialIsShared checks the shared dial of the dedicated connections of
// Multiplexed's blocking commands, dialled on first use: a BLPOP whose
// short deadline ends during that dial leaves alone; another BLPOP
// without deadline, waiting for the same dial, runs.
func TestSidePoolDialIsShared(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	p := startProxy(t, srv.Addr())
	c := edgeNew(t, redisx.Options{Addrs: []string{p.addr()}, Strategy: strategy.Multiplexed{Blocking: 1}})
	for len(p.accepted) > 0 {
		<-p.accepted
	}
	p.delay.Store(int64(time.Second))
	errA := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		_, err := c.Do(ctx, "BLPOP", "edge:side", 5)
		errA <- err
	}()
	select {
	case <-p.accepted:
	case <-time.After(5 * time.Second):
		t.Fatal("no dial 5s after the first BLPOP")
	}
	if v, err := c.Do(context.Background(), "BLPOP", "edge:side", "0.01"); err != nil || v != nil {
		t.Fatalf("BLPOP without deadline during the first one's dial = %v, %v; want nil, nil", v, err)
	}
	if err := <-errA; !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, redisx.ErrConnection) {
		t.Fatalf("BLPOP with a 200ms deadline during a 1s dial: error = %v; want context.DeadlineExceeded alone", err)
	}
}

// TestCloseAbortsDial checks that Close does not wait for a dial in
// progress — it is the node's, not a caller's — and that the caller
// waiting for it gets ErrClosed.
func TestCloseAbortsDial(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	for _, tc := range edgeTransports() {
		t.Run(tc.name, func(t *testing.T) {
			p := startProxy(t, srv.Addr())
			c := edgeNew(t, redisx.Options{Addrs: []string{p.addr()}, Strategy: tc.s})
			breakConn(t, c, p, tc.name)
			for len(p.accepted) > 0 {
				<-p.accepted
			}
			p.delay.Store(int64(time.Minute)) // far beyond DialTimeout (5 s)
			errs := make(chan error, 1)
			go func() {
				_, err := c.Get(context.Background(), "edge:close")
				errs <- err
			}()
			select {
			case <-p.accepted:
			case <-time.After(5 * time.Second):
				t.Fatal("no dial 5s after the call")
			}
			start := time.Now()
			if err := c.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			if took := time.Since(start); took > 2*time.Second {
				t.Errorf("Close during a dial took %v; want it to abort the dial (< 2s)", took)
			}
			select {
			case err := <-errs:
				if !errors.Is(err, redisx.ErrClosed) {
					t.Errorf("call waiting for a dial during Close: error = %v; want ErrClosed", err)
				}
			case <-time.After(2 * time.Second):
				t.Fatal("call waiting for a dial still waits 2s after Close")
			}
		})
	}
}
