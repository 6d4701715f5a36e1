package benchmarks

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redisx-go/kit/internal/launcher"
)

// TestDeploymentOfATLSClusterReachesItsMastersTLSPorts: the harness finds
// a TLS cluster's masters from CLUSTER SHARDS, which lists both ports of
// every node; it must take the TLS ones, on which its own connections to
// each master (INFO, CLIENT LIST, the cleanup) are made.
func TestDeploymentOfATLSClusterReachesItsMastersTLSPorts(t *testing.T) {
	if err := launcher.Available(); err != nil || os.Getenv("REDISX_TEST_CLUSTER") != "" {
		if os.Getenv("REDISX_SKIP_NO_REDIS") == "1" || os.Getenv("REDISX_TEST_CLUSTER") != "" {
			t.Skipf("needs a TLS cluster of its own: %v", err)
		}
		t.Fatal(err)
	}
	tl, err := launcher.NewTLS(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cl, err := launcher.StartCluster(t.Context(), launcher.ClusterOptions{TLS: tl})
	if err != nil {
		if msg := err.Error(); strings.Contains(msg, "TLS") && (strings.Contains(msg, "not available") || strings.Contains(msg, "Bad directive")) {
			t.Skipf("redis-server was built without TLS support: %v", err)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cl.Stop(); err != nil {
			t.Error(err)
		}
	})
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
