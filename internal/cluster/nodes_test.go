package cluster_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	redigo "github.com/gomodule/redigo/redis"
	"go.uber.org/goleak"

	"github.com/redisx-go/kit/internal/failure"
	"github.com/redisx-go/kit/internal/launcher"
	"github.com/redisx-go/kit/internal/topology"
)

// The cluster's set of nodes follows the slot map: a node that
// leaves it — a demoted master, a seed that is no master — is closed once
// the calls in flight on it end; and the shared map refresh runs under
// its own context, never the caller's that triggered it.

// conns returns the CLIENT LIST lines of srv's connections named name.
func conns(ctx context.Context, t *testing.T, srv *launcher.Server, name string) []string {
	t.Helper()
	out, err := srv.CLI(ctx, "CLIENT", "LIST")
	if err != nil {
		t.Fatalf("CLIENT LIST on %s: %v", srv.Addr(), err)
	}
	var ours []string
	for line := range strings.Lines(out) {
		if strings.Contains(line, " name="+name+" ") {
			ours = append(ours, strings.TrimSpace(line))
		}
	}
	return ours
}

// waitNoConns waits until srv has no connection named name, failing t after
// a generous bound.
func waitNoConns(ctx context.Context, t *testing.T, srv *launcher.Server, name string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		left := conns(ctx, t, srv, name)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still has %d connections of this client 5 s on: %q", srv.Addr(), len(left), left)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitNodes waits until d reports n nodes: a node is counted until its
// closing is complete, a moment after the server sees its connections go.
func waitNodes(t *testing.T, d doBackend, n int) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for {
		got := d.Stats().Nodes
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("Stats().Nodes = %d; want %d", got, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// setAndCheck stores a value under each key through d, then reads them
// back.
func setAndCheck(ctx context.Context, t *testing.T, d doBackend, keys []string) {
	t.Helper()
	for _, k := range keys {
		if err := d.Set(ctx, k, []byte("v-"+k), time.Minute); err != nil {
			t.Fatalf("Set(%q): %v", k, err)
		}
	}
	getAll(ctx, t, d, keys)
}

func getAll(ctx context.Context, t *testing.T, d doBackend, keys []string) {
	t.Helper()
	for _, k := range keys {
		if v, err := d.Get(ctx, k); err != nil || string(v) != "v-"+k {
			t.Fatalf("Get(%q) = %q, %v; want %q", k, v, err, "v-"+k)
		}
	}
}

func TestClusterNodesLeavingTheMapAreClosed(t *testing.T) {
	cl := clusterForTest(t, launcher.ClusterOptions{Replicas: 1})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()

	// A manual failover demotes a master that keeps running: the client
	// must let go of it, though nothing fails.
	for i, tc := range []tcase{{"multiplexed", multiplexed}, {"pool", pooled(4)}} {
		t.Run("DemotedMaster/"+tc.name, func(t *testing.T) {
			masters, keys := masterKeys(t, cl, "depart:"+tc.name+":")
			victim := masters[i]
			replicas, err := cl.ReplicasOf(ctx, victim)
			if err != nil || len(replicas) != 1 {
				t.Fatalf("ReplicasOf(%s) = %v, %v", victim.Addr(), replicas, err)
			}
			before := goleak.IgnoreCurrent()
			name := "redisx-depart-" + tc.name
			d := openNamed(t, tc.s, cl.Addrs(), name)
			setAndCheck(ctx, t, d, keys)
			if len(conns(ctx, t, victim, name)) == 0 {
				t.Fatalf("no connection to %s before the failover: nothing to prove", victim.Addr())
			}
			if err := cl.Failover(ctx, replicas[0]); err != nil {
				t.Fatal(err)
			}
			getAll(ctx, t, d, keys) // MOVED, then a refresh that drops the old master
			waitNoConns(ctx, t, victim, name)
			if got := d.nodes.Masters(); slices.Contains(got, victim.Addr()) || !slices.Contains(got, replicas[0].Addr()) {
				t.Errorf("Masters after the failover = %v; want %s in, %s out", got, replicas[0].Addr(), victim.Addr())
			}
			waitNodes(t, d, 3)
			if st := d.Stats(); st.Masters != 3 {
				t.Errorf("Stats().Masters after the failover = %d; want 3", st.Masters)
			}
			d.Close()
			checkLeaks(t, before)
		})
	}

	t.Run("SeedThatIsNoMaster", func(t *testing.T) {
		masters, keys := masterKeys(t, cl, "seed:")
		replicas, err := cl.ReplicasOf(ctx, masters[2])
		if err != nil || len(replicas) != 1 {
			t.Fatalf("ReplicasOf(%s) = %v, %v", masters[2].Addr(), replicas, err)
		}
		seed := replicas[0]
		before := goleak.IgnoreCurrent()
		name := "redisx-seed"
		d := openNamed(t, multiplexed, []string{seed.Addr()}, name)
		setAndCheck(ctx, t, d, keys)
		waitNoConns(ctx, t, seed, name)
		waitNodes(t, d, 3) // the masters, not the seed
		// The seed is dialled again only when no master answers.
		if err := d.nodes.Refresh(ctx); err != nil {
			t.Errorf("refresh: %v", err)
		}
		if left := conns(ctx, t, seed, name); len(left) != 0 {
			t.Errorf("a refresh with the masters up dialled the seed: %q", left)
		}
		d.Close()
		checkLeaks(t, before)
	})
}

// TestClusterForcedMapChange changes the client's slot map by hand: the
// departure of a node with a call in flight, and a stale map whose only
// master never answers.
func TestClusterForcedMapChange(t *testing.T) {
	cl := sharedCluster.Get(t)
	if cl.External() {
		t.Skip("pauses a node, which REDISX_TEST_CLUSTER's external cluster does not allow")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()

	for _, tc := range []tcase{{"multiplexed", multiplexed}, {"pool", pooled(4)}} {
		t.Run("CallInFlightOnDepartingNodeCompletes/"+tc.name, func(t *testing.T) {
			masters, keys := masterKeys(t, cl, "inflight:"+tc.name+":")
			keep, victim := masters[0], masters[2]
			before := goleak.IgnoreCurrent()
			name := "redisx-inflight-" + tc.name
			d := openNamed(t, tc.s, cl.Addrs(), name)
			setAndCheck(ctx, t, d, keys)

			// A write held by CLIENT PAUSE: in flight on the node's shared
			// connection (Multiplexed) or a pooled one, until CLIENT
			// UNPAUSE below (which a pause of writes lets through).
			if _, err := victim.CLI(ctx, "CLIENT", "PAUSE", "20000", "WRITE"); err != nil {
				t.Fatal(err)
			}
			unpause := func() {
				if _, err := victim.CLI(ctx, "CLIENT", "UNPAUSE"); err != nil {
					t.Error(err)
				}
			}
			t.Cleanup(unpause)
			type result struct {
				v   any
				err error
			}
			done := make(chan result, 1)
			go func() {
				v, err := d.nodes.DoOn(ctx, victim.Addr(), "SET", "{"+keys[2]+"}:paused", "x")
				done <- result{v, err}
			}()
			for start := time.Now(); ; time.Sleep(time.Millisecond) {
				if st := d.Stats(); st.Pending+int64(st.InUse) > 0 {
					break
				}
				if time.Since(start) > 2*time.Second {
					t.Fatal("the SET never left")
				}
			}
			// Every slot to keep: victim and the third master leave.
			if err := d.nodes.InstallShards([]topology.Shard{{Master: keep.Addr(), Ranges: [][2]int{{0, topology.Slots - 1}}}}); err != nil {
				t.Fatal(err)
			}
			if got := d.nodes.Masters(); !slices.Equal(got, []string{keep.Addr()}) {
				t.Fatalf("Masters after the forced map = %v; want [%s]", got, keep.Addr())
			}
			select {
			case r := <-done:
				t.Fatalf("the SET in flight ended when its node left the map: %v, %v", r.v, r.err)
			default:
			}
			unpause()
			r := <-done
			if v, err := redigo.String(r.v, r.err); err != nil || v != "OK" {
				t.Fatalf("SET in flight on the departing node = %v, %v; want OK", r.v, r.err)
			}
			waitNoConns(ctx, t, victim, name)
			waitNoConns(ctx, t, masters[1], name)
			waitNodes(t, d, 1)
			// The real map comes back through MOVED and a refresh.
			getAll(ctx, t, d, keys)
			d.Close()
			checkLeaks(t, before)
		})
	}

	// A refresh triggered by a caller with a 20 ms deadline goes on after
	// that caller has given up; every caller waits for it within its own
	// context only.
	for _, tc := range []tcase{{"multiplexed", multiplexed}, {"pool", pooled(4)}} {
		t.Run("RefreshOutlivesTheCallerThatTriggeredIt/"+tc.name, func(t *testing.T) {
			masters, keys := masterKeys(t, cl, "refresh:"+tc.name+":")
			hole := blackHole(t)
			before := goleak.IgnoreCurrent()
			d := openNamed(t, tc.s, cl.Addrs(), "redisx-refresh-"+tc.name)
			setAndCheck(ctx, t, d, keys)
			// A stale map whose only master accepts connections and never
			// answers: the refresh waits on it for its own timeout, then
			// asks the seeds.
			if err := d.nodes.InstallShards([]topology.Shard{{Master: hole, Ranges: [][2]int{{0, topology.Slots - 1}}}}); err != nil {
				t.Fatal(err)
			}
			refreshes := d.Stats().TopologyRefreshes
			var wg sync.WaitGroup
			var patientErr error
			wg.Go(func() {
				pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				defer cancel()
				patientErr = d.nodes.Refresh(pctx)
			})
			start := time.Now()
			hurried, cancelHurried := context.WithTimeout(ctx, 20*time.Millisecond)
			err := d.nodes.Refresh(hurried)
			cancelHurried()
			if took := time.Since(start); !errors.Is(err, context.DeadlineExceeded) || took > 2*time.Second {
				t.Errorf("refresh with a 20 ms deadline = %v after %v; want DeadlineExceeded at once", err, took)
			}
			wg.Wait()
			if patientErr != nil {
				t.Errorf("refresh with a 10 s deadline, sharing the hurried caller's: %v", patientErr)
			}
			var want []string
			for _, m := range masters {
				want = append(want, m.Addr())
			}
			if got := d.nodes.Masters(); !slices.Equal(got, want) {
				t.Errorf("Masters after the refresh = %v; want %v", got, want)
			}
			if st := d.Stats(); st.TopologyRefreshes != refreshes+1 {
				t.Errorf("%d refreshes; want the one shared by both callers", st.TopologyRefreshes-refreshes)
			}

			// The same through the cache API: a Get with 20 ms fails on its
			// own deadline; the one after it may fail once more, on the
			// dial to the silent master (backends do not retry: the
			// Client's Retry policy does), with a temporary error; the map
			// is right again without further calls.
			if err := d.nodes.InstallShards([]topology.Shard{{Master: hole, Ranges: [][2]int{{0, topology.Slots - 1}}}}); err != nil {
				t.Fatal(err)
			}
			hurried, cancelHurried = context.WithTimeout(ctx, 20*time.Millisecond)
			_, err = d.Get(hurried, keys[0])
			cancelHurried()
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("Get with 20 ms on a silent master = %v; want DeadlineExceeded", err)
			}
			pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			if _, err := d.Get(pctx, keys[0]); err != nil && !failure.Temporary(err) {
				t.Errorf("Get after the hurried one = %v; want success or a temporary error", err)
			}
			for !slices.Equal(d.nodes.Masters(), want) && pctx.Err() == nil {
				time.Sleep(10 * time.Millisecond)
			}
			getAll(pctx, t, d, keys)
			cancel()
			d.Close()
			checkLeaks(t, before)
		})
	}
}
