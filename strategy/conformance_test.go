package strategy_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/redisx-go/kit/internal/launcher"
	"github.com/redisx-go/kit/redisx"
	"github.com/redisx-go/kit/redisxtest"
	"github.com/redisx-go/kit/strategy"
	"github.com/redisx-go/kit/strategy/goredis"
)

// TestMultiplexedConformance runs the suite over Multiplexed with
// several connections. The zero value, one connection and its lanes, is
// held to it on a standalone server by redisxtest's own test
// (TestRunConformanceOnAStrategyOfYourOwn, through a wrapper that
// unwraps to it), on a cluster by TestClusterConformance and under Near
// by localcache's: a run of it here ran no statement of the module that
// Conns: 4 and those runs did not (-coverpkg=./...), but for two
// branches of the read side taken when a reply has not wholly arrived,
// which the cancellation storms reach or not by the timing of one run.
func TestMultiplexedConformance(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	redisxtest.RunConformance(t, redisx.Options{Addrs: []string{srv.Addr()}, Strategy: strategy.Multiplexed{Conns: 4}})
}

// TestPoolConformance runs the suite over a Pool of 8 that keeps 2 idle
// connections. The default size is one more value of Size, which Pool
// uses as any other: a run over Pool{} ran no statement of the module
// that this one and the other strategies' runs did not but the one that
// sets the default (-coverpkg=./...), which the Client's tests over
// Pool{} run.
func TestPoolConformance(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	redisxtest.RunConformance(t, redisx.Options{Addrs: []string{srv.Addr()}, Strategy: strategy.Pool{Size: 8, MinIdle: 2}})
}

func TestGoRedisConformance(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), PoolSize: 64, ContextTimeoutEnabled: true})
	t.Cleanup(func() { rdb.Close() })
	if err := rdb.Ping(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	redisxtest.RunConformance(t, redisx.Options{Addrs: []string{srv.Addr()}, Strategy: goredis.Strategy{Client: rdb}})
}

func TestSlotGroupedConformance(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	for _, tc := range []struct {
		name string
		s    strategy.SlotGrouped
	}{
		{"multiplexed", strategy.SlotGrouped{}},
		{"pool-batch3", strategy.SlotGrouped{Transport: strategy.Pool{Size: 8}, MaxBatch: 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			redisxtest.RunConformance(t, redisx.Options{Addrs: []string{srv.Addr()}, Strategy: tc.s})
		})
	}
}
