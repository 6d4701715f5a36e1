package localcache_test

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redisx-go/kit/internal/launcher"
	"github.com/redisx-go/kit/localcache"
	"github.com/redisx-go/kit/redisx"
)

// Near's reads: hot keys served locally, a key read once a hit at once,
// concurrent misses sharing one read, its own writes read back, MGet
// fetching only the misses, and a negative TTL.

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
