package strategy_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"go.uber.org/goleak"

	"github.com/redisx-go/kit/internal/launcher"
	"github.com/redisx-go/kit/localcache"
	"github.com/redisx-go/kit/redisx"
)

// promotionCall is one path of the facade to key k's master: a read
// checks the value it gets.
type promotionCall struct {
	name string
	call func(ctx context.Context, c *redisx.Client, k string) error
}

// promotionCheck returns err, or an error when v is not a value stored
// under k.
func promotionCheck(k string, v []byte, err error) error {
	if err == nil && !relValueBelongsTo(k, v) {
		return fmt.Errorf("value %q", v)
	}
	return err
}

var promotionCalls = []promotionCall{
	{"Get", func(ctx context.Context, c *redisx.Client, k string) error {
		v, err := c.Get(ctx, k)
		return promotionCheck(k, v, err)
	}},
	{"MGet", func(ctx context.Context, c *redisx.Client, k string) error {
		vs, err := c.MGet(ctx, k)
		if err != nil {
			return err
		}
		return promotionCheck(k, vs[0], nil)
	}},
	{"MSet", func(ctx context.Context, c *redisx.Client, k string) error {
		return c.MSet(ctx, map[string][]byte{k: []byte(relValue(k, 1))}, time.Minute)
	}},
	{"Do", func(ctx context.Context, c *redisx.Client, k string) error {
		v, err := redis.Bytes(c.Do(ctx, "GET", k))
		return promotionCheck(k, v, err)
	}},
	{"DoMulti", func(ctx context.Context, c *redisx.Client, k string) error {
		rs := c.DoMulti(ctx, []any{"GET", k})
		v, err := redis.Bytes(rs[0].Value, rs[0].Err)
		return promotionCheck(k, v, err)
	}},
	// A batch with a blocking command goes by each node's DoMulti. The
	// list shares k's slot: its hash tag is k.
	{"DoMulti/blocking", func(ctx context.Context, c *redisx.Client, k string) error {
		rs := c.DoMulti(ctx, []any{"BLPOP", "{" + k + "}:list", "0.01"}, []any{"GET", k})
		if rs[0].Err != nil {
			return rs[0].Err
		}
		v, err := redis.Bytes(rs[1].Value, rs[1].Err)
		return promotionCheck(k, v, err)
	}},
	// A transaction's connection of its own (Dedicated).
	{"Watch", func(ctx context.Context, c *redisx.Client, k string) error {
		return c.Watch(ctx, func(tx *redisx.Tx) error {
			v, err := redis.Bytes(tx.Do(ctx, "GET", k))
			return promotionCheck(k, v, err)
		}, k)
	}},
	// PING goes to every master.
	{"Ping", func(ctx context.Context, c *redisx.Client, _ string) error { return c.Ping(ctx) }},
}

// promotionWait returns when the replica that watch is connected to
// reports itself a master (ROLE), polling every 10 ms; it fails t at
// deadline.
func promotionWait(t *testing.T, watch redis.Conn, deadline time.Time) time.Time {
	t.Helper()
	for time.Now().Before(deadline) {
		role, err := redis.Values(watch.Do("ROLE"))
		if err == nil && len(role) > 0 {
			if b, ok := role[0].([]byte); ok && string(b) == "master" {
				return time.Now()
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("the replica was not promoted by %v", deadline.Format(time.TimeOnly))
	return time.Time{}
}

// TestClusterKeysReadableSoonAfterPromotion kills a master while clients
// use its keys, one client per strategy (Near too) and path (Get, MGet,
// MSet, Do, DoMulti, a blocking DoMulti, Watch, Ping), and checks that each client serves every key
// within a second of the cluster's promotion of the replica: every path
// whose call meets the dead master's refused connection has the slot map
// reloaded, until the map names the new master, rather than leaving the
// client to the periodic reload (SlotGrouped's MGet and MSet, and PING
// to every master, once did: 10 s after the promotion). The promotion
// is the moment the replica reports itself a master (ROLE, polled on a
// connection of its own).
func TestClusterKeysReadableSoonAfterPromotion(t *testing.T) {
	const (
		bar         = time.Second
		giveUp      = 20 * time.Second // after the kill: past the periodic reload
		callTimeout = 300 * time.Millisecond
	)
	cl := crelCluster(t, launcher.ClusterOptions{Replicas: 1})
	ctx := t.Context()
	if err := cl.WaitOK(ctx); err != nil {
		t.Fatal(err)
	}
	masters, err := cl.Masters(ctx)
	if err != nil || len(masters) != 3 {
		t.Fatalf("Masters = %d, %v; want 3", len(masters), err)
	}
	victim := masters[1]
	replicas, err := cl.ReplicasOf(ctx, victim)
	if err != nil || len(replicas) != 1 {
		t.Fatalf("ReplicasOf(%s) = %v, %v; want one", victim.Addr(), replicas, err)
	}
	keys := crelKeysOn(ctx, t, &crelSlotOwners{cl: cl}, victim, "promoted:", 6)

	strategies := append(crelStrategies(), crelCase{"near", localcache.Near{}})
	before := goleak.IgnoreCurrent()
	type reader struct {
		name string
		c    *redisx.Client
		call promotionCall
	}
	var readers []reader
	for _, tc := range strategies {
		for _, p := range promotionCalls {
			c := crelNew(t, cl, tc.s)
			t.Cleanup(func() { c.Close() })
			readers = append(readers, reader{tc.name + "/" + p.name, c, p})
		}
	}
	for i, k := range keys {
		if err := readers[0].c.Set(ctx, k, []byte(relValue(k, i)), time.Minute); err != nil {
			t.Fatalf("Set(%q): %v", k, err)
		}
	}
	crelWaitReplicated(ctx, t, victim)

	// Each reader goes over the keys in turn from before the kill, and
	// once the replica is promoted over those not served yet, until a
	// call started after the promotion has succeeded on every key. A key
	// counts as served when such a call started, so that a loaded machine's
	// slow calls do not count against the client.
	var killing atomic.Bool     // set before the kill
	var promotedAt atomic.Int64 // Unix nanoseconds
	type outcome struct {
		name    string
		served  time.Time // the start of the last key's first success; zero: not every key
		failed  int
		lastErr error
	}
	results := make(chan outcome, len(readers))
	stop := make(chan struct{})
	stopReaders := sync.OnceFunc(func() { close(stop) })
	var wg sync.WaitGroup
	for _, r := range readers {
		wg.Go(func() {
			o := outcome{name: r.name}
			defer func() { results <- o }()
			left := slices.Clone(keys)
			for j := 0; ; j++ {
				select {
				case <-stop:
					return
				default:
				}
				k := left[j%len(left)]
				start := time.Now()
				callCtx, cancel := context.WithTimeout(context.Background(), callTimeout)
				err := r.call.call(callCtx, r.c, k)
				cancel()
				if err != nil {
					if !killing.Load() {
						o.lastErr = fmt.Errorf("before the kill: %w", err)
						return
					}
					o.failed++
					o.lastErr = err
					time.Sleep(5 * time.Millisecond)
					continue
				}
				if p := promotedAt.Load(); p != 0 && start.UnixNano() > p {
					left = slices.DeleteFunc(left, func(x string) bool { return x == k })
					if len(left) == 0 {
						o.served = start
						return
					}
				}
			}
		})
	}
	defer wg.Wait()
	defer stopReaders()
	time.Sleep(200 * time.Millisecond) // every reader has its connections

	watch, err := redis.DialContext(ctx, "tcp", replicas[0].Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Close()
	kill := time.Now()
	killing.Store(true)
	if err := victim.Kill(); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	promoted := promotionWait(t, watch, kill.Add(giveUp))
	promotedAt.Store(promoted.UnixNano())
	t.Logf("master %s killed; replica %s promoted %v later", victim.Addr(), replicas[0].Addr(), promoted.Sub(kill).Round(time.Millisecond))

	deadline := time.After(giveUp - time.Since(kill))
	for range readers {
		var o outcome
		select {
		case o = <-results:
		case <-deadline:
			stopReaders()
			o = <-results
		}
		if o.served.IsZero() {
			t.Errorf("%s: not every key of the dead master served within %v of the kill (%d failed calls, last: %v)",
				o.name, giveUp, o.failed, o.lastErr)
			continue
		}
		after := o.served.Sub(promoted)
		t.Logf("%s: every key served by a call started %v after the promotion (%d failed calls, last: %v)",
			o.name, after.Round(time.Millisecond), o.failed, o.lastErr)
		if after > bar {
			t.Errorf("%s: every key served %v after the promotion; want ≤ %v", o.name, after.Round(time.Millisecond), bar)
		}
	}
	stopReaders()
	wg.Wait()
	for _, r := range readers {
		r.c.Close()
	}
	crelCheckLeaks(t, before)
}

// TestClusterClientIdleAfterAFailedCallFindsThePromotedMaster: a client
// whose one call met the dead master's refused connection, and that makes
// no call since, knows the promoted replica within a second of the
// promotion: its first call then, with retries off, succeeds. The failed
// dial leads to reloads of the slot map until the map changes, not to one
// reload that finds the cluster still electing.
func TestClusterClientIdleAfterAFailedCallFindsThePromotedMaster(t *testing.T) {
	const bar = time.Second
	cl := crelCluster(t, launcher.ClusterOptions{Replicas: 1})
	ctx := t.Context()
	if err := cl.WaitOK(ctx); err != nil {
		t.Fatal(err)
	}
	masters, err := cl.Masters(ctx)
	if err != nil || len(masters) != 3 {
		t.Fatalf("Masters = %d, %v; want 3", len(masters), err)
	}
	victim := masters[2]
	replicas, err := cl.ReplicasOf(ctx, victim)
	if err != nil || len(replicas) != 1 {
		t.Fatalf("ReplicasOf(%s) = %v, %v; want one", victim.Addr(), replicas, err)
	}
	keys := crelKeysOn(ctx, t, &crelSlotOwners{cl: cl}, victim, "idle:", 4)

	cases := crelStrategies()
	before := goleak.IgnoreCurrent()
	clients := make([]*redisx.Client, len(cases))
	for i, tc := range cases {
		openCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
		c, err := redisx.New(openCtx, redisx.Options{Addrs: cl.Addrs(), Strategy: tc.s, Retry: redisx.Retry{MaxAttempts: 1}})
		cancel()
		if err != nil {
			t.Fatalf("%s: New: %v", tc.name, err)
		}
		t.Cleanup(func() { c.Close() })
		clients[i] = c
	}
	for i, k := range keys {
		if err := clients[0].Set(ctx, k, []byte(relValue(k, i)), time.Minute); err != nil {
			t.Fatalf("Set(%q): %v", k, err)
		}
	}
	for i, c := range clients { // every client has its connections to the victim
		for _, k := range keys {
			if _, err := c.Get(ctx, k); err != nil {
				t.Fatalf("%s: Get(%q) before the kill: %v", cases[i].name, k, err)
			}
		}
	}
	crelWaitReplicated(ctx, t, victim)

	watch, err := redis.DialContext(ctx, "tcp", replicas[0].Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Close()
	kill := time.Now()
	if err := victim.Kill(); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	for i, c := range clients { // one failed call each, then nothing
		if _, err := c.Get(ctx, keys[0]); !errors.Is(err, redisx.ErrConnection) {
			t.Fatalf("%s: Get right after the kill = %v; want ErrConnection", cases[i].name, err)
		}
	}
	promoted := promotionWait(t, watch, kill.Add(20*time.Second))
	t.Logf("master %s killed; replica %s promoted %v later", victim.Addr(), replicas[0].Addr(), promoted.Sub(kill).Round(time.Millisecond))
	time.Sleep(time.Until(promoted.Add(bar)))
	for i, c := range clients {
		for j, k := range keys {
			callCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
			v, err := c.Get(callCtx, k)
			cancel()
			if err != nil || string(v) != relValue(k, j) {
				t.Errorf("%s: Get(%q) %v after the promotion, retries off = %q, %v; want %q",
					cases[i].name, k, bar, v, err, relValue(k, j))
				break
			}
		}
		t.Logf("%s: %d slot-map reloads", cases[i].name, c.Stats().TopologyRefreshes)
	}
	for _, c := range clients {
		c.Close()
	}
	crelCheckLeaks(t, before)
}
