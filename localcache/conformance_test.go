package localcache_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/redisx-go/kit/internal/launcher"
	"github.com/redisx-go/kit/localcache"
	"github.com/redisx-go/kit/redisx"
	"github.com/redisx-go/kit/redisxtest"
	"github.com/redisx-go/kit/strategy"
	"github.com/redisx-go/kit/strategy/goredis"
)

func TestNearConformance(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), PoolSize: 64, ContextTimeoutEnabled: true})
	t.Cleanup(func() { rdb.Close() })
	if err := rdb.Ping(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		s    localcache.Near
	}{
		{"multiplexed", localcache.Near{MaxBytes: testMaxBytes}},
		{"pool", localcache.Near{MaxBytes: testMaxBytes, Inner: strategy.Pool{Size: 16}}},
		{"slot-grouped", localcache.Near{MaxBytes: testMaxBytes, Inner: strategy.SlotGrouped{}, NegativeTTL: 0}},
		{"go-redis", localcache.Near{MaxBytes: testMaxBytes, Inner: goredis.Strategy{Client: rdb}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			redisxtest.RunConformance(t, redisx.Options{Addrs: []string{srv.Addr()}, Strategy: tc.s})
		})
	}
}

func TestNearClusterConformance(t *testing.T) {
	cl := launcher.ClusterForTest(t, launcher.ClusterOptions{Replicas: 1})
	for _, tc := range []struct {
		name string
		s    localcache.Near
	}{
		{"multiplexed", localcache.Near{MaxBytes: testMaxBytes}},
		{"slot-grouped-pool", localcache.Near{MaxBytes: testMaxBytes, Inner: strategy.SlotGrouped{Transport: strategy.Pool{Size: 16}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			redisxtest.RunConformance(t, redisx.Options{Addrs: cl.Addrs(), Strategy: tc.s})
		})
	}
}
