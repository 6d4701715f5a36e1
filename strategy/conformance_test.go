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

func TestMultiplexedConformance(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	for _, tc := range []struct {
		name string
		s    strategy.Multiplexed
	}{
		{"conns=1", strategy.Multiplexed{}},
		{"conns=4", strategy.Multiplexed{Conns: 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			redisxtest.RunConformance(t, redisx.Options{Addrs: []string{srv.Addr()}, Strategy: tc.s})
		})
	}
}

func TestPoolConformance(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	for _, tc := range []struct {
		name string
		s    strategy.Pool
	}{
		{"size=default", strategy.Pool{}},
		{"size=8-minidle=2", strategy.Pool{Size: 8, MinIdle: 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			redisxtest.RunConformance(t, redisx.Options{Addrs: []string{srv.Addr()}, Strategy: tc.s})
		})
	}
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
