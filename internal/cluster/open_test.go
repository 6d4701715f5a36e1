package cluster_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redisx-go/kit/backend"
	"github.com/redisx-go/kit/internal/cluster"
	"github.com/redisx-go/kit/internal/launcher"
	"github.com/redisx-go/kit/internal/mux"
)

// loneNodeCluster starts a cluster of one master serving every slot,
// never met by another node: it does not know its own address, and its
// CLUSTER SHARDS and CLUSTER SLOTS name it with an empty host.
func loneNodeCluster(t *testing.T) *launcher.Server {
	t.Helper()
	srv := launcher.Private(t, launcher.Options{Args: []string{"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"}})
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if out, err := srv.CLI(ctx, "CLUSTER", "ADDSLOTSRANGE", "0", "16383"); err != nil || !strings.Contains(out, "OK") {
		t.Fatalf("CLUSTER ADDSLOTSRANGE: %q, %v", out, err)
	}
	for {
		out, err := srv.CLI(ctx, "CLUSTER", "INFO")
		if err == nil && strings.Contains(out, "cluster_state:ok") {
			return srv
		}
		select {
		case <-ctx.Done():
			t.Fatalf("cluster of one never ok: %q, %v", out, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// TestOpenNamesALoneNodeByTheHostItWasReachedAt: a master whose host the
// slot map leaves empty is named by the host of the node that sent the
// map (as a redirect's empty host is), so that Masters gives addresses
// DoOn and other clients can use, not ":port".
func TestOpenNamesALoneNodeByTheHostItWasReachedAt(t *testing.T) {
	srv := loneNodeCluster(t)
	b, err := cluster.Open(t.Context(), backend.Config{Addrs: []string{srv.Addr()}, DialTimeout: 5 * time.Second}, mux.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	r, ok := b.(*cluster.Router)
	if !ok {
		t.Fatalf("Open gave a %T, want a *cluster.Router", b)
	}
	if got, want := r.Masters(), []string{srv.Addr()}; !slices.Equal(got, want) {
		t.Errorf("Masters() = %q, want %q", got, want)
	}
	if err := r.Set(t.Context(), "k", []byte("v"), 0); err != nil {
		t.Errorf("Set: %v", err)
	}
}
