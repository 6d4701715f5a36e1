package localcache_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redisx-go/kit/internal/launcher"
	"github.com/redisx-go/kit/localcache"
	"github.com/redisx-go/kit/redisx"
	"github.com/redisx-go/kit/strategy"
)

// TrackKeys's coherence (bar N2): every data connection of the inner
// strategy is tracked, and the loss of one — even idle, even killed by
// the server — is noticed before a stale read can outlast the bound.

// coherenceBound is N2's bar: how long after another client's write a
// read may still return the value it replaced.
const coherenceBound = 200 * time.Millisecond

// TestTrackKeysCoherentThroughEveryConnection is N2: 200 keys are read
// into the cache by 64 goroutines — so that Multiplexed opens lanes, and
// every connection of Conns: 4, a Pool of 8 and each master of a cluster
// serves reads — and overwritten by another client: 200 ms later, no read
// returns an old value. Again after every data connection, idle, is
// killed by the server (CLIENT KILL), which forgets what they tracked.
func TestTrackKeysCoherentThroughEveryConnection(t *testing.T) {
	t.Run("standalone", func(t *testing.T) {
		srv := launcher.Standalone(t, launcher.Options{})
		for _, v := range []nearVariant{
			{"lanes", localcache.Near{}},
			{"conns-4", localcache.Near{Inner: strategy.Multiplexed{Conns: 4}}},
			{"pool-8", localcache.Near{Inner: strategy.Pool{Size: 8}}},
		} {
			t.Run(v.name, func(t *testing.T) { coherentAcrossKills(t, []*launcher.Server{srv}, v, false) })
		}
	})
	t.Run("cluster", func(t *testing.T) {
		cl := sharedCluster.Get(t)
		for _, v := range []nearVariant{
			{"multiplexed", localcache.Near{}},
			{"slot-grouped", localcache.Near{Inner: strategy.SlotGrouped{}}},
			{"slot-grouped-pool-8", localcache.Near{Inner: strategy.SlotGrouped{Transport: strategy.Pool{Size: 8}}}},
		} {
			t.Run(v.name, func(t *testing.T) { coherentAcrossKills(t, cl.Nodes(), v, true) })
		}
	})
}

func coherentAcrossKills(t *testing.T, nodes []*launcher.Server, v nearVariant, cluster bool) {
	addrs := make([]string, len(nodes))
	for i, n := range nodes {
		addrs[i] = n.Addr()
	}
	name := fmt.Sprintf("n2-%s-%d", v.name, time.Now().UnixNano())
	h := openHarnessNamed(t, addrs, v.s, cluster, name)
	ctx := testCtx(t, 60*time.Second)
	keys := make([]string, 200)
	for i := range keys {
		keys[i] = fmt.Sprintf("n2:%s:{%d}", name, i)
	}
	value := func(round int) func(int) []byte {
		return func(i int) []byte { return fmt.Appendf(nil, "v%d-%d", round, i) }
	}
	h.otherSetAll(ctx, keys, value(1))
	h.cacheAll(ctx, keys, value(1))
	st := h.stats()
	t.Logf("cached %d keys over %d connections (%d lanes)", len(keys), st.Conns, st.Lanes)

	h.otherSetAll(ctx, keys, value(2))
	h.expectServed(ctx, keys, value(1), value(2), time.Now(), false)

	// The hard case: idle connections the server closes. Nothing reads
	// them until the next call; the server no longer tracks what they read.
	h.cacheAll(ctx, keys, value(2))
	flushes := h.stats().LocalFlushes
	killed := 0
	for _, n := range nodes {
		for _, f := range clientList(t, ctx, n) {
			if f["name"] == name {
				killClient(t, ctx, n, f["id"])
				killed++
			}
		}
	}
	h.otherSetAll(ctx, keys, value(3))
	written := time.Now()
	h.expectServed(ctx, keys, value(2), value(3), written, true)
	t.Logf("killed %d data connections; %d flushes since", killed, h.stats().LocalFlushes-flushes)
	if killed == 0 {
		t.Fatalf("no data connection named %q to kill", name)
	}
}

// otherSetAll writes value(i) to keys[i] with the other client.
func (h *harness) otherSetAll(ctx context.Context, keys []string, value func(int) []byte) {
	h.t.Helper()
	for i, k := range keys {
		if err := h.other.Set(ctx, k, value(i), 0).Err(); err != nil {
			h.t.Fatalf("other client SET %q: %v", k, err)
		}
	}
}

// cacheAll reads keys from 64 goroutines for 300 ms — every connection
// the inner strategy opens for them serves reads — then each key until a
// read of it is served locally.
func (h *harness) cacheAll(ctx context.Context, keys []string, want func(int) []byte) {
	h.t.Helper()
	var bad atomic.Pointer[string]
	hammer(ctx, h.c, keys, 300*time.Millisecond, 0, func(i int, v []byte, err error, _ time.Time) {
		if !same(v, err, want(i)) {
			msg := fmt.Sprintf("Get(%q) = %s; want %q", keys[i], show(v, err), want(i))
			bad.CompareAndSwap(nil, &msg)
		}
	})
	if msg := bad.Load(); msg != nil {
		h.t.Fatal(*msg)
	}
	for i, k := range keys {
		h.warm(ctx, k, want(i))
	}
}

// expectServed has 64 goroutines read keys for 2 × coherenceBound after
// since, when old(i) was replaced by new(i): only old or new may be
// returned (or, with failures, an ErrConnection of a read that found its
// connection dead), and no read begun coherenceBound after since may
// return old. Then every key must read new.
func (h *harness) expectServed(ctx context.Context, keys []string, old, new func(int) []byte, since time.Time, failures bool) {
	h.t.Helper()
	var bad atomic.Pointer[string]
	var reads, late, stale, failed atomic.Int64
	hammer(ctx, h.c, keys, time.Until(since.Add(2*coherenceBound)), 100*time.Microsecond, func(i int, v []byte, err error, began time.Time) {
		reads.Add(1)
		isLate := began.Sub(since) > coherenceBound
		if isLate {
			late.Add(1)
		}
		switch {
		case same(v, err, new(i)):
		case same(v, err, old(i)):
			if isLate {
				stale.Add(1)
				msg := fmt.Sprintf("Get(%q) begun %v after the other client's write = %q, the value it replaced", keys[i], began.Sub(since).Round(time.Millisecond), v)
				bad.CompareAndSwap(nil, &msg)
			}
		case failures && errors.Is(err, redisx.ErrConnection):
			failed.Add(1)
		default:
			msg := fmt.Sprintf("Get(%q) = %s; want %q or %q", keys[i], show(v, err), old(i), new(i))
			bad.CompareAndSwap(nil, &msg)
		}
	})
	h.t.Logf("%d reads, %d begun %v after the write: %d stale; %d failed with ErrConnection", reads.Load(), late.Load(), coherenceBound, stale.Load(), failed.Load())
	if msg := bad.Load(); msg != nil {
		h.t.Error(*msg)
	}
	if late.Load() == 0 {
		h.t.Errorf("no read begun %v after the write: the machine is too slow for this check", coherenceBound)
	}
	for i, k := range keys {
		if v, err := h.c.Get(ctx, k); !same(v, err, new(i)) {
			h.t.Fatalf("Get(%q) = %s after the reads; want %q", k, show(v, err), new(i))
		}
	}
}

// hammer reads keys from 64 goroutines, each from its own offset, until
// d has passed, and hands each result to check with the read's start.
// Each goroutine pauses that long after each read: 64 goroutines reading
// local hits without a pause keep both cores of a small machine busy, and
// Go's scheduler then runs a goroutine the network woke (an invalidation
// received, a check's reply) only every 61st turn of a core's queue —
// hundreds of milliseconds, which would be measured instead of Near.
func hammer(ctx context.Context, c *redisx.Client, keys []string, d, pause time.Duration, check func(i int, v []byte, err error, began time.Time)) {
	end := time.Now().Add(d)
	var wg sync.WaitGroup
	for g := range 64 {
		wg.Go(func() {
			for n := g * len(keys) / 64; time.Now().Before(end); n++ {
				i := n % len(keys)
				began := time.Now()
				v, err := c.Get(ctx, keys[i])
				check(i, bytes.Clone(v), err, began)
				if pause > 0 {
					time.Sleep(pause)
				}
			}
		})
	}
	wg.Wait()
}
