package redisx_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redisx-go/kit/internal/launcher"
	"github.com/redisx-go/kit/localcache"
	"github.com/redisx-go/kit/redisx"
	"github.com/redisx-go/kit/strategy"
)

// TestGetOrLoadStaleWhileRevalidate: inside the grace period a stale value
// is served at once while one background load refreshes it.
func TestGetOrLoadStaleWhileRevalidate(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	for _, s := range []strategy.Strategy{strategy.Multiplexed{}, strategy.Pool{Size: 4}, localcache.Near{}} {
		t.Run(fmt.Sprintf("%T", s), func(t *testing.T) {
			ctx := t.Context()
			c, err := redisx.New(ctx, redisx.Options{Addrs: []string{srv.Addr()}, Strategy: s, StaleWhileRevalidate: 2 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			key := fmt.Sprintf("swr:%T", s)
			var loads atomic.Int64
			release := make(chan struct{}, 10)
			load := func(ctx context.Context) ([]byte, error) {
				n := loads.Add(1)
				if n > 1 {
					select {
					case <-release:
					case <-ctx.Done():
						return nil, ctx.Err()
					}
				}
				return []byte(fmt.Sprint("v", n)), nil
			}
			v, err := c.GetOrLoad(ctx, key, 100*time.Millisecond, load)
			if err != nil || string(v) != "v1" {
				t.Fatalf("first GetOrLoad = %q, %v; want v1", v, err)
			}
			time.Sleep(150 * time.Millisecond) // past the ttl, well inside the 2 s grace period
			// The refresh blocks until released, so these calls returning
			// at all shows that stale reads do not wait for it.
			for i := 0; i < 5; i++ {
				v, err := c.GetOrLoad(ctx, key, 100*time.Millisecond, load)
				if err != nil || string(v) != "v1" {
					t.Fatalf("GetOrLoad in the grace period = %q, %v; want the stale v1", v, err)
				}
			}
			if st := c.Stats(); st.StaleServed < 5 {
				t.Fatalf("Stats().StaleServed = %d, want >= 5", st.StaleServed)
			}
			// Five stale reads started exactly one refresh (blocked until
			// released); it starts on its own goroutine, so wait for it.
			for deadline := time.Now().Add(2 * time.Second); loads.Load() < 2 && time.Now().Before(deadline); {
				time.Sleep(time.Millisecond)
			}
			if n := loads.Load(); n != 2 {
				t.Fatalf("loader ran %d times after 5 stale reads, want 2 (one background refresh)", n)
			}
			release <- struct{}{}
			deadline := time.Now().Add(2 * time.Second)
			for {
				v, err := c.GetOrLoad(ctx, key, 100*time.Millisecond, load)
				if err == nil && string(v) == "v2" {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("refreshed value never served: last %q, %v", v, err)
				}
				time.Sleep(5 * time.Millisecond)
			}
		})
	}
}

// TestGetOrLoadTTLJitterShortensTTL: stored ttls spread below the asked ttl.
func TestGetOrLoadTTLJitterShortensTTL(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	ctx := t.Context()
	c, err := redisx.New(ctx, redisx.Options{Addrs: []string{srv.Addr()}, TTLJitter: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	distinct := map[int64]bool{}
	for i := 0; i < 20; i++ {
		key := fmt.Sprint("jitter:", i)
		if _, err := c.GetOrLoad(ctx, key, 100*time.Second, func(context.Context) ([]byte, error) { return []byte("v"), nil }); err != nil {
			t.Fatal(err)
		}
		out, err := srv.CLI(ctx, "PTTL", key)
		if err != nil {
			t.Fatal(err)
		}
		var ms int64
		fmt.Sscan(out, &ms)
		if ms <= 49_000 || ms > 100_000 {
			t.Fatalf("PTTL(%s) = %d ms, want in (50 s, 100 s]", key, ms)
		}
		distinct[ms/1000] = true
	}
	if len(distinct) < 5 {
		t.Fatalf("20 jittered ttls fell in %d distinct seconds, want spread", len(distinct))
	}
}

func TestOptionsRejectBadCacheAside(t *testing.T) {
	for _, o := range []redisx.Options{{TTLJitter: 1}, {TTLJitter: -0.1}, {StaleWhileRevalidate: -time.Second}} {
		if _, err := redisx.New(t.Context(), o); !errors.Is(err, redisx.ErrInvalidArgument) {
			t.Errorf("New(%+v) error = %v, want ErrInvalidArgument", o, err)
		}
	}
}
