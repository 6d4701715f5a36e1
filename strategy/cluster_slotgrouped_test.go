package strategy_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/redisx-go/kit/internal/launcher"
	"github.com/redisx-go/kit/internal/topology"
	"github.com/redisx-go/kit/redisx"
	"github.com/redisx-go/kit/strategy"
)

// SlotGrouped on a real cluster: one round trip per node, and a partial
// failure reported per node.

// TestSlotGroupedOneRoundTripPerNode checks SlotGrouped's promise: a
// 50-key MGet over 50 slots on 3 masters is one write per node, where the
// plain transport writes one MGET per slot, one after another; the values
// come back in the caller's order, with nil for missing keys.
func TestSlotGroupedOneRoundTripPerNode(t *testing.T) {
	cl := sharedCluster.Get(t)
	ctx := t.Context()
	keys, _ := crelKeys50(ctx, t, cl, "sg1rt:")
	want := make([][]byte, len(keys))

	before := goleak.IgnoreCurrent()
	grouped := crelNew(t, cl, strategy.SlotGrouped{})
	defer grouped.Close()
	plain := crelNew(t, cl, strategy.Multiplexed{})
	defer plain.Close()
	for i, k := range keys {
		if i%5 == 4 {
			if _, err := plain.Del(ctx, k); err != nil {
				t.Fatalf("Del(%q): %v", k, err)
			}
			continue // a hole
		}
		want[i] = []byte(relValue(k, i))
		if err := plain.Set(ctx, k, want[i], time.Minute); err != nil {
			t.Fatalf("Set(%q): %v", k, err)
		}
	}

	flushes := map[string]int64{}
	for _, tc := range []struct {
		name string
		c    *redisx.Client
	}{{"slot-grouped", grouped}, {"multiplexed", plain}} {
		// Warm up: every node connected.
		if _, err := tc.c.MGet(ctx, keys...); err != nil {
			t.Fatalf("%s: warm-up MGet: %v", tc.name, err)
		}
		for round := 0; round < 3; round++ {
			st0 := crelSettled(t, tc.c, -1)
			vs, err := tc.c.MGet(ctx, keys...)
			st1 := crelSettled(t, tc.c, st0.Commands+int64(len(keys)))
			if err != nil {
				t.Fatalf("%s: MGet: %v", tc.name, err)
			}
			if len(vs) != len(keys) {
				t.Fatalf("%s: MGet of %d keys returned %d values", tc.name, len(keys), len(vs))
			}
			for i := range keys {
				if (want[i] == nil) != (vs[i] == nil) || string(vs[i]) != string(want[i]) {
					t.Fatalf("%s: MGet[%d] (%q) = %q; want %q", tc.name, i, keys[i], vs[i], want[i])
				}
			}
			df, dc := st1.Flushes-st0.Flushes, st1.Commands-st0.Commands
			t.Logf("%s: one 50-key MGet: %d writes carrying %d commands (%d nodes, %d masters)",
				tc.name, df, dc, st1.Nodes, st1.Masters)
			flushes[tc.name] = max(flushes[tc.name], df)
			if tc.name == "multiplexed" && df < 40 {
				t.Errorf("plain multiplexed: one 50-slot MGet made %d writes; want ≥ 40 (one MGET per slot, one after another)", df)
			}
		}
	}
	if f := flushes["slot-grouped"]; f > 3 {
		t.Errorf("slot-grouped: one 50-slot MGet over 3 masters made up to %d writes; want ≤ 3 (one per node)", f)
	}
	grouped.Close()
	plain.Close()
	crelCheckLeaks(t, before)
}

// crelNodeErrors returns every *strategy.NodeError in err's tree.
func crelNodeErrors(err error) []*strategy.NodeError {
	var out []*strategy.NodeError
	var walk func(error)
	walk = func(err error) {
		if ne, ok := err.(*strategy.NodeError); ok {
			out = append(out, ne)
			return
		}
		switch u := err.(type) {
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				walk(e)
			}
		case interface{ Unwrap() error }:
			if e := u.Unwrap(); e != nil {
				walk(e)
			}
		}
	}
	if err != nil {
		walk(err)
	}
	return out
}

// TestSlotGroupedPartialFailureReportsNode kills one master of a cluster
// without replicas (so no failover comes): SlotGrouped's MGet returns
// before its deadline with the live masters' values and one NodeError
// naming the dead master and exactly the keys it serves; the plain
// transports fail the call before the deadline.
//
// The cluster runs with cluster-require-full-coverage no, so that the
// live masters keep answering once the others have marked the dead one
// failing (about the node timeout after the kill): the result then does
// not depend on how long the calls take.
func TestSlotGroupedPartialFailureReportsNode(t *testing.T) {
	cl := crelCluster(t, launcher.ClusterOptions{Args: []string{"--cluster-require-full-coverage", "no"}})
	ctx := t.Context()
	keys, owners := crelKeys50(ctx, t, cl, "sgfail:")
	victim, err := cl.MasterOf(ctx, topology.Slot(keys[0]))
	if err != nil {
		t.Fatal(err)
	}
	var victimKeys []string
	for i, k := range keys {
		if owners[i] == victim.Addr() {
			victimKeys = append(victimKeys, k)
		}
	}

	cases := []crelCase{
		{"slot-grouped", strategy.SlotGrouped{}},
		{"slot-grouped-pool", strategy.SlotGrouped{Transport: strategy.Pool{Size: 16}}},
		{"multiplexed", strategy.Multiplexed{}},
		{"pool-size=16", strategy.Pool{Size: 16}},
	}
	before := goleak.IgnoreCurrent()
	clients := crelClients(ctx, t, cl, cases, keys)
	for i, c := range clients { // every node connected
		if _, err := c.MGet(ctx, keys...); err != nil {
			t.Fatalf("%s: MGet before the kill: %v", cases[i].name, err)
		}
	}
	if err := victim.Kill(); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	t.Logf("killed master %s, which serves %d of the 50 keys", victim.Addr(), len(victimKeys))

	const deadline = 3 * time.Second
	isVictim := func(j int) bool { return owners[j] == victim.Addr() }
	// call runs op with the deadline and checks what every strategy
	// promises: an error, before the deadline.
	call := func(t *testing.T, name string, op func(context.Context) error) error {
		t.Helper()
		callCtx, cancel := context.WithTimeout(ctx, deadline)
		defer cancel()
		start := time.Now()
		err := op(callCtx)
		took := time.Since(start)
		t.Logf("%s with a dead master returned after %v: %.300v", name, took.Round(time.Millisecond), err)
		if err == nil {
			t.Fatalf("%s with master %s dead succeeded", name, victim.Addr())
		}
		if callCtx.Err() != nil || errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("%s did not return before its %v deadline (took %v): %.300v", name, deadline, took, err)
		}
		return err
	}
	// checkNodeError checks SlotGrouped's report: one NodeError, naming
	// the dead master and exactly the keys of its slots.
	checkNodeError := func(t *testing.T, err error) {
		t.Helper()
		if !errors.Is(err, redisx.ErrConnection) {
			t.Errorf("errors.Is(err, ErrConnection) = false for %v", err)
		}
		var ne *strategy.NodeError
		if !errors.As(err, &ne) {
			t.Fatalf("errors.As(err, *NodeError) = false for %v", err)
		}
		got := slices.Sorted(slices.Values(ne.Keys))
		want := slices.Sorted(slices.Values(victimKeys))
		if ne.Node != victim.Addr() || !slices.Equal(got, want) {
			t.Errorf("NodeError = {Node %s, %d keys %q}; want {Node %s, the %d keys %q of its slots}",
				ne.Node, len(ne.Keys), got, victim.Addr(), len(want), want)
		}
		if all := crelNodeErrors(err); len(all) != 1 {
			t.Errorf("%d NodeErrors for one dead node; want 1", len(all))
		}
	}
	for i, tc := range cases {
		c := clients[i]
		grouped := strings.HasPrefix(tc.name, "slot-grouped")
		t.Run(tc.name, func(t *testing.T) {
			t.Run("MGet", func(t *testing.T) {
				var vs [][]byte
				err := call(t, "MGet", func(ctx context.Context) (err error) { vs, err = c.MGet(ctx, keys...); return err })
				if !grouped {
					return // no partial results
				}
				if len(vs) != len(keys) {
					t.Fatalf("MGet returned %d values with its error; want %d (the live masters' values)", len(vs), len(keys))
				}
				for j, k := range keys {
					switch {
					case isVictim(j) && vs[j] != nil:
						t.Errorf("value %d (%q), on the dead master, = %q; want nil", j, k, vs[j])
					case !isVictim(j) && string(vs[j]) != relValue(k, j):
						t.Errorf("value %d (%q), on live master %s, = %q; want %q", j, k, owners[j], vs[j], relValue(k, j))
					}
				}
				checkNodeError(t, err)
			})
			t.Run("MSet", func(t *testing.T) {
				kv := map[string][]byte{}
				for _, k := range keys {
					kv[k] = []byte(relValue(k, 1000+i))
				}
				err := call(t, "MSet", func(ctx context.Context) error { return c.MSet(ctx, kv, time.Minute) })
				if !grouped {
					return
				}
				checkNodeError(t, err)
				for j, k := range keys { // the live masters' part is stored
					if isVictim(j) {
						continue
					}
					if v, err := c.Get(ctx, k); err != nil || string(v) != relValue(k, 1000+i) {
						t.Errorf("Get(%q) on live master %s after the MSet = %q, %v; want %q", k, owners[j], v, err, relValue(k, 1000+i))
					}
				}
			})
			t.Run("Del", func(t *testing.T) {
				var n int64
				err := call(t, "Del", func(ctx context.Context) (err error) { n, err = c.Del(ctx, keys...); return err })
				if !grouped {
					return
				}
				checkNodeError(t, err)
				if live := int64(len(keys) - len(victimKeys)); n != live {
					t.Errorf("Del with a dead master = %d; want %d, the live masters' keys", n, live)
				}
				for j, k := range keys { // restore for the next strategy
					if !isVictim(j) {
						if err := c.Set(ctx, k, []byte(relValue(k, j)), time.Minute); err != nil {
							t.Fatalf("Set(%q): %v", k, err)
						}
					}
				}
			})
		})
	}
	for _, c := range clients {
		c.Close()
	}
	crelCheckLeaks(t, before)
}

// crelKeys50 returns 50 keys in 50 distinct slots spread over every
// master of cl, and the master of each key.
func crelKeys50(ctx context.Context, t *testing.T, cl *launcher.Cluster, prefix string) ([]string, []string) {
	t.Helper()
	keys := crelDistinctSlotKeys(prefix, 50)
	owners := &crelSlotOwners{cl: cl}
	addrs := make([]string, len(keys))
	per := map[string]int{}
	for i, k := range keys {
		addrs[i] = owners.owner(ctx, t, topology.Slot(k))
		per[addrs[i]]++
	}
	if len(per) != 3 {
		t.Fatalf("50 keys over %d masters (%v); want 3", len(per), per)
	}
	return keys, addrs
}

// crelSettled returns c's Stats once the writer goroutines have counted
// their writes: a reply can reach its caller before the writer that sent
// the command has counted the write. With want ≥ 0 it waits for
// Commands to reach want (each MGET of a slot is one command); with want
// < 0, for Commands to stay put for 50 ms.
func crelSettled(t *testing.T, c *redisx.Client, want int64) redisx.Stats {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	st := c.Stats()
	for {
		time.Sleep(10 * time.Millisecond)
		if want >= 0 && st.Commands >= want {
			return st
		}
		next := c.Stats()
		if want < 0 && next.Commands == st.Commands {
			time.Sleep(40 * time.Millisecond)
			if last := c.Stats(); last.Commands == st.Commands {
				return last
			}
		}
		st = next
		if time.Now().After(deadline) {
			t.Fatalf("Stats().Commands = %d, not settling (want %d)", st.Commands, want)
		}
	}
}
