package localcache_test

import (
	"testing"

	"github.com/redisx-go/kit/localcache"
	"github.com/redisx-go/kit/strategy"
	"github.com/redisx-go/kit/strategy/strategytest"
)

// TestBackendContract runs the Backend-level suite, fault scenarios (R5)
// included, for the near-cache around each transport. Near's
// invalidation connections go through the proxy too, so they meet the
// same faults.
func TestBackendContract(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    localcache.Near
	}{
		{"multiplexed", localcache.Near{MaxBytes: testMaxBytes, Inner: strategy.Multiplexed{}}},
		{"pool-size=4", localcache.Near{MaxBytes: testMaxBytes, Inner: strategy.Pool{Size: 4}}},
	} {
		t.Run(tc.name, func(t *testing.T) { strategytest.RunBackend(t, tc.s.Open) })
	}
}

// TestPoolExhaustion: R5's exhausted pool, behind the near-cache.
func TestPoolExhaustion(t *testing.T) {
	strategytest.PoolExhaustion(t, localcache.Near{MaxBytes: testMaxBytes, Inner: strategy.Pool{Size: 2}}.Open, 2)
}

// testMaxBytes bounds the caches of the suites, which check behaviour,
// not capacity: ristretto's Close clears every counter of its sketch,
// 0.2–0.4 s for the 64 MiB default under -race, once per subtest.
const testMaxBytes = 1 << 20
