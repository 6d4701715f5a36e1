package cluster_test

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/redisx-go/kit/backend"
	"github.com/redisx-go/kit/internal/launcher"
)

// TestTLSCluster runs the router over a cluster that speaks TLS: the map
// must give the nodes' TLS ports, which CLUSTER SHARDS lists next to the
// plain ones (dialling the plain ports, every TLS handshake would fail).
func TestTLSCluster(t *testing.T) {
	if os.Getenv("REDISX_TEST_CLUSTER") != "" {
		t.Skip("needs a TLS cluster of its own, not the external one REDISX_TEST_CLUSTER names")
	}
	tl, err := launcher.NewTLS(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cl := launcher.ClusterForTest(t, launcher.ClusterOptions{TLS: tl})
	masters, keys := masterKeys(t, cl, "tls:")
	var want []string
	for _, m := range masters {
		want = append(want, m.TLSAddr())
	}
	for _, tc := range []tcase{
		{"multiplexed", multiplexed},
		{"pool", pooled(4)},
		{"slot-grouped", slotGrouped},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			d := open(t, tc.s, backend.Config{Addrs: cl.TLSAddrs()[:1], TLS: tl.ClientConfig(), DialTimeout: 2 * time.Second})
			// The masters the router routes to are the TLS addresses.
			if got := d.nodes.Masters(); !slices.Equal(got, want) {
				t.Errorf("Masters over TLS = %v; want the TLS addresses %v", got, want)
			}
			for _, k := range keys {
				if err := d.Set(ctx, k, []byte("v-"+k), time.Minute); err != nil {
					t.Fatalf("Set(%q) over TLS: %v", k, err)
				}
				if v, err := d.Get(ctx, k); err != nil || string(v) != "v-"+k {
					t.Fatalf("Get(%q) = %q, %v; want %q", k, v, err, "v-"+k)
				}
			}
			vs, err := d.MGet(ctx, append(slices.Clone(keys), "tls:missing"))
			if err != nil || len(vs) != len(keys)+1 || vs[len(keys)] != nil {
				t.Fatalf("MGet across the masters = %q, %v", vs, err)
			}
			for i, k := range keys {
				if string(vs[i]) != "v-"+k {
					t.Errorf("MGet[%d] (%q) = %q; want %q", i, k, vs[i], "v-"+k)
				}
			}
			st := d.Stats()
			if st.Masters != 3 || st.Redirects != 0 || st.DialErrors != 0 || st.Nodes != 3 {
				t.Errorf("Stats = %+v; want 3 masters, 3 nodes, no redirect, no failed dial", st)
			}
		})
	}
}
