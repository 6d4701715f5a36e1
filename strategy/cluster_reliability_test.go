package strategy_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/redisx-go/kit/internal/launcher"
	"github.com/redisx-go/kit/internal/topology"
	"github.com/redisx-go/kit/redisx"
	"github.com/redisx-go/kit/strategy"
	"github.com/redisx-go/kit/strategy/strategytest"
)

// Cluster reliability: R3 (a master killed under load), slot migration
// under traffic, SlotGrouped's one round trip per node and its per-node
// failure reports, and the refresh a refused master triggers. The values
// stored follow relValue, so a value read under the wrong key shows.

// crelCase is a strategy under test on a cluster.
type crelCase struct {
	name string
	s    strategy.Strategy
}

func crelStrategies() []crelCase {
	return []crelCase{
		{"multiplexed", strategy.Multiplexed{}},
		{"pool-size=16", strategy.Pool{Size: 16}},
		{"slot-grouped", strategy.SlotGrouped{}},
	}
}

// crelCluster starts a cluster for t and skips t on an external cluster,
// whose nodes cannot be killed nor its slots moved.
func crelCluster(t *testing.T, o launcher.ClusterOptions) *launcher.Cluster {
	t.Helper()
	cl := launcher.ClusterForTest(t, o)
	if cl.External() {
		t.Skip("kills nodes or moves slots, which REDISX_TEST_CLUSTER's external cluster does not allow")
	}
	return cl
}

func crelNew(t *testing.T, cl *launcher.Cluster, s strategy.Strategy) *redisx.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := redisx.New(ctx, redisx.Options{Addrs: cl.Addrs(), Strategy: s})
	if err != nil {
		t.Fatalf("New(%T): %v", s, err)
	}
	return c
}

// crelClients opens a client of cl for each case (closed when the test
// ends, if not before) and stores keys through the first one, with
// relValue's values.
func crelClients(ctx context.Context, t *testing.T, cl *launcher.Cluster, cases []crelCase, keys []string) []*redisx.Client {
	t.Helper()
	clients := make([]*redisx.Client, len(cases))
	for i, tc := range cases {
		c := crelNew(t, cl, tc.s)
		t.Cleanup(func() { c.Close() })
		clients[i] = c
	}
	for i, k := range keys {
		if err := clients[0].Set(ctx, k, []byte(relValue(k, i)), time.Minute); err != nil {
			t.Fatalf("Set(%q): %v", k, err)
		}
	}
	return clients
}

// crelCheckLeaks fails t when goroutines other than those of before (and
// the launcher's reapers of restarted servers) are still running.
func crelCheckLeaks(t *testing.T, before goleak.Option) {
	t.Helper()
	if err := relFindLeaks(before, relIgnoreLauncher); err != nil {
		t.Errorf("goroutines left after Close: %v", err)
	}
}

// crelSlotOwners maps slots to the address of their master, asking the
// cluster once per slot.
type crelSlotOwners struct {
	cl     *launcher.Cluster
	owners map[int]string
}

func (o *crelSlotOwners) owner(ctx context.Context, t *testing.T, slot int) string {
	t.Helper()
	if o.owners == nil {
		o.owners = map[int]string{}
	}
	if a, ok := o.owners[slot]; ok {
		return a
	}
	m, err := o.cl.MasterOf(ctx, slot)
	if err != nil {
		t.Fatalf("MasterOf(%d): %v", slot, err)
	}
	o.owners[slot] = m.Addr()
	return m.Addr()
}

// crelDistinctSlotKeys returns n keys prefix0, prefix1… each in a slot
// none of the others is in.
func crelDistinctSlotKeys(prefix string, n int) []string {
	var keys []string
	seen := map[int]bool{}
	for i := 0; len(keys) < n; i++ {
		k := prefix + strconv.Itoa(i)
		if s := topology.Slot(k); !seen[s] {
			seen[s] = true
			keys = append(keys, k)
		}
	}
	return keys
}

// crelKeysOn returns n keys in distinct slots served by master.
func crelKeysOn(ctx context.Context, t *testing.T, o *crelSlotOwners, master *launcher.Server, prefix string, n int) []string {
	t.Helper()
	var keys []string
	for _, k := range crelDistinctSlotKeys(prefix, 40*n) {
		if o.owner(ctx, t, topology.Slot(k)) == master.Addr() {
			keys = append(keys, k)
			if len(keys) == n {
				return keys
			}
		}
	}
	t.Fatalf("found only %d keys %s* on %s", len(keys), prefix, master.Addr())
	return nil
}

// crelInfo returns the fields of s's INFO section.
func crelInfo(ctx context.Context, s *launcher.Server, section string) (map[string]string, error) {
	out, err := s.CLI(ctx, "INFO", section)
	if err != nil {
		return nil, err
	}
	info := map[string]string{}
	for line := range strings.Lines(out) {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			info[k] = v
		}
	}
	return info, nil
}

// crelWaitReplicated waits until master has a replica online that has
// acknowledged every write made so far, so that a failover loses nothing.
func crelWaitReplicated(ctx context.Context, t *testing.T, master *launcher.Server) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	target := int64(-1) // the master's offset when first read
	var last string
	for {
		info, err := crelInfo(ctx, master, "replication")
		if err == nil {
			last = fmt.Sprintf("role=%s master_repl_offset=%s slave0=%s", info["role"], info["master_repl_offset"], info["slave0"])
			if target < 0 {
				target, _ = strconv.ParseInt(info["master_repl_offset"], 10, 64)
			}
			// slave0:ip=…,port=…,state=online,offset=N,lag=…
			var acked int64 = -1
			for _, f := range strings.Split(info["slave0"], ",") {
				if v, ok := strings.CutPrefix(f, "offset="); ok {
					acked, _ = strconv.ParseInt(v, 10, 64)
				}
			}
			if info["role"] == "master" && strings.Contains(info["slave0"], "state=online") && acked >= target {
				return
			}
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: replica not in sync with offset %d: %s", master.Addr(), target, last)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// crelWaitLinkUp waits until replica's link to its master is up.
func crelWaitLinkUp(ctx context.Context, t *testing.T, replica *launcher.Server) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var last string
	for {
		info, err := crelInfo(ctx, replica, "replication")
		if err == nil {
			last = fmt.Sprintf("role=%s master_link_status=%s", info["role"], info["master_link_status"])
			if info["role"] == "slave" && info["master_link_status"] == "up" {
				return
			}
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: not a replica in sync: %s", replica.Addr(), last)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// crelMax raises m to v.
func crelMax(m *atomic.Int64, v int64) {
	for {
		old := m.Load()
		if v <= old || m.CompareAndSwap(old, v) {
			return
		}
	}
}

// TestClusterMasterFailoverUnderLoad is R3: 50 goroutines doing Set, Get
// and MGet with 300 ms deadlines; the master of one slot is killed; every
// goroutine's calls succeed again within 10 s of the kill (node timeout
// 2 s + failover + 2 s, with room for a loaded machine), no value is read
// under another key; the old master is restarted (it rejoins as a
// replica) and the client keeps working without an error.
func TestClusterMasterFailoverUnderLoad(t *testing.T) {
	cl := crelCluster(t, launcher.ClusterOptions{Replicas: 1})
	for i, tc := range crelStrategies() {
		t.Run(tc.name, func(t *testing.T) {
			testFailoverUnderLoad(t, cl, tc, i)
		})
	}
}

func testFailoverUnderLoad(t *testing.T, cl *launcher.Cluster, tc crelCase, round int) {
	const (
		workers     = 50
		callTimeout = 300 * time.Millisecond
		otherKeys   = 5
		bar         = 10 * time.Second
		quiet       = 500 * time.Millisecond // no error for this long ends the outage
	)
	ctx := t.Context()
	setup := time.Now()
	if err := cl.WaitOK(ctx); err != nil {
		t.Fatal(err)
	}
	masters, err := cl.Masters(ctx)
	if err != nil || len(masters) != 3 {
		t.Fatalf("Masters = %d, %v; want 3", len(masters), err)
	}
	// A different master each round; every goroutine has a key in its
	// slot (hash tag) and others spread over the cluster.
	victim := masters[round%len(masters)]
	owners := &crelSlotOwners{cl: cl}
	tag := crelKeysOn(ctx, t, owners, victim, fmt.Sprintf("fo%d-", round), 1)[0]
	slot := topology.Slot(tag)
	crelWaitReplicated(ctx, t, victim)
	t.Logf("%s: cluster ok and the victim's replica in sync in %v", tc.name, time.Since(setup).Round(time.Millisecond))

	keysOf := func(g int) []string {
		keys := []string{fmt.Sprintf("{%s}:%s:%d", tag, tc.name, g)}
		for j := 0; j < otherKeys; j++ {
			keys = append(keys, fmt.Sprintf("fo:%s:%d:%d", tc.name, g, j))
		}
		return keys
	}

	before := goleak.IgnoreCurrent()
	c := crelNew(t, cl, tc.s)
	closed := false
	defer func() {
		if !closed {
			c.Close()
		}
	}()

	var (
		okCalls, notFound, errCalls      atomic.Int64
		connErrs, ctxErrs, otherErrs     atomic.Int64
		wrongValues, panics              atomic.Int64
		firstBad, firstOther             atomic.Value
		lastErr                          atomic.Int64 // UnixNano of the end of the last failed call
		lastErrOf                        = make([]atomic.Int64, workers)
		victimOKOf                       = make([]atomic.Int64, workers) // last success touching the victim's slot
		killedAt                         atomic.Int64
		errsBeforeKill, errsAfterRestart int64
	)
	stopWorkers := strategytest.StartWorkers(t, workers, func(g int, r any) {
		panics.Add(1)
		firstBad.CompareAndSwap(nil, fmt.Sprintf("goroutine %d panicked: %v", g, r))
	}, func(g int, stop <-chan struct{}) {
		keys := keysOf(g)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			key := keys[0]
			if i%5 >= 3 {
				key = keys[1+(i/5)%otherKeys]
			}
			callCtx, cancel := context.WithTimeout(context.Background(), callTimeout)
			var err error
			var op string
			switch i % 5 {
			case 0, 3:
				op = "Set"
				err = c.Set(callCtx, key, []byte(relValue(key, i)), time.Minute)
			case 1, 4:
				op = "Get"
				var v []byte
				v, err = c.Get(callCtx, key)
				if err == nil && !relValueBelongsTo(key, v) {
					wrongValues.Add(1)
					firstBad.CompareAndSwap(nil, fmt.Sprintf("Get(%q) = %q", key, v))
				}
			case 2:
				op = "MGet"
				var vs [][]byte
				vs, err = c.MGet(callCtx, keys...)
				if vs != nil && len(vs) != len(keys) {
					wrongValues.Add(1)
					firstBad.CompareAndSwap(nil, fmt.Sprintf("MGet(%q) returned %d values", keys, len(vs)))
				}
				for j, v := range vs {
					if v != nil && j < len(keys) && !relValueBelongsTo(keys[j], v) {
						wrongValues.Add(1)
						firstBad.CompareAndSwap(nil, fmt.Sprintf("MGet(%q)[%d] = %q", keys, j, v))
					}
				}
			}
			cancel()
			now := time.Now().UnixNano()
			switch {
			case err == nil || (op == "Get" && errors.Is(err, redisx.ErrNotFound)):
				// A write acknowledged by the old master just before the
				// kill may not have reached its replica: a miss is fine.
				if err != nil {
					notFound.Add(1)
				}
				okCalls.Add(1)
				if key == keys[0] {
					victimOKOf[g].Store(now)
				}
			default:
				errCalls.Add(1)
				lastErrOf[g].Store(now)
				crelMax(&lastErr, now)
				switch {
				case errors.Is(err, redisx.ErrConnection):
					connErrs.Add(1)
				case errors.Is(err, context.DeadlineExceeded):
					ctxErrs.Add(1)
				default:
					otherErrs.Add(1)
					firstOther.CompareAndSwap(nil, fmt.Sprintf("%s(%q): %v", op, key, err))
				}
				if killedAt.Load() == 0 {
					firstBad.CompareAndSwap(nil, fmt.Sprintf("before the kill: %s(%q): %v", op, key, err))
				}
				time.Sleep(5 * time.Millisecond) // as a service would
			}
		}
	})
	defer stopWorkers()

	time.Sleep(300 * time.Millisecond)
	if okCalls.Load() == 0 {
		t.Fatalf("no call succeeded before the kill (first problem: %v)", firstBad.Load())
	}
	errsBeforeKill = errCalls.Load()
	okBefore := okCalls.Load()

	// Kill the master of the slot; the cluster promotes its replica.
	kill := time.Now()
	killedAt.Store(kill.UnixNano())
	if err := victim.Kill(); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	waitOKDone := make(chan struct{})
	var waitOKTook time.Duration
	var waitOKErr error
	go func() {
		defer close(waitOKDone)
		waitOKErr = cl.WaitOK(context.Background())
		waitOKTook = time.Since(kill)
	}()

	// The outage ends with the last failed call; it is over once no call
	// has failed for quiet, WaitOK has returned, and every goroutine has
	// succeeded on the victim's slot since.
	recovered := func() bool {
		select {
		case <-waitOKDone:
		default:
			return false
		}
		le := lastErr.Load()
		if le < kill.UnixNano() || time.Since(time.Unix(0, le)) < quiet {
			return false
		}
		for g := range victimOKOf {
			if victimOKOf[g].Load() <= le {
				return false
			}
		}
		return true
	}
	for !recovered() && time.Since(kill) < bar+quiet+time.Second {
		time.Sleep(10 * time.Millisecond)
	}
	<-waitOKDone
	if waitOKErr != nil {
		t.Fatalf("WaitOK after the kill: %v", waitOKErr)
	}
	outageErrs := errCalls.Load() - errsBeforeKill
	recovery := time.Duration(lastErr.Load() - kill.UnixNano())
	slowest := 0
	for g := range lastErrOf {
		if lastErrOf[g].Load() > lastErrOf[slowest].Load() {
			slowest = g
		}
	}
	t.Logf("%s: master %s of slot %d killed; all %d goroutines served again %v after the kill (last failure: goroutine %d); cl.WaitOK returned after %v (client − cluster: %v)",
		tc.name, victim.Addr(), slot, workers, recovery.Round(time.Millisecond), slowest, waitOKTook.Round(time.Millisecond),
		(recovery - waitOKTook).Round(time.Millisecond))
	t.Logf("%s: during the outage %d failed calls (connection %d, deadline %d, other %d; first other: %v)",
		tc.name, outageErrs, connErrs.Load(), ctxErrs.Load(), otherErrs.Load(), firstOther.Load())
	if !recovered() {
		t.Errorf("not every goroutine was served again within %v of the kill (last failure %v after it)", bar, recovery)
	} else if recovery > bar {
		t.Errorf("recovery took %v after the kill; want ≤ %v", recovery, bar)
	}

	// Every slot is served: a sweep over the whole cluster, 10 goroutines
	// of 30 keys.
	phase := time.Now()
	var sweep sync.WaitGroup
	sweepErrs := make(chan error, 10)
	for w := 0; w < 10; w++ {
		sweep.Go(func() {
			for i := w; i < 300; i += 10 {
				k := fmt.Sprintf("fo-sweep:%s:%d", tc.name, i)
				callCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
				err := c.Set(callCtx, k, []byte(relValue(k, i)), time.Minute)
				var v []byte
				if err == nil {
					v, err = c.Get(callCtx, k)
				}
				cancel()
				if err != nil || !relValueBelongsTo(k, v) {
					sweepErrs <- fmt.Errorf("after the failover: Set and Get(%q) = %q, %v", k, v, err)
					return
				}
			}
		})
	}
	sweep.Wait()
	close(sweepErrs)
	for err := range sweepErrs {
		t.Error(err)
	}
	sweepTook := time.Since(phase)

	// The old master comes back as a replica of its successor.
	phase = time.Now()
	restartCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	err = victim.Restart(restartCtx)
	cancel()
	if err != nil {
		t.Fatalf("Restart: %v", err)
	}
	restartTook := time.Since(phase)
	if err := cl.WaitOK(ctx); err != nil {
		t.Fatalf("WaitOK after the restart: %v", err)
	}
	t.Logf("%s: sweep of 300 keys after the failover %v; old master restarted in %v, cl.WaitOK %v later",
		tc.name, sweepTook.Round(time.Millisecond), restartTook.Round(time.Millisecond), (time.Since(phase) - restartTook).Round(time.Millisecond))
	errsAfterRestart = errCalls.Load()
	okAfter := okCalls.Load()
	time.Sleep(time.Second)
	loadErrs := errCalls.Load() - errsAfterRestart
	okLoad := okCalls.Load() - okAfter
	// Leave the cluster ready for the next round's kill.
	phase = time.Now()
	crelWaitLinkUp(ctx, t, victim)
	t.Logf("%s: restarted node in sync %v after the second of load", tc.name, time.Since(phase).Round(time.Millisecond))
	stopWorkers()
	st := c.Stats()
	t.Logf("%s: calls ok=%d (before the kill %d, in the second after the restart %d) notfound=%d failed=%d; stats %+v",
		tc.name, okCalls.Load(), okBefore, okLoad, notFound.Load(), errCalls.Load(), st.Stats)

	if n := panics.Load(); n > 0 {
		t.Errorf("%d goroutines panicked; first problem: %v", n, firstBad.Load())
	}
	if n := wrongValues.Load(); n > 0 {
		t.Errorf("%d values read under the wrong key; first problem: %v", n, firstBad.Load())
	}
	if errsBeforeKill > 0 {
		t.Errorf("%d calls failed before the kill; first problem: %v", errsBeforeKill, firstBad.Load())
	}
	if outageErrs == 0 {
		t.Errorf("no call failed after the kill: the kill did not hit the load")
	}
	if loadErrs > 0 || okLoad == 0 {
		t.Errorf("in the second of load after the old master's restart: %d failed calls, %d ok; want 0 failed", loadErrs, okLoad)
	}
	if st.TopologyRefreshes == 0 {
		t.Errorf("Stats().TopologyRefreshes = 0 after a failover; want > 0")
	}
	if err := c.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	closed = true
	crelCheckLeaks(t, before)
}
