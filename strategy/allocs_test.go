package strategy_test

import (
	"context"
	"testing"
	"time"

	"github.com/redisx-go/kit/internal/launcher"
	"github.com/redisx-go/kit/redisx"
	"github.com/redisx-go/kit/strategy"
)

// TestAllocationsPerCall is bar P7: a GET allocates at most twice (the
// value, and one more) and a SET at most once, through the facade, on
// Multiplexed and Pool. Allocation counts do not depend on timing, so this
// bar is a unit test; it runs without -race only (see raceEnabled).
func TestAllocationsPerCall(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are distorted by the race detector; run without -race (make allocs)")
	}
	srv := launcher.Standalone(t, launcher.Options{})
	for _, tc := range []struct {
		name string
		s    strategy.Strategy
	}{
		{"multiplexed", strategy.Multiplexed{}},
		{"pool", strategy.Pool{Size: 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			c, err := redisx.New(ctx, redisx.Options{Addrs: []string{srv.Addr()}, Strategy: tc.s})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			v := make([]byte, 64)
			if err := c.Set(ctx, "allocs", v, 0); err != nil {
				t.Fatal(err)
			}
			get := testing.AllocsPerRun(2000, func() {
				if _, err := c.Get(ctx, "allocs"); err != nil {
					t.Fatal(err)
				}
			})
			set := testing.AllocsPerRun(2000, func() {
				if err := c.Set(ctx, "allocs", v, 0); err != nil {
					t.Fatal(err)
				}
			})
			setTTL := testing.AllocsPerRun(2000, func() {
				if err := c.Set(ctx, "allocs", v, time.Minute); err != nil {
					t.Fatal(err)
				}
			})
			t.Logf("allocations per call: Get %.2f, Set %.2f, Set with ttl %.2f", get, set, setTTL)
			if get > 2 {
				t.Errorf("Get allocates %.2f times per call, want <= 2", get)
			}
			if set > 1 || setTTL > 1 {
				t.Errorf("Set allocates %.2f (%.2f with ttl) times per call, want <= 1", set, setTTL)
			}
		})
	}
}
