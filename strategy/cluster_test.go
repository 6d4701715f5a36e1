package strategy_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/redisx-go/kit/redisx"
	"github.com/redisx-go/kit/redisxtest"
	"github.com/redisx-go/kit/strategy"
	"github.com/redisx-go/kit/strategy/strategytest"
)

// TestClusterConformance runs the suite over each transport, and over
// SlotGrouped, on a cluster. SlotGrouped over a Pool with MaxBatch 3 ran
// no statement of the module that these and the standalone runs did not
// (-coverpkg=./...): its grouping is SlotGrouped's over Multiplexed here,
// its batches of 3 those of TestSlotGroupedConformance, its pooled
// cluster nodes Pool's here.
func TestClusterConformance(t *testing.T) {
	cl := sharedCluster.Get(t)
	for _, tc := range []struct {
		name string
		s    strategy.Strategy
	}{
		{"multiplexed", strategy.Multiplexed{}},
		{"pool", strategy.Pool{Size: 16}},
		{"slot-grouped", strategy.SlotGrouped{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			redisxtest.RunConformance(t, redisx.Options{Addrs: cl.Addrs(), Strategy: tc.s})
			// The same contract on the Backend itself, without the
			// facade's own checks in front.
			t.Run("Backend", func(t *testing.T) {
				strategytest.RunContractOn(t, tc.s.Open, strategy.Config{Addrs: cl.Addrs(), DialTimeout: 5 * time.Second, ReadTimeout: 3 * time.Second})
			})
		})
	}
}

func TestClusterModeIsDetectedAndKeysSpreadOverMasters(t *testing.T) {
	cl := sharedCluster.Get(t)
	for _, s := range []strategy.Strategy{strategy.Multiplexed{}, strategy.Pool{Size: 4}} {
		ctx := t.Context()
		c, err := redisx.New(ctx, redisx.Options{Addrs: cl.Addrs()[:1], Strategy: s})
		if err != nil {
			t.Fatalf("New(%T): %v", s, err)
		}
		for i := 0; i < 300; i++ {
			k := fmt.Sprintf("spread:%d", i)
			if err := c.Set(ctx, k, []byte(k), time.Minute); err != nil {
				t.Fatalf("Set(%q): %v", k, err)
			}
		}
		st := c.Stats()
		if st.Masters != 3 || st.Nodes < 3 {
			t.Fatalf("%T on a 3-master cluster: Stats().Masters = %d, Nodes = %d; want 3, >= 3", s, st.Masters, st.Nodes)
		}
		masters, err := cl.Masters(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range masters {
			out, err := m.CLI(ctx, "DBSIZE")
			if err != nil || out == "0" {
				t.Fatalf("master %s holds %q keys (%v); want some of the 300", m.Addr(), out, err)
			}
		}
		if st.Redirects != 0 {
			t.Errorf("%T: %d redirects with a fresh slot map, want 0", s, st.Redirects)
		}
		c.Close()
	}
}
