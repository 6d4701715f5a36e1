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

// TestNearConformance runs the conformance suite on Near in each tracking
// mode: TrackKeys (the default) over every transport that can be tracked
// per key, TrackBroadcast over GoRedis (whose connections cannot be
// tracked per key) and TrackNone over Multiplexed. What Near runs depends
// on the mode (its invalidation connections, or none) and on the inner
// backend's capabilities (TTL reads, dedicated connections, Do), which
// these pairs cover: TrackBroadcast over Multiplexed and TrackNone over
// GoRedis run no statement the others do not (-coverpkg=./...).
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
		{"keys/multiplexed", localcache.Near{MaxBytes: testMaxBytes}},
		{"keys/pool", localcache.Near{MaxBytes: testMaxBytes, Inner: strategy.Pool{Size: 16}}},
		{"keys/slot-grouped", localcache.Near{MaxBytes: testMaxBytes, Inner: strategy.SlotGrouped{}, NegativeTTL: 0}},
		{"broadcast/go-redis", localcache.Near{MaxBytes: testMaxBytes, Inner: goredis.Strategy{Client: rdb}, Tracking: localcache.TrackBroadcast}},
		{"none/multiplexed", localcache.Near{MaxBytes: testMaxBytes, Tracking: localcache.TrackNone}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			redisxtest.RunConformance(t, redisx.Options{Addrs: []string{srv.Addr()}, Strategy: tc.s})
		})
	}
}

func TestNearClusterConformance(t *testing.T) {
	cl := sharedCluster.Get(t)
	for _, tc := range []struct {
		name string
		s    localcache.Near
	}{
		{"keys/multiplexed", localcache.Near{MaxBytes: testMaxBytes}},
		{"keys/slot-grouped-pool", localcache.Near{MaxBytes: testMaxBytes, Inner: strategy.SlotGrouped{Transport: strategy.Pool{Size: 16}}}},
		{"broadcast/multiplexed", localcache.Near{MaxBytes: testMaxBytes, Tracking: localcache.TrackBroadcast}},
		{"none/slot-grouped", localcache.Near{MaxBytes: testMaxBytes, Inner: strategy.SlotGrouped{}, Tracking: localcache.TrackNone}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			redisxtest.RunConformance(t, redisx.Options{Addrs: cl.Addrs(), Strategy: tc.s})
		})
	}
}
