package strategy_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/redisx-go/kit/internal/launcher"
	"github.com/redisx-go/kit/redisx"
	"github.com/redisx-go/kit/redisxtest"
	"github.com/redisx-go/kit/strategy"
	"github.com/redisx-go/kit/strategy/strategytest"
	"go.uber.org/goleak"
)

func TestClusterConformance(t *testing.T) {
	cl := launcher.ClusterForTest(t, launcher.ClusterOptions{Replicas: 1})
	for _, tc := range []struct {
		name string
		s    strategy.Strategy
	}{
		{"multiplexed", strategy.Multiplexed{}},
		{"pool", strategy.Pool{Size: 16}},
		{"slot-grouped", strategy.SlotGrouped{}},
		{"slot-grouped-pool-batch3", strategy.SlotGrouped{Transport: strategy.Pool{Size: 16}, MaxBatch: 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			redisxtest.RunConformance(t, redisx.Options{Addrs: cl.Addrs(), Strategy: tc.s})
			runContractOnBackend(t, tc.s, cl.Addrs())
		})
	}
}

// runContractOnBackend runs strategytest's contract cases on backends of
// s opened directly, without the facade, on the servers at addrs: what
// strategytest.RunBackend checks on a standalone server behind its fault
// proxy (where a cluster cannot stand), a Backend's own handling of
// Close, of use after Close and of a context that has ended.
func runContractOnBackend(t *testing.T, s strategy.Strategy, addrs []string) {
	for _, c := range strategytest.ContractCases() {
		t.Run("Backend/"+c.Name, func(t *testing.T) {
			before := goleak.IgnoreCurrent()
			b, err := s.Open(edgeCtx(t, 10*time.Second), strategy.Config{Addrs: addrs, DialTimeout: 5 * time.Second, ReadTimeout: 3 * time.Second})
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			c.Run(t, strategytest.Fixture{
				Backend: b,
				Key:     func(name string) string { return "backend:" + t.Name() + ":" + name },
				Close: func() {
					if err := b.Close(); err != nil {
						t.Errorf("Close: %v", err)
					}
					if err := goleak.Find(before); err != nil {
						t.Errorf("goroutines left after Close: %v", err)
					}
				},
			})
		})
	}
}

func TestClusterModeIsDetectedAndKeysSpreadOverMasters(t *testing.T) {
	cl := launcher.ClusterForTest(t, launcher.ClusterOptions{})
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
