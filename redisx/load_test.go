package redisx_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redisx-go/kit/redisx"
	"go.uber.org/goleak"
)

// TestGetOrLoadSharedLoadGivesEachCallerItsOwnSlice has two callers share
// one load and modify what they got: neither sees the other's change, and
// the cache still holds the loaded value.
func TestGetOrLoadSharedLoadGivesEachCallerItsOwnSlice(t *testing.T) {
	ctx := context.Background()
	c, f := newFakeClient(t)
	release := make(chan struct{})
	var loads atomic.Int32
	load := func(context.Context) ([]byte, error) {
		loads.Add(1)
		<-release
		return []byte("loaded"), nil
	}
	got := make([][]byte, 2)
	var wg sync.WaitGroup
	for i := range got {
		wg.Go(func() {
			v, err := c.GetOrLoad(ctx, "k", time.Minute, load)
			if err != nil {
				t.Errorf("GetOrLoad caller %d = %q, %v", i, v, err)
				return
			}
			got[i] = v
		})
	}
	waitFor(t, "both callers' Get", func() bool { return f.getCount() >= 2 })
	close(release)
	wg.Wait()
	if t.Failed() {
		return
	}
	if n := loads.Load(); n != 1 {
		t.Fatalf("loader ran %d times; want 1 shared load", n)
	}
	got[0][0] = 'A'
	got[1][0] = 'B'
	if string(got[0]) != "Aoaded" || string(got[1]) != "Boaded" {
		t.Errorf("after each caller changed its result: %q and %q; want %q and %q", got[0], got[1], "Aoaded", "Boaded")
	}
	if v, err := c.Get(ctx, "k"); err != nil || string(v) != "loaded" {
		t.Errorf("Get(%q) = %q, %v; want %q", "k", v, err, "loaded")
	}
}

type ctxKey struct{}

// TestGetOrLoadLoadOutlivesFirstCallersDeadline: A (50 ms) starts a load
// of 300 ms that B (2 s) joins. A gives up on its own deadline, B gets
// the value, and the load ran with A's context values but saw neither
// A's deadline nor any cancellation.
func TestGetOrLoadLoadOutlivesFirstCallersDeadline(t *testing.T) {
	c, f := newFakeClient(t)
	started := make(chan struct{})
	type seen struct {
		value       any
		hasDeadline bool
		err         error
	}
	saw := make(chan seen, 1)
	var loads atomic.Int32
	load := func(ctx context.Context) ([]byte, error) {
		loads.Add(1)
		close(started)
		_, hasDeadline := ctx.Deadline()
		select {
		case <-time.After(300 * time.Millisecond):
		case <-ctx.Done():
		}
		saw <- seen{ctx.Value(ctxKey{}), hasDeadline, ctx.Err()}
		return []byte("v"), nil
	}

	actx, cancelA := context.WithTimeout(context.WithValue(context.Background(), ctxKey{}, "A"), 50*time.Millisecond)
	defer cancelA()
	aErr := make(chan error, 1)
	go func() {
		_, err := c.GetOrLoad(actx, "k", 0, load)
		aErr <- err
	}()
	<-started
	bctx, cancelB := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancelB()
	type result struct {
		v   []byte
		err error
	}
	b := make(chan result, 1)
	go func() {
		v, err := c.GetOrLoad(bctx, "k", 0, load)
		b <- result{v, err}
	}()
	waitFor(t, "B's Get", func() bool { return f.getCount() >= 2 })

	if err := <-aErr; !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("A's GetOrLoad = %v; want context.DeadlineExceeded", err)
	}
	if r := <-b; r.err != nil || string(r.v) != "v" {
		t.Errorf("B's GetOrLoad = %q, %v; want %q, nil", r.v, r.err, "v")
	}
	s := <-saw
	if s.err != nil || s.hasDeadline {
		t.Errorf("the load's context: err %v, deadline %v; want no cancellation and no deadline", s.err, s.hasDeadline)
	}
	if s.value != "A" {
		t.Errorf("the load's context value = %v; want the first caller's %q", s.value, "A")
	}
	if n := loads.Load(); n != 1 {
		t.Errorf("loader ran %d times; want 1", n)
	}
}

// TestGetOrLoadLoadCancelledWhenEveryWaiterLeaves: once the last caller
// waiting for a load gives up, the load's context is cancelled, and the
// next miss starts a new load rather than joining the abandoned one.
func TestGetOrLoadLoadCancelledWhenEveryWaiterLeaves(t *testing.T) {
	c, f := newFakeClient(t)
	started := make(chan struct{}, 1)
	cancelled := make(chan error, 1)
	var loads atomic.Int32
	blocking := func(ctx context.Context) ([]byte, error) {
		loads.Add(1)
		started <- struct{}{}
		<-ctx.Done()
		cancelled <- ctx.Err()
		return nil, ctx.Err()
	}
	ctx1, cancel1 := context.WithCancel(context.Background())
	ctx2, cancel2 := context.WithCancel(context.Background())
	errs := make(chan error, 2)
	go func() { _, err := c.GetOrLoad(ctx1, "k", 0, blocking); errs <- err }()
	<-started
	go func() { _, err := c.GetOrLoad(ctx2, "k", 0, blocking); errs <- err }()
	waitFor(t, "the second caller's Get", func() bool { return f.getCount() >= 2 })

	cancel1()
	if err := <-errs; !errors.Is(err, context.Canceled) {
		t.Errorf("first caller's GetOrLoad = %v; want context.Canceled", err)
	}
	select {
	case err := <-cancelled:
		t.Fatalf("load cancelled (%v) while a caller still waited for it", err)
	case <-time.After(50 * time.Millisecond):
	}
	cancel2()
	if err := <-errs; !errors.Is(err, context.Canceled) {
		t.Errorf("second caller's GetOrLoad = %v; want context.Canceled", err)
	}
	select {
	case err := <-cancelled:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("load's context ended with %v; want context.Canceled", err)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("load's context not cancelled after every caller left")
	}

	v, err := c.GetOrLoad(context.Background(), "k", 0, func(context.Context) ([]byte, error) {
		loads.Add(1)
		return []byte("fresh"), nil
	})
	if err != nil || string(v) != "fresh" {
		t.Errorf("GetOrLoad after the abandoned load = %q, %v; want %q, nil", v, err, "fresh")
	}
	if n := loads.Load(); n != 2 {
		t.Errorf("loader ran %d times; want 2 (the abandoned load, then a new one)", n)
	}
}

// TestGetOrLoadLoadTimeoutBoundsLoad: with Options.LoadTimeout, a load
// that outlasts it is cancelled although its caller would wait longer, and
// the caller gets ErrLoad wrapping context.DeadlineExceeded.
func TestGetOrLoadLoadTimeoutBoundsLoad(t *testing.T) {
	const loadTimeout = 100 * time.Millisecond
	f := newFake()
	c, err := redisx.New(context.Background(), redisx.Options{Strategy: fakeStrategy{f}, LoadTimeout: loadTimeout})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var deadline time.Time
	start := time.Now()
	v, err := c.GetOrLoad(context.Background(), "k", 0, func(ctx context.Context) ([]byte, error) {
		deadline, _ = ctx.Deadline()
		<-ctx.Done()
		return nil, ctx.Err()
	})
	elapsed := time.Since(start)
	if !errors.Is(err, redisx.ErrLoad) || !errors.Is(err, context.DeadlineExceeded) || v != nil {
		t.Errorf("GetOrLoad of a load past LoadTimeout = %q, %v; want nil, ErrLoad wrapping context.DeadlineExceeded", v, err)
	}
	if deadline.IsZero() || deadline.Sub(start) > loadTimeout+time.Second {
		t.Errorf("load's deadline %v after the call started; want about LoadTimeout %v", deadline.Sub(start), loadTimeout)
	}
	if elapsed < loadTimeout || elapsed > loadTimeout+3*time.Second {
		t.Errorf("GetOrLoad returned after %v; want about LoadTimeout %v", elapsed, loadTimeout)
	}
	if _, ok := f.stored("k"); ok {
		t.Error("a timed-out load stored a value")
	}
}

// TestCloseCancelsLoads: Close cancels a load in flight, its caller gets
// ErrClosed, and Close returns once the loader has, leaving no goroutine.
func TestCloseCancelsLoads(t *testing.T) {
	defer goleak.VerifyNone(t)
	c := redisx.NewFromBackend(newFake())
	started := make(chan struct{})
	errs := make(chan error, 1)
	go func() {
		_, err := c.GetOrLoad(context.Background(), "k", 0, func(ctx context.Context) ([]byte, error) {
			close(started)
			<-ctx.Done()
			return nil, ctx.Err()
		})
		errs <- err
	}()
	<-started
	done := make(chan error, 1)
	go func() { done <- c.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Close = %v", err)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("Close did not return with a load in flight")
	}
	if err := <-errs; !errors.Is(err, redisx.ErrClosed) {
		t.Errorf("GetOrLoad whose load Close cancelled = %v; want ErrClosed", err)
	}
}

func TestNewRejectsNegativeLoadTimeout(t *testing.T) {
	_, err := redisx.New(context.Background(), redisx.Options{Strategy: fakeStrategy{newFake()}, LoadTimeout: -time.Second})
	if !errors.Is(err, redisx.ErrInvalidArgument) {
		t.Errorf("New(LoadTimeout: -1s) = %v; want ErrInvalidArgument", err)
	}
}
