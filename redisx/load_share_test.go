package redisx_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	goredislib "github.com/redis/go-redis/v9"

	"github.com/redisx-go/kit/internal/launcher"
	"github.com/redisx-go/kit/localcache"
	"github.com/redisx-go/kit/redisx"
	"github.com/redisx-go/kit/strategy"
	"github.com/redisx-go/kit/strategy/goredis"
)

// lateKey marks the context of the caller whose read lateBackend holds.
type lateKey struct{}

// lateHold is where lateBackend holds the marked read: read is closed
// once the read has its reply, and the reply is returned once release is
// closed.
type lateHold struct {
	held    atomic.Bool
	read    chan struct{}
	release chan struct{}
}

func newLateHold() *lateHold {
	return &lateHold{read: make(chan struct{}), release: make(chan struct{})}
}

// hold holds the first read of a marked context, after its reply.
func (h *lateHold) hold(ctx context.Context) {
	if ctx.Value(lateKey{}) != nil && h.held.CompareAndSwap(false, true) {
		close(h.read)
		<-h.release
	}
}

// lateStrategy opens inner and wraps its backend in a lateBackend: a
// caller that got its reply and was then descheduled for a while, as on a
// busy machine, made deterministic.
type lateStrategy struct {
	inner strategy.Strategy
	h     *lateHold
}

func (s lateStrategy) Open(ctx context.Context, cfg strategy.Config) (strategy.Backend, error) {
	b, err := s.inner.Open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if _, ok := b.(strategy.TTLGetter); ok {
		return lateTTLBackend{lateBackend{b, s.h}}, nil
	}
	return lateBackend{b, s.h}, nil
}

type lateBackend struct {
	strategy.Backend
	h *lateHold
}

func (b lateBackend) Get(ctx context.Context, key string) ([]byte, error) {
	v, err := b.Backend.Get(ctx, key)
	b.h.hold(ctx)
	return v, err
}

// lateTTLBackend is a lateBackend over a strategy.TTLGetter: the read of
// GetOrLoad with stale-while-revalidate.
type lateTTLBackend struct{ lateBackend }

func (b lateTTLBackend) GetWithTTL(ctx context.Context, key string) ([]byte, time.Duration, error) {
	v, ttl, err := b.Backend.(strategy.TTLGetter).GetWithTTL(ctx, key)
	b.h.hold(ctx)
	return v, ttl, err
}

func (b lateTTLBackend) MGetWithTTL(ctx context.Context, keys []string) ([][]byte, []time.Duration, error) {
	return b.Backend.(strategy.TTLGetter).MGetWithTTL(ctx, keys)
}

// TestGetOrLoadMissReadBeforeTheStoreSharesTheLoad: a caller whose read
// of the key missed while a load of it ran — its GET answered before the
// load's SET — but who comes to join the load only once it has ended
// (the reply was in, the goroutine was not running: a busy machine) gets
// the loaded value; it does not load the key a second time. Concurrent
// misses share one load, however late the scheduler lets the caller
// reach it. On every strategy that GetOrLoad runs over.
func TestGetOrLoadMissReadBeforeTheStoreSharesTheLoad(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	cl := launcher.ClusterForTest(t, launcher.ClusterOptions{})
	rdb := goredislib.NewClient(&goredislib.Options{Addr: srv.Addr()})
	t.Cleanup(func() { rdb.Close() })
	cases := []struct {
		name  string
		s     strategy.Strategy
		addrs []string
		swr   time.Duration
	}{
		{"Multiplexed", strategy.Multiplexed{}, []string{srv.Addr()}, 0},
		{"Multiplexed/StaleWhileRevalidate", strategy.Multiplexed{}, []string{srv.Addr()}, time.Minute},
		{"Pool", strategy.Pool{Size: 4}, []string{srv.Addr()}, 0},
		{"goredis", goredis.Strategy{Client: rdb}, []string{srv.Addr()}, 0},
		{"Near", localcache.Near{}, []string{srv.Addr()}, 0},
		{"Near/Pool", localcache.Near{Inner: strategy.Pool{Size: 4}}, []string{srv.Addr()}, 0},
		{"cluster/Multiplexed", strategy.Multiplexed{}, cl.Addrs(), 0},
		{"cluster/SlotGrouped", strategy.SlotGrouped{}, cl.Addrs(), 0},
		{"cluster/Near", localcache.Near{Inner: strategy.SlotGrouped{}}, cl.Addrs(), 0},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			h := newLateHold()
			c, err := redisx.New(ctx, redisx.Options{Addrs: tc.addrs, Strategy: lateStrategy{tc.s, h}, StaleWhileRevalidate: tc.swr})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			k := fmt.Sprintf("getorload:late:%d:%d", i, time.Now().UnixNano())
			var loads atomic.Int32
			release := make(chan struct{})
			load := func(ctx context.Context) ([]byte, error) {
				loads.Add(1)
				select {
				case <-release:
					return []byte("loaded"), nil
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
			type result struct {
				v   []byte
				err error
			}
			call := func(ctx context.Context) chan result {
				ch := make(chan result, 1)
				go func() {
					v, err := c.GetOrLoad(ctx, k, time.Minute, load)
					ch <- result{v, err}
				}()
				return ch
			}

			first := call(ctx)
			waitFor(t, "the first caller's load", func() bool { return loads.Load() == 1 })
			late := call(context.WithValue(ctx, lateKey{}, true))
			select {
			case <-h.read: // its GET missed: the load has not stored yet
			case <-time.After(5 * time.Second):
				t.Fatal("the late caller's read never came")
			}
			close(release)
			if r := <-first; r.err != nil || string(r.v) != "loaded" {
				t.Fatalf("first GetOrLoad = %q, %v; want %q, nil", r.v, r.err, "loaded")
			}
			// The load has returned, its value is stored: now the late
			// caller goes on with the miss it read before.
			close(h.release)
			if r := <-late; r.err != nil || string(r.v) != "loaded" {
				t.Fatalf("late GetOrLoad = %q, %v; want %q, nil", r.v, r.err, "loaded")
			}
			if n := loads.Load(); n != 1 {
				t.Errorf("two callers that missed while one load ran called the loader %d times; want 1", n)
			}
		})
	}
}
