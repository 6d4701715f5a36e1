package localcache_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
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
}

// openHarness opens a client with strategy s on addrs (a cluster when
// cluster is true) and an independent go-redis client. Cleanup closes both
// and fails t if a goroutine started since the call is still running.
func openHarness(t *testing.T, addrs []string, s localcache.Near, cluster bool) *harness {
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
	c, err := redisx.New(ctx, redisx.Options{Addrs: addrs, Strategy: s, ClientName: nearTestName})
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
	return &harness{t: t, c: c, other: other}
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

// otherSetSeen is otherSet that returns once the near-cache has seen the
// write's invalidation: a read that stores the key right after would
// otherwise lose its entry to the invalidation arriving later.
func (h *harness) otherSetSeen(ctx context.Context, key, val string) {
	h.t.Helper()
	inv := h.stats().Invalidations
	h.otherSet(ctx, key, val)
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

// TestNearSeesOtherClientsWritesWithin100ms measures R4: after another
// client's SET or DEL of a key cached locally, how long the near-cache
// goes on serving the old value. p99 over 200 keys must be ≤ 100 ms.
func TestNearSeesOtherClientsWritesWithin100ms(t *testing.T) {
	t.Run("standalone", func(t *testing.T) {
		srv := launcher.Standalone(t, launcher.Options{})
		for _, v := range nearVariants(localcache.Near{}) {
			t.Run(v.name, func(t *testing.T) {
				h := openHarness(t, []string{srv.Addr()}, v.s, false)
				for _, del := range []bool{false, true} {
					measureInvalidation(t, h, "near:r4:"+v.name, del)
				}
			})
		}
	})
	t.Run("cluster", func(t *testing.T) {
		cl := launcher.ClusterForTest(t, launcher.ClusterOptions{})
		h := openHarness(t, cl.Addrs(), localcache.Near{}, true)
		for _, del := range []bool{false, true} {
			measureInvalidation(t, h, "near:r4:cluster", del)
		}
	})
}

func measureInvalidation(t *testing.T, h *harness, prefix string, del bool) {
	t.Helper()
	const trials = 200
	ctx := testCtx(t, 15*time.Second)
	op := "SET"
	if del {
		op = "DEL"
	}
	delays := make([]time.Duration, 0, trials)
	secondReadLocal := 0
	for i := range trials {
		key := fmt.Sprintf("%s:%s:%d", prefix, op, i)
		old := fmt.Appendf(nil, "old-%d", i)
		h.otherSetSeen(ctx, key, string(old))
		if h.warm(ctx, key, old) == 2 {
			secondReadLocal++
		}
		var want []byte
		if del {
			if err := h.other.Del(ctx, key).Err(); err != nil {
				t.Fatalf("other client DEL: %v", err)
			}
		} else {
			want = fmt.Appendf(nil, "new-%d", i)
			h.otherSet(ctx, key, string(want))
		}
		delays = append(delays, h.awaitServed(ctx, key, old, want, time.Now(), 2*time.Second))
	}
	slices.Sort(delays)
	p50, p99 := percentile(delays, 50), percentile(delays, 99)
	t.Logf("%s by another client, %d keys: invalidation delay p50 %v, p99 %v, max %v (second read local for %d keys)",
		op, trials, p50, p99, delays[len(delays)-1], secondReadLocal)
	if p99 > invalidationBound {
		t.Errorf("%s by another client: p99 invalidation delay %v > %v", op, p99, invalidationBound)
	}
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

// TestNearDataConnectionKilled kills the data connections (not the
// invalidation one): with broadcast tracking nothing is lost, the cache is
// not flushed, and another client's write is seen within 100 ms.
func TestNearDataConnectionKilled(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	for _, v := range nearVariants(localcache.Near{}) {
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

// TestNearFlushAllEmptiesLocalCache: FLUSHALL by another client arrives
// as a null invalidation and empties the local cache.
func TestNearFlushAllEmptiesLocalCache(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	for _, v := range nearVariants(localcache.Near{}) {
		t.Run(v.name, func(t *testing.T) {
			h := openHarness(t, []string{srv.Addr()}, v.s, false)
			ctx := testCtx(t, 15*time.Second)
			keys := make([]string, 8)
			for i := range keys {
				keys[i] = fmt.Sprintf("near:flushall:%s:%d", v.name, i)
				h.otherSetSeen(ctx, keys[i], keys[i])
				h.warm(ctx, keys[i], []byte(keys[i]))
			}
			flushes := h.stats().LocalFlushes
			if err := h.other.FlushAll(ctx).Err(); err != nil {
				t.Fatalf("FLUSHALL: %v", err)
			}
			flushed := time.Now()
			var worst time.Duration
			for _, k := range keys {
				worst = max(worst, h.awaitServed(ctx, k, []byte(k), nil, flushed, invalidationBound))
			}
			t.Logf("every key gone %v after FLUSHALL", worst)
			if got := h.stats().LocalFlushes; got <= flushes {
				t.Errorf("LocalFlushes = %d after FLUSHALL, want > %d", got, flushes)
			}
		})
	}
}

// TestNearServerEvictionInvalidates: a key the server evicts for memory
// is invalidated like a written one.
func TestNearServerEvictionInvalidates(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{Args: []string{"--maxmemory", "2mb", "--maxmemory-policy", "allkeys-lru"}})
	for _, v := range nearVariants(localcache.Near{}) {
		t.Run(v.name, func(t *testing.T) {
			h := openHarness(t, []string{srv.Addr()}, v.s, false)
			ctx := testCtx(t, 15*time.Second)
			if err := h.other.FlushAll(ctx).Err(); err != nil {
				t.Fatalf("FLUSHALL: %v", err)
			}
			key := "near:evict:A:" + v.name
			h.otherSetSeen(ctx, key, "A")
			h.warm(ctx, key, []byte("A"))

			big := strings.Repeat("x", 32<<10)
			var evicted time.Time
			for i := 0; evicted.IsZero(); i++ {
				if i == 5000 {
					t.Fatalf("%q still on the server after %d writes of %d bytes", key, i, len(big))
				}
				h.otherSet(ctx, fmt.Sprintf("near:evict:fill:%s:%d", v.name, i), big)
				n, err := h.other.Exists(ctx, key).Result()
				if err != nil {
					t.Fatalf("EXISTS: %v", err)
				}
				if n == 0 {
					evicted = time.Now()
					t.Logf("%q evicted by the server after %d writes", key, i+1)
				}
			}
			d := h.awaitServed(ctx, key, []byte("A"), nil, evicted, invalidationBound)
			t.Logf("eviction seen locally %v after EXISTS returned 0", d)
		})
	}
}

// TestNearServerExpiryIsHonoured: an entry never outlives its key's TTL,
// even when no invalidation comes: the server's active expiry is switched
// off, so only the local TTL cap can end the entry.
func TestNearServerExpiryIsHonoured(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{Args: []string{"--enable-debug-command", "local"}})
	ctx := testCtx(t, 15*time.Second)
	if _, err := srv.CLI(ctx, "DEBUG", "SET-ACTIVE-EXPIRE", "0"); err != nil {
		t.Fatalf("DEBUG SET-ACTIVE-EXPIRE 0: %v", err)
	}
	for _, v := range nearVariants(localcache.Near{}) {
		t.Run(v.name, func(t *testing.T) {
			h := openHarness(t, []string{srv.Addr()}, v.s, false)
			key := "near:expiry:" + v.name
			if err := h.c.Set(ctx, key, []byte("short-lived"), 200*time.Millisecond); err != nil {
				t.Fatalf("Set: %v", err)
			}
			set := time.Now()
			h.warm(ctx, key, []byte("short-lived"))
			if d := time.Since(set); d > 150*time.Millisecond {
				t.Skipf("caching the key took %v of its 200 ms TTL; the machine is too slow for this check", d)
			}
			time.Sleep(time.Until(set.Add(250 * time.Millisecond)))
			st := h.stats()
			v, err := h.c.Get(ctx, key)
			if !errors.Is(err, redisx.ErrNotFound) {
				t.Fatalf("Get 250 ms after Set with a 200 ms TTL = %s, want ErrNotFound", show(v, err))
			}
			if got := h.stats().LocalHits; got != st.LocalHits {
				t.Errorf("the read after expiry was served locally (LocalHits %d → %d)", st.LocalHits, got)
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

// TestNearHotReadsServedLocally: 10,000 reads of a cached key cost the
// server next to nothing.
func TestNearHotReadsServedLocally(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	for _, v := range nearVariants(localcache.Near{}) {
		t.Run(v.name, func(t *testing.T) {
			h := openHarness(t, []string{srv.Addr()}, v.s, false)
			ctx := testCtx(t, 15*time.Second)
			key := "near:hot:" + v.name
			h.otherSetSeen(ctx, key, "hot")
			h.warm(ctx, key, []byte("hot"))
			before, hits := commandCalls(t, ctx, srv), h.stats().LocalHits
			const reads = 10_000
			for range reads {
				if v, err := h.c.Get(ctx, key); err != nil || string(v) != "hot" {
					t.Fatalf("Get = %s, want \"hot\"", show(v, err))
				}
			}
			after := commandCalls(t, ctx, srv)
			server := after["get"] + after["mget"] - before["get"] - before["mget"]
			local := h.stats().LocalHits - hits
			t.Logf("%d reads: %d served locally, %d GET/MGET on the server", reads, local, server)
			if server > 5 {
				t.Errorf("the server saw %d GET/MGET for %d reads of a cached key, want ≤ 5", server, reads)
			}
			if local < reads-10 {
				t.Errorf("LocalHits grew by %d over %d reads, want ≥ %d", local, reads, reads-10)
			}
		})
	}
}

// TestNearReadOnceIsHitAtOnce: a key read once — a miss whose reply was
// stored, a value or (NegativeTTL) a missing key — is a local hit on the
// very next read from any goroutine, with no pause in between: a stored
// reply is visible at once, not when ristretto gets round to applying its
// buffered Set, and is not lost to its admission.
func TestNearReadOnceIsHitAtOnce(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	for _, v := range nearVariants(localcache.Near{NegativeTTL: time.Minute}) {
		t.Run(v.name, func(t *testing.T) {
			h := openHarness(t, []string{srv.Addr()}, v.s, false)
			ctx := testCtx(t, 15*time.Second)
			const keys, readers, reads = 20, 8, 50
			for i := range keys {
				key := fmt.Sprintf("near:once:%s:%d", v.name, i)
				var want []byte // odd keys stay missing
				if i%2 == 0 {
					want = fmt.Appendf(nil, "value-%d", i)
					// The invalidation of this write must have arrived
					// before the read: arriving after it, it would rightly
					// delete what the read stored.
					h.otherSetSeen(ctx, key, string(want))
				}
				before := h.stats()
				if got, err := h.c.Get(ctx, key); !same(got, err, want) {
					t.Fatalf("first Get(%q) = %s, want %s", key, show(got, err), show(want, nil))
				}
				first := h.stats()
				if first.LocalMisses != before.LocalMisses+1 || first.LocalHits != before.LocalHits {
					t.Fatalf("first Get(%q): LocalMisses +%d, LocalHits +%d; want a miss", key,
						first.LocalMisses-before.LocalMisses, first.LocalHits-before.LocalHits)
				}
				var wg sync.WaitGroup
				var wrong atomic.Int64
				for range readers {
					wg.Go(func() {
						for range reads {
							if got, err := h.c.Get(ctx, key); !same(got, err, want) {
								wrong.Add(1)
							}
						}
					})
				}
				wg.Wait()
				after := h.stats()
				if n := wrong.Load(); n > 0 {
					t.Fatalf("%d reads of %q after the first returned something else than %s", n, key, show(want, nil))
				}
				if hits, misses := after.LocalHits-first.LocalHits, after.LocalMisses-first.LocalMisses; hits != readers*reads || misses != 0 {
					t.Errorf("key %q: %d reads from %d goroutines right after the first: %d local hits, %d misses; want every one a hit",
						key, readers*reads, readers, hits, misses)
				}
			}
		})
	}
}

// TestNearConcurrentMissesShareOneRead: misses of one key while a read of
// it is in flight wait for that read instead of sending their own — the
// server paused (CLIENT PAUSE), 50 goroutines reading a key not cached
// cost it one GET — and every one of them gets the value.
func TestNearConcurrentMissesShareOneRead(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	for _, v := range nearVariants(localcache.Near{}) {
		t.Run(v.name, func(t *testing.T) {
			h := openHarness(t, []string{srv.Addr()}, v.s, false)
			ctx := testCtx(t, 15*time.Second)
			key := "near:shared:" + v.name
			h.otherSet(ctx, key, "shared")
			before := commandCalls(t, ctx, srv)["get"]
			if err := h.other.Do(ctx, "CLIENT", "PAUSE", 300, "ALL").Err(); err != nil {
				t.Fatalf("CLIENT PAUSE: %v", err)
			}
			const readers = 50
			var wg sync.WaitGroup
			var wrong atomic.Int64
			for range readers {
				wg.Go(func() {
					if got, err := h.c.Get(ctx, key); !same(got, err, []byte("shared")) {
						if wrong.Add(1) == 1 {
							t.Errorf("Get(%q) = %s, want \"shared\"", key, show(got, err))
						}
					}
				})
			}
			wg.Wait()
			if n := commandCalls(t, ctx, srv)["get"] - before; n != 1 {
				t.Errorf("%d concurrent reads of %q while the server was paused sent %d GETs, want 1", readers, key, n)
			}
		})
	}
}

// TestNearReadYourWrites: a goroutine reads its own write at once, while
// other goroutines read the same keys (and may be about to store the old
// value) concurrently.
func TestNearReadYourWrites(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	for _, v := range nearVariants(localcache.Near{}) {
		t.Run(v.name, func(t *testing.T) {
			h := openHarness(t, []string{srv.Addr()}, v.s, false)
			ctx := testCtx(t, 15*time.Second)
			const writers, readers, iterations = 50, 10, 100
			keys := make([]string, writers)
			for i := range keys {
				keys[i] = fmt.Sprintf("near:ryw:%s:%d", v.name, i)
			}
			var stop atomic.Bool
			var failures atomic.Int64
			var rwg, wwg sync.WaitGroup
			for r := range readers {
				rwg.Go(func() {
					for j := r; !stop.Load(); j++ {
						if _, err := h.c.Get(ctx, keys[j%writers]); err != nil && !errors.Is(err, redisx.ErrNotFound) {
							if failures.Add(1) <= 5 {
								t.Errorf("reader Get: %v", err)
							}
						}
					}
				})
			}
			for w := range writers {
				wwg.Go(func() {
					for n := range iterations {
						want := fmt.Appendf(nil, "v-%d-%d", w, n)
						if err := h.c.Set(ctx, keys[w], want, 0); err != nil {
							if failures.Add(1) <= 5 {
								t.Errorf("Set: %v", err)
							}
							return
						}
						if got, err := h.c.Get(ctx, keys[w]); !same(got, err, want) {
							if failures.Add(1) <= 5 {
								t.Errorf("writer %d, iteration %d: Get after own Set = %s, want %q", w, n, show(got, err), want)
							}
						}
					}
				})
			}
			wwg.Wait()
			stop.Store(true)
			rwg.Wait()
			st := h.stats()
			t.Logf("%d own writes read back; local hits %d, misses %d, invalidations %d; %d failures",
				writers*iterations, st.LocalHits, st.LocalMisses, st.Invalidations, failures.Load())
		})
	}
}

// TestNearMGetFetchesOnlyMisses: MGET of 10 keys, 5 of them cached, sends
// one MGET for the other 5 and returns all 10 in order.
func TestNearMGetFetchesOnlyMisses(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	for _, v := range nearVariants(localcache.Near{}) {
		t.Run(v.name, func(t *testing.T) {
			h := openHarness(t, []string{srv.Addr()}, v.s, false)
			ctx := testCtx(t, 15*time.Second)
			keys := make([]string, 10)
			for i := range keys {
				keys[i] = fmt.Sprintf("near:mget:%s:%d", v.name, i)
				h.otherSetSeen(ctx, keys[i], "value-"+strconv.Itoa(i))
			}
			for i := 0; i < len(keys); i += 2 {
				h.warm(ctx, keys[i], []byte("value-"+strconv.Itoa(i)))
			}
			before, st := commandCalls(t, ctx, srv), h.stats()
			vs, err := h.c.MGet(ctx, keys...)
			if err != nil {
				t.Fatalf("MGet: %v", err)
			}
			after, st2 := commandCalls(t, ctx, srv), h.stats()
			if len(vs) != len(keys) {
				t.Fatalf("MGet returned %d values for %d keys", len(vs), len(keys))
			}
			for i, v := range vs {
				if want := "value-" + strconv.Itoa(i); string(v) != want {
					t.Errorf("MGet[%d] (%s) = %q, want %q", i, keys[i], v, want)
				}
			}
			// Near's inner strategies read TTLs along (TTLGetter): one PTTL
			// per fetched key proves how many keys the MGET carried.
			if d := after["mget"] - before["mget"]; d != 1 {
				t.Errorf("the server saw %d MGET, want 1", d)
			}
			if d := after["pttl"] - before["pttl"]; d != 5 {
				t.Errorf("the server was asked the TTL of %d keys, want the 5 misses", d)
			}
			if d := after["get"] - before["get"]; d != 0 {
				t.Errorf("the server saw %d GET, want 0", d)
			}
			if d := st2.LocalHits - st.LocalHits; d != 5 {
				t.Errorf("LocalHits grew by %d, want 5", d)
			}
			if d := st2.LocalMisses - st.LocalMisses; d != 5 {
				t.Errorf("LocalMisses grew by %d, want 5", d)
			}
		})
	}
}

// TestNearNegativeTTL: with NegativeTTL a miss is remembered, and a write
// by another client ends it like any entry.
func TestNearNegativeTTL(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	for _, v := range nearVariants(localcache.Near{NegativeTTL: time.Minute}) {
		t.Run(v.name, func(t *testing.T) {
			h := openHarness(t, []string{srv.Addr()}, v.s, false)
			ctx := testCtx(t, 15*time.Second)
			key := "near:negative:" + v.name
			misses := h.stats().LocalMisses
			if _, err := h.c.Get(ctx, key); !errors.Is(err, redisx.ErrNotFound) {
				t.Fatalf("Get of a missing key: %v, want ErrNotFound", err)
			}
			if got := h.stats().LocalMisses; got != misses+1 {
				t.Errorf("LocalMisses %d → %d on the first read, want +1", misses, got)
			}
			h.warm(ctx, key, nil) // the miss is now served locally
			h.otherSet(ctx, key, "appeared")
			h.awaitServed(ctx, key, nil, []byte("appeared"), time.Now(), invalidationBound)
		})
	}
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
