package localcache_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/redisx-go/kit/internal/launcher"
	"github.com/redisx-go/kit/localcache"
	"github.com/redisx-go/kit/redisx"
	"github.com/redisx-go/kit/strategy"
	"go.uber.org/goleak"
)

// The tests of this file check Near's coherence (docs/DESIGN.md section 3
// "Near", bar R4) against real servers: an independent go-redis client
// plays the other process that writes, and the near-cache must stop
// serving what it replaced within 100 ms.

// invalidationBound is R4's bar: how long after another client's write
// the near-cache may still serve the value it replaced.
const invalidationBound = 100 * time.Millisecond

// nearTestName is the ClientName of the clients under test; Near names
// its invalidation connections nearTestName+"-invalidation".
const nearTestName = "near-test"

type nearVariant struct {
	name string
	s    localcache.Near
}

// nearVariants returns base in front of Multiplexed (its zero Inner) and
// in front of a Pool of 8.
func nearVariants(base localcache.Near) []nearVariant {
	pool := base
	pool.Inner = strategy.Pool{Size: 8}
	return []nearVariant{{"multiplexed", base}, {"pool", pool}}
}

// harness is a near-cache client under test and an independent client
// writing to the same server(s).
type harness struct {
	t     *testing.T
	c     *redisx.Client
	other goredis.UniversalClient
	mode  localcache.Tracking
}

// openHarness opens a client with strategy s on addrs (a cluster when
// cluster is true) and an independent go-redis client. Cleanup closes both
// and fails t if a goroutine started since the call is still running.
func openHarness(t *testing.T, addrs []string, s localcache.Near, cluster bool) *harness {
	t.Helper()
	return openHarnessNamed(t, addrs, s, cluster, nearTestName)
}

// openHarnessNamed is openHarness with ClientName name.
func openHarnessNamed(t *testing.T, addrs []string, s localcache.Near, cluster bool, name string) *harness {
	t.Helper()
	before := goleak.IgnoreCurrent()
	var other goredis.UniversalClient
	if cluster {
		other = goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: addrs, Protocol: 2, DisableIdentity: true})
	} else {
		other = goredis.NewClient(&goredis.Options{Addr: addrs[0], Protocol: 2, DisableIdentity: true})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := redisx.New(ctx, redisx.Options{Addrs: addrs, Strategy: s, ClientName: name})
	if err != nil {
		other.Close()
		t.Fatalf("New(%+v): %v", s, err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		other.Close()
		if err := findLeaks(before); err != nil {
			t.Errorf("goroutines left after Close: %v", err)
		}
	})
	return &harness{t: t, c: c, other: other, mode: s.Tracking}
}

// findLeaks waits up to 3 s for the goroutines not ignored by opts to end.
func findLeaks(opts ...goleak.Option) error {
	deadline := time.Now().Add(3 * time.Second)
	for {
		err := goleak.Find(opts...)
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func testCtx(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func (h *harness) stats() redisx.Stats { return h.c.Stats() }

// otherSet writes key with the independent client.
func (h *harness) otherSet(ctx context.Context, key, val string) {
	h.t.Helper()
	if err := h.other.Set(ctx, key, val, 0).Err(); err != nil {
		h.t.Fatalf("other client SET %q: %v", key, err)
	}
}

// otherSetSeen is otherSet that returns, with TrackBroadcast, once the
// near-cache has seen the write's invalidation: a read that stores the
// key right after would otherwise lose its entry to the invalidation
// arriving later. (With TrackKeys no invalidation comes for a key this
// process has not read; warm copes with one that does.)
func (h *harness) otherSetSeen(ctx context.Context, key, val string) {
	h.t.Helper()
	inv := h.stats().Invalidations
	h.otherSet(ctx, key, val)
	if h.mode != localcache.TrackBroadcast {
		return
	}
	for deadline := time.Now().Add(2 * time.Second); h.stats().Invalidations == inv; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			h.t.Fatalf("no invalidation of %q reached the near-cache within 2 s", key)
		}
	}
}

// same reports whether a Get's result is want; a nil want stands for
// ErrNotFound.
func same(v []byte, err error, want []byte) bool {
	if want == nil {
		return errors.Is(err, redisx.ErrNotFound)
	}
	return err == nil && bytes.Equal(v, want)
}

func show(v []byte, err error) string {
	if err != nil {
		return err.Error()
	}
	return strconv.Quote(string(v))
}

// warm reads key until a read of it is served locally and returns how
// many reads that took. Every read must return want (nil: ErrNotFound).
// The read after the one that filled the cache is a local hit unless the
// invalidation of an earlier write of the key, still on its way, deletes
// what that read stored (otherSetSeen waits for it).
func (h *harness) warm(ctx context.Context, key string, want []byte) int {
	h.t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for n := 1; ; n++ {
		hits := h.stats().LocalHits
		v, err := h.c.Get(ctx, key)
		if !same(v, err, want) {
			h.t.Fatalf("Get(%q) = %s; want %s", key, show(v, err), show(want, nil))
		}
		if n > 1 && h.stats().LocalHits > hits {
			return n
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("Get(%q) still not served locally after %d reads", key, n)
		}
		if n > 2 {
			time.Sleep(time.Millisecond)
		}
	}
}

// awaitServed polls Get(key) every millisecond until it returns want
// (nil: ErrNotFound) and returns how long after since that was. Until
// then only old (nil: ErrNotFound) may be served; after limit it fails.
func (h *harness) awaitServed(ctx context.Context, key string, old, want []byte, since time.Time, limit time.Duration) time.Duration {
	h.t.Helper()
	for {
		v, err := h.c.Get(ctx, key)
		if same(v, err, want) {
			return time.Since(since)
		}
		if !same(v, err, old) {
			h.t.Fatalf("Get(%q) = %s; want the old %s or the new %s", key, show(v, err), show(old, nil), show(want, nil))
		}
		if d := time.Since(since); d > limit {
			h.t.Fatalf("Get(%q) still serves %s %v after the other client's write", key, show(v, err), d)
		}
		time.Sleep(time.Millisecond)
	}
}

// percentile returns the p-th percentile (nearest rank) of sorted ds.
func percentile(ds []time.Duration, p int) time.Duration {
	i := (len(ds)*p+99)/100 - 1
	return ds[max(i, 0)]
}

// clientList returns the fields of each line of CLIENT LIST.
func clientList(t *testing.T, ctx context.Context, srv *launcher.Server) []map[string]string {
	t.Helper()
	out, err := srv.CLI(ctx, "CLIENT", "LIST")
	if err != nil {
		t.Fatalf("CLIENT LIST: %v", err)
	}
	var list []map[string]string
	for line := range strings.Lines(out) {
		f := map[string]string{}
		for kv := range strings.FieldsSeq(line) {
			if k, v, ok := strings.Cut(kv, "="); ok {
				f[k] = v
			}
		}
		list = append(list, f)
	}
	return list
}

// invalidationConn returns the ID of the one subscribed invalidation
// connection of the client under test.
func invalidationConn(t *testing.T, ctx context.Context, srv *launcher.Server) string {
	t.Helper()
	var ids []string
	for _, f := range clientList(t, ctx, srv) {
		if f["name"] == nearTestName+"-invalidation" && f["sub"] == "1" {
			ids = append(ids, f["id"])
		}
	}
	if len(ids) != 1 {
		t.Fatalf("found %d invalidation connections (%v), want 1", len(ids), ids)
	}
	return ids[0]
}

func killClient(t *testing.T, ctx context.Context, srv *launcher.Server, id string) {
	t.Helper()
	if out, err := srv.CLI(ctx, "CLIENT", "KILL", "ID", id); err != nil || out != "1" {
		t.Fatalf("CLIENT KILL ID %s = %q, %v; want 1", id, out, err)
	}
}

// TestNearInvalidationConnectionKilled kills the invalidation connection
// and has another client write at once: the cache is flushed as soon as
// the loss is noticed, and from then on no read serves the old value (R4);
// once the connection is back, reads are served locally again, and kept
// coherent.
func TestNearInvalidationConnectionKilled(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	for _, v := range nearVariants(localcache.Near{}) {
		t.Run(v.name, func(t *testing.T) {
			h := openHarness(t, []string{srv.Addr()}, v.s, false)
			ctx := testCtx(t, 15*time.Second)
			key := "near:killinv:" + v.name
			h.otherSetSeen(ctx, key, "old")
			h.warm(ctx, key, []byte("old"))
			flushes := h.stats().LocalFlushes
			id := invalidationConn(t, ctx, srv)

			killClient(t, ctx, srv, id)
			killed := time.Now()
			h.otherSet(ctx, key, "new") // no pause: the write follows the kill at once

			// Until the listener has read the end of its stream, the local
			// copy is all Near knows of: a stale read then is the one window
			// the contract leaves (it closes when the loss is noticed, well
			// within flushBound). Once the cache is flushed, none.
			const flushBound = time.Second
			reads, stale := 0, 0
			for end := time.Now().Add(300 * time.Millisecond); time.Now().Before(end); reads++ {
				flushed := h.stats().LocalFlushes > flushes
				v, err := h.c.Get(ctx, key)
				if same(v, err, []byte("new")) {
					continue
				}
				if !same(v, err, []byte("old")) {
					t.Fatalf("read %d after the kill and the write: Get = %s, want \"new\"", reads, show(v, err))
				}
				if flushed {
					t.Fatalf("read %d: Get = %s after the local cache was flushed, want \"new\"", reads, show(v, err))
				}
				if since := time.Since(killed); since > flushBound {
					t.Fatalf("read %d: Get = %s %v after the kill, the loss not noticed yet; want \"new\"", reads, show(v, err), since)
				}
				stale++
			}
			if got := h.stats().LocalFlushes; got <= flushes {
				t.Errorf("LocalFlushes = %d after the invalidation connection was killed, want > %d", got, flushes)
			}

			// Back within about 2 s: a new invalidation connection, reads
			// served locally again.
			var back string
			for back == "" || back == id {
				if time.Since(killed) > 3*time.Second {
					t.Fatalf("no new invalidation connection %v after the kill", time.Since(killed))
				}
				time.Sleep(20 * time.Millisecond)
				back = ""
				for _, f := range clientList(t, ctx, srv) {
					if f["name"] == nearTestName+"-invalidation" && f["sub"] == "1" {
						back = f["id"]
					}
				}
			}
			for hits := h.stats().LocalHits; h.stats().LocalHits <= hits; {
				if time.Since(killed) > 3*time.Second {
					t.Fatalf("reads not served locally %v after the kill", time.Since(killed))
				}
				if v, err := h.c.Get(ctx, key); !same(v, err, []byte("new")) {
					t.Fatalf("Get = %s, want \"new\"", show(v, err))
				}
				time.Sleep(time.Millisecond)
			}
			t.Logf("%d reads in the 300 ms after the kill, %d stale before the flush, none after; local hits again %v after the kill",
				reads, stale, time.Since(killed).Round(time.Millisecond))

			// And the new connection keeps the cache coherent.
			h.otherSet(ctx, key, "newer")
			h.awaitServed(ctx, key, []byte("new"), []byte("newer"), time.Now(), invalidationBound)
		})
	}
}

// TestNearBroadcastDataConnectionKilled kills the data connections (not
// the invalidation one): with broadcast tracking nothing is lost, the
// cache is not flushed, and another client's write is seen within 100 ms.
// (TrackKeys: TestTrackKeysCoherentThroughEveryConnection.)
func TestNearBroadcastDataConnectionKilled(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	for _, v := range nearVariants(localcache.Near{Tracking: localcache.TrackBroadcast}) {
		t.Run(v.name, func(t *testing.T) {
			h := openHarness(t, []string{srv.Addr()}, v.s, false)
			ctx := testCtx(t, 15*time.Second)
			key := "near:killdata:" + v.name
			h.otherSetSeen(ctx, key, "old")
			h.warm(ctx, key, []byte("old"))
			flushes := h.stats().LocalFlushes
			inv := invalidationConn(t, ctx, srv)

			killed := 0
			for _, f := range clientList(t, ctx, srv) {
				if f["name"] == nearTestName {
					killClient(t, ctx, srv, f["id"])
					killed++
				}
			}
			if killed == 0 {
				t.Fatalf("no data connection named %q in CLIENT LIST", nearTestName)
			}

			h.otherSet(ctx, key, "new")
			written := time.Now()
			var seen time.Duration
			var errs []error
			for time.Since(written) < 300*time.Millisecond {
				v, err := h.c.Get(ctx, key)
				d := time.Since(written)
				switch {
				case same(v, err, []byte("new")):
					if seen == 0 {
						seen = d
					}
				case same(v, err, []byte("old")):
					if d > invalidationBound {
						t.Fatalf("Get = \"old\" %v after the other client's write", d)
					}
				case errors.Is(err, redisx.ErrConnection):
					errs = append(errs, err) // the read that found its connection dead
				default:
					t.Fatalf("Get = %s, want \"old\" or \"new\"", show(v, err))
				}
				time.Sleep(time.Millisecond)
			}
			t.Logf("killed %d data connections; new value served %v after the write; %d failed reads %v", killed, seen, len(errs), errs)
			if seen == 0 || seen > invalidationBound {
				t.Errorf("new value first served %v after the write, want within %v", seen, invalidationBound)
			}
			if got := invalidationConn(t, ctx, srv); got != inv {
				t.Errorf("invalidation connection %s replaced by %s: the kill should have spared it", inv, got)
			}
			if got := h.stats().LocalFlushes; got != flushes {
				t.Errorf("LocalFlushes %d → %d: losing a data connection should flush nothing", flushes, got)
			}
		})
	}
}

// commandCalls returns the calls counted by INFO commandstats for each
// command (lower case, as in "cmdstat_get").
func commandCalls(t *testing.T, ctx context.Context, srv *launcher.Server) map[string]int64 {
	t.Helper()
	out, err := srv.CLI(ctx, "INFO", "commandstats")
	if err != nil {
		t.Fatalf("INFO commandstats: %v", err)
	}
	calls := map[string]int64{}
	for line := range strings.Lines(out) {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		for f := range strings.SplitSeq(rest, ",") {
			if n, ok := strings.CutPrefix(f, "calls="); ok {
				calls[strings.TrimPrefix(name, "cmdstat_")], _ = strconv.ParseInt(n, 10, 64)
			}
		}
	}
	return calls
}

// TestNearOptionsValidation: bad Near settings are refused with
// ErrInvalidArgument before any connection is opened.
func TestNearOptionsValidation(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	ctx := testCtx(t, 15*time.Second)
	connections := func() int64 {
		out, err := srv.CLI(ctx, "INFO", "stats")
		if err != nil {
			t.Fatalf("INFO stats: %v", err)
		}
		for line := range strings.Lines(out) {
			if n, ok := strings.CutPrefix(strings.TrimSpace(line), "total_connections_received:"); ok {
				c, _ := strconv.ParseInt(n, 10, 64)
				return c
			}
		}
		t.Fatalf("no total_connections_received in INFO stats")
		return 0
	}
	before := goleak.IgnoreCurrent()
	conns := connections()
	for _, tc := range []struct {
		name string
		s    localcache.Near
	}{
		{"negative MaxBytes", localcache.Near{MaxBytes: -1}},
		{"negative TTL", localcache.Near{TTL: -time.Second}},
		{"negative NegativeTTL", localcache.Near{NegativeTTL: -time.Second}},
		{"negative PingInterval", localcache.Near{PingInterval: -time.Second}},
		{"Jitter 1.0", localcache.Near{Jitter: 1.0}},
		{"negative Jitter", localcache.Near{Jitter: -0.1}},
		{"Near inside Near", localcache.Near{Inner: localcache.Near{}}},
		{"Near inside Near by pointer", localcache.Near{Inner: &localcache.Near{}}},
		{"unknown Tracking", localcache.Near{Tracking: localcache.TrackNone + 1}},
		{"negative Tracking", localcache.Near{Tracking: -1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := redisx.New(ctx, redisx.Options{Addrs: []string{srv.Addr()}, Strategy: tc.s})
			if err == nil {
				c.Close()
			}
			if !errors.Is(err, redisx.ErrInvalidArgument) {
				t.Errorf("New(%+v) = %v, want ErrInvalidArgument", tc.s, err)
			}
		})
	}
	// The CLI's own connection is the only one since the first count.
	if d := connections() - conns; d != 1 {
		t.Errorf("the server received %d connections while the options were refused, want none", d-1)
	}
	if err := findLeaks(before); err != nil {
		t.Errorf("goroutines left by refused options: %v", err)
	}

	// In range: Jitter just under 1, NegativeTTL over TTL (capped to it).
	h := openHarness(t, []string{srv.Addr()}, localcache.Near{Jitter: 0.99, TTL: time.Second, NegativeTTL: time.Hour}, false)
	h.otherSetSeen(ctx, "near:valid", "ok")
	h.warm(ctx, "near:valid", []byte("ok"))
}

// TestNearCloseDuringWrites closes the client while writes are in flight:
// every call returns, nothing panics, nothing is left running.
func TestNearCloseDuringWrites(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	// A small cache: closing ristretto clears its whole admission sketch.
	for _, v := range nearVariants(localcache.Near{MaxBytes: 1 << 20}) {
		t.Run(v.name, func(t *testing.T) {
			before := goleak.IgnoreCurrent()
			for round := range 30 {
				ctx := testCtx(t, 10*time.Second)
				c, err := redisx.New(ctx, redisx.Options{Addrs: []string{srv.Addr()}, Strategy: v.s})
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				var wg sync.WaitGroup
				for g := range 16 {
					wg.Go(func() {
						key := fmt.Sprintf("near:close:%d", g)
						for i := 0; ; i++ {
							var err error
							switch i % 3 {
							case 0:
								err = c.Set(ctx, key, []byte("v"), 0)
							case 1:
								_, err = c.Get(ctx, key)
							default:
								_, err = c.Del(ctx, key)
							}
							if errors.Is(err, redisx.ErrClosed) {
								return
							}
						}
					})
				}
				time.Sleep(time.Duration(round%5+1) * time.Millisecond)
				c.Close()
				done := make(chan struct{})
				go func() { wg.Wait(); close(done) }()
				select {
				case <-done:
				case <-time.After(5 * time.Second):
					t.Fatalf("round %d: calls still running 5 s after Close", round)
				}
			}
			if err := findLeaks(before); err != nil {
				t.Errorf("goroutines left after Close: %v", err)
			}
		})
	}
}
