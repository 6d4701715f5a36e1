package benchmarks

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/redisx-go/kit/internal/launcher"
)

// TestDeploymentOfATLSClusterReachesItsMastersTLSPorts: the harness finds
// a TLS cluster's masters from CLUSTER SHARDS, which lists both ports of
// every node; it must take the TLS ones, on which its own connections to
// each master (INFO, CLIENT LIST, the cleanup) are made.
func TestDeploymentOfATLSClusterReachesItsMastersTLSPorts(t *testing.T) {
	if os.Getenv("REDISX_TEST_CLUSTER") != "" {
		t.Skip("needs a TLS cluster of its own, not the external one REDISX_TEST_CLUSTER names")
	}
	tl, err := launcher.NewTLS(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cl := launcher.ClusterForTest(t, launcher.ClusterOptions{TLS: tl})
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if err := cl.WaitOK(ctx); err != nil {
		t.Fatal(err)
	}
	d, err := openDeployment(ctx, cl.TLSAddrs()[:1], true, Servers{TLS: tl.ClientConfig()})
	if err != nil {
		t.Fatalf("openDeployment over TLS: %v", err)
	}
	defer d.close()
	masters, err := cl.Masters(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var want, got []string
	for _, m := range masters {
		want = append(want, m.TLSAddr())
	}
	for _, n := range d.nodes {
		got = append(got, n.addr)
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("the harness's nodes are %q; want the masters' TLS addresses %q", got, want)
	}
}
