package localcache_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redisx-go/kit/internal/launcher"
	"github.com/redisx-go/kit/localcache"
	"github.com/redisx-go/kit/redisx"
)

// Near's coherence with the server (R4): other clients' writes, FLUSHALL,
// eviction and expiry.

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
		cl := sharedCluster.Get(t)
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
