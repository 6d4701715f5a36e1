package strategy_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redisx-go/kit/internal/launcher"
	"github.com/redisx-go/kit/internal/topology"
	"github.com/redisx-go/kit/redisx"
	"github.com/redisx-go/kit/strategy/strategytest"
	"go.uber.org/goleak"
)

// A cluster's topology changing under traffic: a slot migrated and back,
// a master refusing connections.

// TestClusterSlotMigrationUnderTraffic moves one slot to another master
// and back while 20 goroutines read and write keys of that slot: the
// MOVED and ASK redirects and the TRYAGAIN replies of the migration are
// absorbed, no caller sees an error, and every read returns the value its
// goroutine wrote last.
func TestClusterSlotMigrationUnderTraffic(t *testing.T) {
	cl := crelCluster(t, launcher.ClusterOptions{Replicas: 1})
	var redirects int64
	for _, tc := range crelStrategies() {
		t.Run(tc.name, func(t *testing.T) {
			redirects += testSlotMigration(t, cl, tc)
		})
	}
	t.Logf("redirects over the runs: %d", redirects)
	if redirects == 0 {
		t.Errorf("no redirect followed while slots moved under traffic; want > 0")
	}
}

func testSlotMigration(t *testing.T, cl *launcher.Cluster, tc crelCase) int64 {
	const (
		workers     = 20
		keysPerG    = 2
		mgetKeys    = 8
		fillers     = 250 // three MIGRATE batches: the slot is split a while
		callTimeout = 2 * time.Second
	)
	ctx := t.Context()
	slot := topology.Slot("{mig}")
	if err := cl.WaitOK(ctx); err != nil {
		t.Fatal(err)
	}
	from, err := cl.MasterOf(ctx, slot)
	if err != nil {
		t.Fatal(err)
	}
	masters, err := cl.Masters(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var to *launcher.Server
	for _, m := range masters {
		if m.Addr() != from.Addr() {
			to = m
			break
		}
	}
	if to == nil {
		t.Fatalf("no master other than %s", from.Addr())
	}
	keyOf := func(g, j int) string { return fmt.Sprintf("{mig}:%s:%d:%d", tc.name, g, j) }

	before := goleak.IgnoreCurrent()
	c := crelNew(t, cl, tc.s)
	closed := false
	defer func() {
		if !closed {
			c.Close()
		}
	}()
	fill := map[string][]byte{}
	for i := 0; i < fillers; i++ {
		k := fmt.Sprintf("{mig}:fill:%s:%d", tc.name, i)
		fill[k] = []byte(relValue(k, 0))
	}
	if err := c.MSet(ctx, fill, time.Minute); err != nil {
		t.Fatalf("MSet of the fillers: %v", err)
	}

	var (
		okCalls, errCalls, wrongValues atomic.Int64
		firstErr, firstWrong           atomic.Value
	)
	stopWorkers := strategytest.StartWorkers(t, workers, func(g int, r any) {
		errCalls.Add(1)
		firstErr.CompareAndSwap(nil, fmt.Sprintf("goroutine %d panicked: %v", g, r))
	}, func(g int, stop <-chan struct{}) {
		// The goroutine owns its keys: a read of one must return the
		// value it last wrote. Its MGets also read others' keys.
		last := map[string]string{}
		mkeys := make([]string, 0, mgetKeys)
		for j := 0; j < keysPerG; j++ {
			mkeys = append(mkeys, keyOf(g, j))
		}
		for h := 1; len(mkeys) < mgetKeys; h++ {
			mkeys = append(mkeys, keyOf((g+h)%workers, h%keysPerG))
		}
		check := func(op, key string, v []byte) {
			want, mine := last[key]
			switch {
			case v == nil && !mine:
			case mine && string(v) != want:
				wrongValues.Add(1)
				firstWrong.CompareAndSwap(nil, fmt.Sprintf("%s(%q) = %q; want %q, written last", op, key, v, want))
			case v != nil && !relValueBelongsTo(key, v):
				wrongValues.Add(1)
				firstWrong.CompareAndSwap(nil, fmt.Sprintf("%s(%q) = %q: a value of another key", op, key, v))
			}
		}
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			key := keyOf(g, (i/3)%keysPerG)
			callCtx, cancel := context.WithTimeout(context.Background(), callTimeout)
			var err error
			var op string
			switch i % 3 {
			case 0:
				op = "Set"
				val := relValue(key, i)
				if err = c.Set(callCtx, key, []byte(val), time.Minute); err == nil {
					last[key] = val
				}
			case 1:
				op = "Get"
				var v []byte
				v, err = c.Get(callCtx, key)
				if errors.Is(err, redisx.ErrNotFound) {
					err = nil
				}
				if err == nil {
					check(op, key, v)
				}
			case 2:
				op = "MGet"
				var vs [][]byte
				if vs, err = c.MGet(callCtx, mkeys...); err == nil {
					if len(vs) != len(mkeys) {
						wrongValues.Add(1)
						firstWrong.CompareAndSwap(nil, fmt.Sprintf("MGet returned %d values for %d keys", len(vs), len(mkeys)))
					} else {
						for j, v := range vs {
							check(op, mkeys[j], v)
						}
					}
				}
			}
			cancel()
			if err != nil {
				errCalls.Add(1)
				firstErr.CompareAndSwap(nil, fmt.Sprintf("%s(%q): %v", op, key, err))
				time.Sleep(5 * time.Millisecond)
				continue
			}
			okCalls.Add(1)
		}
	})
	defer stopWorkers()

	time.Sleep(200 * time.Millisecond)
	var moves []string
	for _, dst := range []*launcher.Server{to, from} {
		start := time.Now()
		if err := cl.MoveSlot(ctx, slot, dst); err != nil {
			t.Fatalf("MoveSlot(%d, %s): %v", slot, dst.Addr(), err)
		}
		moves = append(moves, fmt.Sprintf("→ %s in %v", dst.Addr(), time.Since(start).Round(time.Millisecond)))
		time.Sleep(200 * time.Millisecond)
	}
	stopWorkers()
	st := c.Stats()
	t.Logf("%s: slot %d moved %s; calls ok=%d failed=%d; redirects %d, topology refreshes %d",
		tc.name, slot, strings.Join(moves, ", then "), okCalls.Load(), errCalls.Load(), st.Redirects, st.TopologyRefreshes)

	if n := errCalls.Load(); n > 0 {
		t.Errorf("%d calls failed while the slot moved; first: %v", n, firstErr.Load())
	}
	if n := wrongValues.Load(); n > 0 {
		t.Errorf("%d reads returned a wrong value; first: %v", n, firstWrong.Load())
	}
	if okCalls.Load() == 0 {
		t.Errorf("no call succeeded")
	}
	// The fillers moved there and back with the slot.
	fk := slices.Sorted(maps.Keys(fill))
	vs, err := c.MGet(ctx, fk...)
	if err != nil {
		t.Fatalf("MGet of the fillers after the moves: %v", err)
	}
	for i, k := range fk {
		if string(vs[i]) != relValue(k, 0) {
			t.Fatalf("filler %q after the moves = %q; want %q", k, vs[i], relValue(k, 0))
		}
	}
	if err := c.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	closed = true
	crelCheckLeaks(t, before)
	return st.Redirects
}

// TestClusterRefusedMasterTriggersRefresh checks that clients created
// before a failover, idle during it, serve the slots that moved within 2 s
// of their first call: the refused connection to the dead master
// triggers a topology refresh at once rather than waiting for the
// periodic one.
func TestClusterRefusedMasterTriggersRefresh(t *testing.T) {
	const bar = 2 * time.Second
	cl := crelCluster(t, launcher.ClusterOptions{Replicas: 1})
	ctx := t.Context()
	masters, err := cl.Masters(ctx)
	if err != nil || len(masters) == 0 {
		t.Fatalf("Masters = %d, %v", len(masters), err)
	}
	victim := masters[0]
	keys := crelKeysOn(ctx, t, &crelSlotOwners{cl: cl}, victim, "refused:", 10)

	cases := crelStrategies()
	before := goleak.IgnoreCurrent()
	clients := crelClients(ctx, t, cl, cases, keys)
	refreshes := make([]int64, len(clients))
	for i, c := range clients { // every client routes to the victim
		for _, k := range keys {
			if _, err := c.Get(ctx, k); err != nil {
				t.Fatalf("%s: Get(%q) before the failover: %v", cases[i].name, k, err)
			}
		}
		refreshes[i] = c.Stats().TopologyRefreshes
	}
	crelWaitReplicated(ctx, t, victim)

	kill := time.Now()
	if err := victim.Kill(); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	if err := cl.WaitOK(ctx); err != nil {
		t.Fatalf("WaitOK after the kill: %v", err)
	}
	t.Logf("master %s killed; cl.WaitOK returned after %v", victim.Addr(), time.Since(kill).Round(time.Millisecond))
	if m, err := cl.MasterOf(ctx, topology.Slot(keys[0])); err != nil || m.Addr() == victim.Addr() {
		t.Fatalf("after the failover the slot's master is %v (%v); want the promoted replica", m, err)
	}

	for i, tc := range cases {
		c := clients[i]
		t.Run(tc.name, func(t *testing.T) {
			if r := c.Stats().TopologyRefreshes; r != refreshes[i] {
				t.Fatalf("the idle client refreshed its map during the failover (%d → %d): nothing left to prove", refreshes[i], r)
			}
			first := time.Now()
			var firstErr error
			tries := 0
			for j, k := range keys {
				for {
					left := bar - time.Since(first)
					if left <= 0 {
						t.Fatalf("key %d (%q) not served %v after the first call (first call: %v; %d calls)", j, k, bar, firstErr, tries)
					}
					callCtx, cancel := context.WithTimeout(ctx, left)
					v, err := c.Get(callCtx, k)
					cancel()
					if tries++; tries == 1 {
						firstErr = err
					}
					if err == nil {
						if string(v) != relValue(k, j) {
							t.Fatalf("Get(%q) after the failover = %q; want %q", k, v, relValue(k, j))
						}
						break
					}
					time.Sleep(5 * time.Millisecond)
				}
			}
			took := time.Since(first)
			st := c.Stats()
			t.Logf("%s: the %d keys of the moved slots served %v after the first call (%d calls, first: %v); refreshes %d → %d, redirects %d",
				tc.name, len(keys), took.Round(time.Microsecond), tries, firstErr, refreshes[i], st.TopologyRefreshes, st.Redirects)
			if st.TopologyRefreshes <= refreshes[i] {
				t.Errorf("no topology refresh after the refused connection")
			}
		})
	}
	for _, c := range clients {
		c.Close()
	}
	crelCheckLeaks(t, before)
}
