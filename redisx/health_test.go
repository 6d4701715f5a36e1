package redisx_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisx-go/kit/internal/launcher"
	"github.com/redisx-go/kit/localcache"
	"github.com/redisx-go/kit/redisx"
	"github.com/redisx-go/kit/strategy"
	"github.com/redisx-go/kit/strategy/goredis"
)

// strategiesFor returns every strategy of the module for a server at addr.
func strategiesFor(t *testing.T, addr string) []strategy.Strategy {
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { rdb.Close() })
	return []strategy.Strategy{
		strategy.Multiplexed{},
		strategy.Pool{Size: 2},
		strategy.SlotGrouped{},
		localcache.Near{},
		goredis.Strategy{Client: rdb},
	}
}

func TestPing(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	for _, s := range strategiesFor(t, srv.Addr()) {
		t.Run(fmt.Sprintf("%T", s), func(t *testing.T) {
			ctx := t.Context()
			c, err := redisx.New(ctx, redisx.Options{Addrs: []string{srv.Addr()}, Strategy: s})
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Ping(ctx); err != nil {
				t.Errorf("Ping = %v; want nil", err)
			}
			c.Close()
			if err := c.Ping(ctx); !errors.Is(err, redisx.ErrClosed) {
				t.Errorf("Ping after Close = %v; want ErrClosed", err)
			}
		})
	}
}

// TestPingFailsWhenServerIsGone: with the server killed, Ping reports a
// connection failure within its deadline.
func TestPingFailsWhenServerIsGone(t *testing.T) {
	if launcher.External() {
		t.Skip("kills the server")
	}
	srv := launcher.Standalone(t, launcher.Options{})
	ctx := t.Context()
	c, err := redisx.New(ctx, redisx.Options{Addrs: []string{srv.Addr()}, DialTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := srv.Kill(); err != nil {
		t.Fatal(err)
	}
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	err = c.Ping(pctx)
	if !errors.Is(err, redisx.ErrConnection) && !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Ping of a killed server = %v; want ErrConnection or the deadline", err)
	}
}

func TestPingChecksReply(t *testing.T) {
	ctx := context.Background()
	f := newFakeAppend()
	f.do = func([]any) (any, error) { return "OK", nil }
	c := redisx.NewFromBackend(f)
	defer c.Close()
	if err := c.Ping(ctx); !errors.Is(err, redisx.ErrConnection) {
		t.Errorf("Ping answered OK = %v; want ErrConnection", err)
	}
	f2 := newFakeAppend()
	c2 := redisx.NewFromBackend(f2)
	defer c2.Close()
	if err := c2.Ping(ctx); err != nil {
		t.Errorf("Ping answered PONG = %v; want nil", err)
	}
}

// TestStatsFromNewToAfterClose: Stats works on a fresh client and after
// Close, naming the strategy both times, with no connection left after
// Close.
func TestStatsFromNewToAfterClose(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	for _, s := range strategiesFor(t, srv.Addr()) {
		t.Run(fmt.Sprintf("%T", s), func(t *testing.T) {
			ctx := t.Context()
			c, err := redisx.New(ctx, redisx.Options{Addrs: []string{srv.Addr()}, Strategy: s})
			if err != nil {
				t.Fatal(err)
			}
			fresh := c.Stats()
			if fresh.Strategy == "" {
				t.Errorf("Stats() of a new client has no Strategy name: %+v", fresh)
			}
			if fresh.Loads != 0 || fresh.SharedLoads != 0 {
				t.Errorf("Stats() of a new client counts loads: %+v", fresh)
			}
			if _, err := c.GetOrLoad(ctx, "stats:"+fresh.Strategy, time.Minute, func(context.Context) ([]byte, error) { return []byte("v"), nil }); err != nil {
				t.Fatal(err)
			}
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			after := c.Stats()
			if after.Strategy != fresh.Strategy {
				t.Errorf("Stats().Strategy after Close = %q; want %q", after.Strategy, fresh.Strategy)
			}
			if after.Loads > 1 {
				t.Errorf("Stats().Loads after Close = %d; want at most 1", after.Loads)
			}
			// GoRedis leaves a client it did not make open (CloseClient).
			if _, adopted := s.(goredis.Strategy); !adopted && after.Conns != 0 {
				t.Errorf("Stats().Conns after Close = %d; want 0", after.Conns)
			}
		})
	}
}
