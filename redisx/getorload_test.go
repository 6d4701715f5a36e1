package redisx_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redisx-go/kit/redisx"
)

// GetOrLoad over the in-memory backend of client_test.go: hits, loads,
// errors, shared loads and the waiters' contexts.

func TestGetOrLoadHitDoesNotLoad(t *testing.T) {
	ctx := context.Background()
	c, _ := newFakeClient(t)
	if err := c.Set(ctx, "k", []byte("cached"), 0); err != nil {
		t.Fatal(err)
	}
	v, err := c.GetOrLoad(ctx, "k", 0, func(context.Context) ([]byte, error) {
		t.Error("loader called on a hit")
		return nil, nil
	})
	if err != nil || string(v) != "cached" {
		t.Errorf("GetOrLoad(%q) = %q, %v; want %q, nil", "k", v, err, "cached")
	}
	if got := c.Stats().Loads; got != 0 {
		t.Errorf("Stats().Loads = %d; want 0", got)
	}
}

func TestGetOrLoadMissLoadsAndStores(t *testing.T) {
	ctx := context.Background()
	c, f := newFakeClient(t)
	v, err := c.GetOrLoad(ctx, "k", time.Minute, func(context.Context) ([]byte, error) { return []byte("fresh"), nil })
	if err != nil || string(v) != "fresh" {
		t.Fatalf("GetOrLoad(%q) = %q, %v; want %q, nil", "k", v, err, "fresh")
	}
	if got, ok := f.stored("k"); !ok || string(got) != "fresh" {
		t.Errorf("backend holds %q = %q, %v; want %q, true", "k", got, ok, "fresh")
	}
}

func TestGetOrLoadLoaderErrorWrapsErrLoadAndCause(t *testing.T) {
	c, f := newFakeClient(t)
	cause := errors.New("database down")
	v, err := c.GetOrLoad(context.Background(), "k", 0, func(context.Context) ([]byte, error) { return nil, cause })
	if !errors.Is(err, redisx.ErrLoad) || !errors.Is(err, cause) || v != nil {
		t.Errorf("GetOrLoad = %q, %v; want nil, an error wrapping ErrLoad and the loader's error", v, err)
	}
	if _, ok := f.stored("k"); ok {
		t.Errorf("a failed load stored a value")
	}
	if s := c.Stats(); s.Loads != 1 || s.LoadErrors != 1 {
		t.Errorf("Stats() Loads, LoadErrors = %d, %d; want 1, 1", s.Loads, s.LoadErrors)
	}
}

func TestGetOrLoadValueOverMaxValueSizeIsNotStored(t *testing.T) {
	c, f := newFakeClient(t)
	v, err := c.GetOrLoad(context.Background(), "k", 0, func(context.Context) ([]byte, error) { return tooBig(), nil })
	if !errors.Is(err, redisx.ErrLoad) || !errors.Is(err, redisx.ErrInvalidArgument) || v != nil {
		t.Errorf("GetOrLoad = %d bytes, %v; want nil, an error wrapping ErrLoad and ErrInvalidArgument", len(v), err)
	}
	if got := f.setCount(); got != 0 {
		t.Errorf("backend saw %d Set calls; want 0", got)
	}
}

func TestGetOrLoadNilValueStoresEmptyValue(t *testing.T) {
	ctx := context.Background()
	c, f := newFakeClient(t)
	v, err := c.GetOrLoad(ctx, "k", 0, func(context.Context) ([]byte, error) { return nil, nil })
	if err != nil || v == nil || len(v) != 0 {
		t.Fatalf("GetOrLoad = %#v, %v; want []byte{}, nil", v, err)
	}
	if got, ok := f.stored("k"); !ok || len(got) != 0 {
		t.Errorf("backend holds %q = %q, %v; want an empty value", "k", got, ok)
	}
	if got, err := c.Get(ctx, "k"); err != nil || got == nil || len(got) != 0 {
		t.Errorf("Get(%q) = %#v, %v; want []byte{}, nil", "k", got, err)
	}
}

func TestGetOrLoadGetErrorSkipsLoader(t *testing.T) {
	c, f := newFakeClient(t)
	f.setGetErr(fmt.Errorf("%w: fake reset", redisx.ErrConnection))
	var called atomic.Bool
	v, err := c.GetOrLoad(context.Background(), "k", 0, func(context.Context) ([]byte, error) {
		called.Store(true)
		return []byte("v"), nil
	})
	if !errors.Is(err, redisx.ErrConnection) || v != nil {
		t.Errorf("GetOrLoad = %q, %v; want nil, an error wrapping ErrConnection", v, err)
	}
	if called.Load() {
		t.Error("loader called although the cache could not be read")
	}
	if s := c.Stats(); s.Loads != 0 {
		t.Errorf("Stats().Loads = %d; want 0", s.Loads)
	}
}

// TestGetOrLoadCancelledWaiterLeavesLoadRunning starts a load that blocks,
// lets a second caller join it and cancels only that caller: it must
// return context.Canceled at once, while the load goes on and answers the
// first caller and a third one.
func TestGetOrLoadCancelledWaiterLeavesLoadRunning(t *testing.T) {
	c, f := newFakeClient(t)
	started := make(chan struct{})
	release := make(chan struct{})
	var loads atomic.Int32
	load := func(ctx context.Context) ([]byte, error) {
		loads.Add(1)
		close(started)
		select {
		case <-release:
			return []byte("v"), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}

	type result struct {
		v   []byte
		err error
	}
	first := make(chan result, 1)
	go func() {
		v, err := c.GetOrLoad(context.Background(), "k", 0, load)
		first <- result{v, err}
	}()
	<-started

	// The waiter has joined the load once its Get has missed: nothing
	// stands between that and singleflight.
	wctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	waiter := make(chan result, 1)
	go func() {
		v, err := c.GetOrLoad(wctx, "k", 0, load)
		waiter <- result{v, err}
	}()
	waitFor(t, "the waiter's Get", func() bool { return f.getCount() >= 2 })
	cancel()
	select {
	case r := <-waiter:
		if !errors.Is(r.err, context.Canceled) || r.v != nil {
			t.Errorf("cancelled waiter's GetOrLoad = %q, %v; want nil, context.Canceled", r.v, r.err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("cancelled waiter did not return while the load was running")
	}

	third := make(chan result, 1)
	go func() {
		v, err := c.GetOrLoad(context.Background(), "k", 0, load)
		third <- result{v, err}
	}()
	waitFor(t, "the third caller's Get", func() bool { return f.getCount() >= 3 })
	close(release)
	for name, ch := range map[string]chan result{"first": first, "third": third} {
		r := <-ch
		if r.err != nil || string(r.v) != "v" {
			t.Errorf("%s caller's GetOrLoad = %q, %v; want %q, nil", name, r.v, r.err, "v")
		}
	}
	if n := loads.Load(); n != 1 {
		t.Errorf("loader ran %d times; want 1", n)
	}
	if v, ok := f.stored("k"); !ok || string(v) != "v" {
		t.Errorf("backend holds %q = %q, %v; want %q, true", "k", v, ok, "v")
	}
}

func TestGetOrLoadWaiterDeadline(t *testing.T) {
	c, _ := newFakeClient(t)
	release := make(chan struct{})
	defer close(release)
	started := make(chan struct{})
	go c.GetOrLoad(context.Background(), "k", 0, func(context.Context) ([]byte, error) {
		close(started)
		<-release
		return []byte("v"), nil
	})
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	v, err := c.GetOrLoad(ctx, "k", 0, func(context.Context) ([]byte, error) { return []byte("other"), nil })
	if !errors.Is(err, context.DeadlineExceeded) || v != nil {
		t.Errorf("GetOrLoad past its deadline = %q, %v; want nil, context.DeadlineExceeded", v, err)
	}
}

// TestGetOrLoadStatsCountSharedLoads has n callers miss the same key while
// one load is blocked: one load runs, and the n-1 others are answered by
// it.
func TestGetOrLoadStatsCountSharedLoads(t *testing.T) {
	const n = 8
	c, f := newFakeClient(t)
	release := make(chan struct{})
	load := func(context.Context) ([]byte, error) {
		<-release
		return []byte("v"), nil
	}
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Go(func() {
			v, err := c.GetOrLoad(context.Background(), "k", 0, load)
			if err == nil && string(v) != "v" {
				err = fmt.Errorf("value %q; want %q", v, "v")
			}
			errs <- err
		})
	}
	waitFor(t, "every caller's Get", func() bool { return f.getCount() >= n })
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("GetOrLoad: %v", err)
		}
	}

	// A load for another key that fails, with no one sharing it.
	if _, err := c.GetOrLoad(context.Background(), "other", 0, func(context.Context) ([]byte, error) {
		return nil, errors.New("down")
	}); !errors.Is(err, redisx.ErrLoad) {
		t.Errorf("GetOrLoad(other) = %v; want ErrLoad", err)
	}

	s := c.Stats()
	if s.Loads != 2 || s.SharedLoads != n-1 || s.LoadErrors != 1 || s.StoreErrors != 0 {
		t.Errorf("Stats() Loads, SharedLoads, LoadErrors, StoreErrors = %d, %d, %d, %d; want 2, %d, 1, 0",
			s.Loads, s.SharedLoads, s.LoadErrors, s.StoreErrors, n-1)
	}
}

func TestGetOrLoadLeaderCancellationDoesNotFailOthers(t *testing.T) {
	c, f := newFakeClient(t)
	started := make(chan struct{})
	release := make(chan struct{})
	load := func(ctx context.Context) ([]byte, error) {
		close(started)
		select {
		case <-release:
			return []byte("v"), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	lctx, cancelLeader := context.WithCancel(context.Background())
	leader := make(chan error, 1)
	go func() {
		_, err := c.GetOrLoad(lctx, "k", 0, load)
		leader <- err
	}()
	<-started
	other := make(chan []byte, 1)
	go func() {
		v, err := c.GetOrLoad(context.Background(), "k", 0, load)
		if err != nil {
			t.Errorf("other caller's GetOrLoad error = %v after the leader was cancelled; want nil", err)
		}
		other <- v
	}()
	waitFor(t, "the other caller's Get", func() bool { return f.getCount() >= 2 })
	cancelLeader()
	if err := <-leader; !errors.Is(err, context.Canceled) {
		t.Fatalf("leader's GetOrLoad error = %v, want context.Canceled", err)
	}
	close(release)
	if v := <-other; string(v) != "v" {
		t.Fatalf("other caller's GetOrLoad = %q, want %q", v, "v")
	}
}
