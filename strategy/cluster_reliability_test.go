package strategy_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/redisx-go/kit/internal/cluster"
	"github.com/redisx-go/kit/internal/launcher"
	"github.com/redisx-go/kit/redisx"
	"github.com/redisx-go/kit/strategy"
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
		if s := cluster.Slot(k); !seen[s] {
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
		if o.owner(ctx, t, cluster.Slot(k)) == master.Addr() {
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

// crelStopper stops worker goroutines and fails the test with every stack
// when they do not stop: a call hangs.
func crelStopper(t *testing.T, stop chan struct{}, wg *sync.WaitGroup) func() {
	stopped := false
	return func() {
		if stopped {
			return
		}
		stopped = true
		close(stop)
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			buf := make([]byte, 1<<20)
			buf = buf[:runtime.Stack(buf, true)]
			t.Fatalf("workers still running 5 s after stop: a call hangs\n%s", buf)
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
	slot := cluster.Slot(tag)
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
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := 0; g < workers; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			defer func() {
				if r := recover(); r != nil {
					panics.Add(1)
					firstBad.CompareAndSwap(nil, fmt.Sprintf("goroutine %d panicked: %v", g, r))
				}
			}()
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
		}(g)
	}
	stopWorkers := crelStopper(t, stop, &wg)
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
	slot := cluster.Slot("{mig}")
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
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := 0; g < workers; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			defer func() {
				if r := recover(); r != nil {
					errCalls.Add(1)
					firstErr.CompareAndSwap(nil, fmt.Sprintf("goroutine %d panicked: %v", g, r))
				}
			}()
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
		}(g)
	}
	stopWorkers := crelStopper(t, stop, &wg)
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

// crelKeys50 returns 50 keys in 50 distinct slots spread over every
// master of cl, and the master of each key.
func crelKeys50(ctx context.Context, t *testing.T, cl *launcher.Cluster, prefix string) ([]string, []string) {
	t.Helper()
	keys := crelDistinctSlotKeys(prefix, 50)
	owners := &crelSlotOwners{cl: cl}
	addrs := make([]string, len(keys))
	per := map[string]int{}
	for i, k := range keys {
		addrs[i] = owners.owner(ctx, t, cluster.Slot(k))
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

// TestSlotGroupedOneRoundTripPerNode checks SlotGrouped's promise: a
// 50-key MGet over 50 slots on 3 masters is one write per node, where the
// plain transport writes one MGET per slot, one after another; the values
// come back in the caller's order, with nil for missing keys.
func TestSlotGroupedOneRoundTripPerNode(t *testing.T) {
	cl := launcher.ClusterForTest(t, launcher.ClusterOptions{Replicas: 1})
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
	victim, err := cl.MasterOf(ctx, cluster.Slot(keys[0]))
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
	clients := make([]*redisx.Client, len(cases))
	for i, tc := range cases {
		clients[i] = crelNew(t, cl, tc.s)
		defer clients[i].Close()
	}
	for i, k := range keys {
		if err := clients[0].Set(ctx, k, []byte(relValue(k, i)), time.Minute); err != nil {
			t.Fatalf("Set(%q): %v", k, err)
		}
	}
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
	clients := make([]*redisx.Client, len(cases))
	for i, tc := range cases {
		clients[i] = crelNew(t, cl, tc.s)
		defer clients[i].Close()
	}
	for i, k := range keys {
		if err := clients[0].Set(ctx, k, []byte(relValue(k, i)), time.Minute); err != nil {
			t.Fatalf("Set(%q): %v", k, err)
		}
	}
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
	if m, err := cl.MasterOf(ctx, cluster.Slot(keys[0])); err != nil || m.Addr() == victim.Addr() {
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
