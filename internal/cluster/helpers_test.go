package cluster_test

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/redisx-go/kit/backend"
	"github.com/redisx-go/kit/internal/cluster"
	"github.com/redisx-go/kit/internal/launcher"
	"github.com/redisx-go/kit/internal/mux"
	"github.com/redisx-go/kit/internal/pool"
	"github.com/redisx-go/kit/internal/topology"
	"github.com/redisx-go/kit/internal/transport"
)

// The tests of this package open the Router as strategy.Multiplexed,
// strategy.Pool and strategy.SlotGrouped do — over a transport, alone or
// under a Grouped — without package strategy, so that the Router's own
// methods (InstallShards, Refresh) are at hand.

// opener says what to open: the Router over t, alone or under a Grouped.
type opener struct {
	t       transport.Transport
	grouped bool
}

var (
	multiplexed = opener{t: mux.Options{}}
	slotGrouped = opener{t: mux.Options{}, grouped: true}
)

func pooled(size int) opener { return opener{t: pool.Options{Size: size}} }

// tcase is a named opener, for subtests.
type tcase struct {
	name string
	s    opener
}

// doBackend is what a test opened: the Router, or a Grouped over it,
// with the Router at hand (its NodeDoer methods, its slot map).
type doBackend struct {
	transport.Backend
	nodes *cluster.Router
}

// open opens o with cfg, closing it when t ends.
func open(t *testing.T, o opener, cfg backend.Config) doBackend {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b, err := cluster.Open(ctx, cfg, o.t)
	if err != nil {
		t.Fatalf("Open(%T): %v", o.t, err)
	}
	r, ok := b.(*cluster.Router)
	if !ok {
		b.Close()
		t.Fatalf("Open(%T) on a cluster gave a %T", o.t, b)
	}
	d := doBackend{Backend: r, nodes: r}
	if o.grouped {
		g, err := cluster.NewGrouped(r, 1000)
		if err != nil {
			t.Fatal(err)
		}
		d.Backend = g
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// openDo opens s on addrs.
func openDo(t *testing.T, s opener, addrs []string) doBackend {
	t.Helper()
	return open(t, s, backend.Config{Addrs: addrs, DialTimeout: 2 * time.Second, ClientName: "redisx-do-test"})
}

// openNamed opens s on addrs with connections named name, so that the
// servers' CLIENT LIST tells them apart.
func openNamed(t *testing.T, s opener, addrs []string, name string) doBackend {
	t.Helper()
	return open(t, s, backend.Config{Addrs: addrs, DialTimeout: time.Second, ClientName: name})
}

// clusterForTest starts a cluster for t and skips t on an external
// cluster, whose nodes cannot be killed nor its map changed.
func clusterForTest(t *testing.T, o launcher.ClusterOptions) *launcher.Cluster {
	t.Helper()
	cl := launcher.ClusterForTest(t, o)
	if cl.External() {
		t.Skip("kills nodes or moves slots, which REDISX_TEST_CLUSTER's external cluster does not allow")
	}
	return cl
}

// masterKeys returns the masters of cl and a key prefix<n> on each, in
// the order of the masters.
func masterKeys(t *testing.T, cl *launcher.Cluster, prefix string) ([]*launcher.Server, []string) {
	t.Helper()
	ctx := t.Context()
	masters, err := cl.Masters(ctx)
	if err != nil || len(masters) != 3 {
		t.Fatalf("Masters = %v, %v", masters, err)
	}
	keys := make([]string, len(masters))
	for i, found := 0, 0; found < len(masters); i++ {
		k := prefix + strconv.Itoa(i)
		m, err := cl.MasterOf(ctx, topology.Slot(k))
		if err != nil || i > 1000 {
			t.Fatalf("MasterOf the slot of %q: %v (after %d keys)", k, err, i)
		}
		for j := range masters {
			if masters[j].Addr() == m.Addr() && keys[j] == "" {
				keys[j] = k
				found++
			}
		}
	}
	return masters, keys
}

// blackHole returns the address of a loopback listener that never
// accepts: the kernel completes a connection to it, which then never
// answers. It closes when t ends.
func blackHole(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l.Addr().String()
}

// checkLeaks fails t when goroutines other than those of before (and the
// launcher's reapers of restarted servers) are still running after 3 s.
func checkLeaks(t *testing.T, before goleak.Option) {
	t.Helper()
	reaper := goleak.IgnoreAnyFunction("github.com/redisx-go/kit/internal/launcher.(*Server).launch.func1")
	err := goleak.Find(before, reaper)
	for end := time.Now().Add(3 * time.Second); err != nil && time.Now().Before(end); err = goleak.Find(before, reaper) {
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		t.Errorf("goroutines left after Close: %v", err)
	}
}
