package cluster_test

import (
	"testing"
	"time"

	"github.com/redisx-go/kit/internal/pool"
)

// TestClusterStatsFreshAndClosed checks a cluster client's Stats as it
// opens — every master known, the seed among them, no redirect, no refresh
// — and after Close: the strategy still named, nothing open, the counters
// kept.
func TestClusterStatsFreshAndClosed(t *testing.T) {
	cl := sharedCluster.Get(t)
	for _, tc := range []struct {
		name string
		s    opener
	}{
		{"multiplexed", multiplexed},
		{"pool", pooled(4)},
		{"slot-grouped/multiplexed", slotGrouped},
		{"slot-grouped/pool", opener{t: pool.Options{Size: 4}, grouped: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := openDo(t, tc.s, cl.Addrs())
			st := d.Stats()
			if st.Strategy != tc.name || st.Masters != 3 || st.Nodes != 3 || st.Conns < 1 || st.Dials < 1 ||
				st.Redirects != 0 || st.TopologyRefreshes != 0 || st.DialErrors != 0 {
				t.Errorf("fresh Stats = %+v; want Strategy %q, 3 masters, 3 nodes, a connection and a dial, no redirect nor refresh", st, tc.name)
			}
			_, keys := masterKeys(t, cl, "stats:")
			for _, k := range keys {
				if err := d.Set(t.Context(), k, []byte("v"), time.Minute); err != nil {
					t.Fatalf("Set(%q): %v", k, err)
				}
			}
			open := d.Stats()
			if open.Conns < 3 || open.Dials < 3 {
				t.Errorf("Stats after a write on every master = %+v; want a connection and a dial per master", open)
			}
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
			closed := d.Stats()
			if closed.Strategy != tc.name || closed.Conns != 0 || closed.Nodes != 0 || closed.Masters != 0 ||
				closed.InUse != 0 || closed.Idle != 0 || closed.Dials != open.Dials {
				t.Errorf("Stats after Close = %+v; want Strategy %q, nothing open, Dials %d kept", closed, tc.name, open.Dials)
			}
		})
	}
}
