package localcache_test

import (
	"fmt"
	"testing"
	"time"

	redisv9 "github.com/redis/go-redis/v9"
	"github.com/redisx-go/kit/internal/launcher"
	"github.com/redisx-go/kit/localcache"
	"github.com/redisx-go/kit/strategy/goredis"
)

// What a command sent through Near's Do invalidates, against a real
// server: the keys it writes whatever the Go type that carries them, and
// everything when the keys it writes cannot be told.

// doVariants returns nearVariants(base) and base in front of GoRedis,
// whose client cleanup closes.
func doVariants(t *testing.T, addr string, base localcache.Near) []nearVariant {
	rdb := redisv9.NewClient(&redisv9.Options{Addr: addr, DisableIdentity: true})
	t.Cleanup(func() { rdb.Close() })
	gr := base
	gr.Inner = goredis.Strategy{Client: rdb}
	gr.Tracking = localcache.TrackBroadcast // go-redis's connections cannot be tracked per key
	return append(nearVariants(base), nearVariant{"go-redis", gr})
}

// TestNearDoInvalidatesKeysOfEveryArgumentType: a SET through Do whose
// key is an int8, uint8, int16, uint16, float64, float32 or bool writes
// the key the server reads (its text: "-8", "2.5", "1"), and a Get of
// that text right after returns the new value, not the one cached before.
func TestNearDoInvalidatesKeysOfEveryArgumentType(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	keys := []struct {
		arg  any
		text string
	}{
		{int8(-8), "-8"},
		{uint8(208), "208"},
		{int16(-1600), "-1600"},
		{uint16(16000), "16000"},
		{2.5, "2.5"},
		{1e21, "1e+21"},
		{float32(0.1), "0.1"},
		{true, "1"},
		{false, "0"},
	}
	const trials = 10
	for _, v := range doVariants(t, srv.Addr(), localcache.Near{}) {
		t.Run(v.name, func(t *testing.T) {
			h := openHarness(t, []string{srv.Addr()}, v.s, false)
			ctx := testCtx(t, 60*time.Second)
			for _, k := range keys {
				stale := 0
				var prev []byte // the value the last trial's Do wrote
				for i := range trials {
					old := fmt.Appendf(nil, "old-%d", i)
					h.otherSetSeen(ctx, k.text, string(old))
					if prev != nil {
						// otherSetSeen saw an invalidation, perhaps a late one of
						// the last trial's write, not yet this one: the other
						// client's write may still be on its way.
						h.awaitServed(ctx, k.text, prev, old, time.Now(), 2*time.Second)
					}
					h.warm(ctx, k.text, old)
					want := fmt.Appendf(nil, "new-%d", i)
					prev = want
					if _, err := h.c.Do(ctx, "SET", k.arg, want); err != nil {
						t.Fatalf("Do(SET %T(%v) %q): %v", k.arg, k.arg, want, err)
					}
					if got, err := h.c.Get(ctx, k.text); !same(got, err, want) {
						if stale++; stale == 1 {
							t.Errorf("Get(%q) right after Do(SET %T(%v) %q) = %s; want %q", k.text, k.arg, k.arg, want, show(got, err), want)
						}
					}
				}
				if stale > 0 {
					t.Errorf("%T key: %d of %d reads right after Do(SET) were stale", k.arg, stale, trials)
				}
			}
		})
	}
}

// TestNearDoOfAScriptWithoutKeysFlushes: EVAL with numkeys 0 may write
// any key (here it writes one it does not declare), so it flushes the
// local cache: a Get right after never returns what was cached before,
// 50 times over. A script that declares its keys invalidates just those.
func TestNearDoOfAScriptWithoutKeysFlushes(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	const iterations = 50
	for _, v := range nearVariants(localcache.Near{}) {
		t.Run(v.name, func(t *testing.T) {
			h := openHarness(t, []string{srv.Addr()}, v.s, false)
			ctx := testCtx(t, 60*time.Second)
			key := "near:eval0:" + v.name
			script := fmt.Sprintf("return redis.call('SET', '%s', ARGV[1])", key)
			stale, unflushed := 0, 0
			var prev []byte // the value the last iteration's script wrote
			for i := range iterations {
				old := fmt.Appendf(nil, "old-%d", i)
				h.otherSetSeen(ctx, key, string(old))
				if prev != nil {
					// As in TestNearDoInvalidatesKeysOfEveryArgumentType: the
					// invalidation seen may be a late one of the last write.
					h.awaitServed(ctx, key, prev, old, time.Now(), 2*time.Second)
				}
				h.warm(ctx, key, old)
				flushes := h.stats().LocalFlushes
				want := fmt.Appendf(nil, "new-%d", i)
				prev = want
				if _, err := h.c.Do(ctx, "EVAL", script, 0, want); err != nil {
					t.Fatalf("Do(EVAL … 0 %q): %v", want, err)
				}
				if got := h.stats().LocalFlushes; got <= flushes {
					if unflushed++; unflushed == 1 {
						t.Errorf("iteration %d: LocalFlushes %d after EVAL with numkeys 0, want > %d", i, got, flushes)
					}
				}
				if got, err := h.c.Get(ctx, key); !same(got, err, want) {
					if stale++; stale <= 3 {
						t.Errorf("iteration %d: Get(%q) right after EVAL with numkeys 0 = %s; want %q", i, key, show(got, err), want)
					}
				}
			}
			if stale > 0 {
				t.Errorf("%d of %d reads right after EVAL with numkeys 0 were stale", stale, iterations)
			}

			// Declared keys are invalidated, and nothing is flushed.
			other := key + ":other"
			h.otherSetSeen(ctx, other, "kept")
			h.warm(ctx, other, []byte("kept"))
			flushes := h.stats().LocalFlushes
			if _, err := h.c.Do(ctx, "EVAL", "return redis.call('SET', KEYS[1], ARGV[1])", 1, key, "declared"); err != nil {
				t.Fatalf("Do(EVAL … 1 key): %v", err)
			}
			if got, err := h.c.Get(ctx, key); !same(got, err, []byte("declared")) {
				t.Errorf("Get(%q) right after EVAL declaring it = %s; want \"declared\"", key, show(got, err))
			}
			hits := h.stats().LocalHits
			if got, err := h.c.Get(ctx, other); !same(got, err, []byte("kept")) || h.stats().LocalHits <= hits {
				t.Errorf("Get(%q) after an EVAL declaring another key = %s, local hit %v; want \"kept\" served locally",
					other, show(got, err), h.stats().LocalHits > hits)
			}
			if got := h.stats().LocalFlushes; got != flushes {
				t.Errorf("LocalFlushes %d → %d after an EVAL declaring its key; want unchanged", flushes, got)
			}
		})
	}
}

// TestNearDoOfAReadOnlyScriptTouchesNothing: EVAL_RO, with or without
// keys, neither flushes nor invalidates: a key cached before is still a
// local hit after.
func TestNearDoOfAReadOnlyScriptTouchesNothing(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	h := openHarness(t, []string{srv.Addr()}, localcache.Near{}, false)
	ctx := testCtx(t, 15*time.Second)
	const key = "near:evalro"
	h.otherSetSeen(ctx, key, "v")
	h.warm(ctx, key, []byte("v"))
	st := h.stats()
	for _, args := range [][]any{
		{"EVAL_RO", "return redis.call('GET', KEYS[1])", 1, key},
		{"EVAL_RO", "return 1", 0},
	} {
		if _, err := h.c.Do(ctx, args...); err != nil {
			t.Fatalf("Do(%q): %v", args, err)
		}
	}
	if v, err := h.c.Get(ctx, key); !same(v, err, []byte("v")) {
		t.Fatalf("Get(%q) = %s, want \"v\"", key, show(v, err))
	}
	if st2 := h.stats(); st2.LocalFlushes != st.LocalFlushes || st2.Invalidations != st.Invalidations || st2.LocalHits <= st.LocalHits {
		t.Errorf("EVAL_RO: LocalFlushes %d → %d, Invalidations %d → %d, LocalHits %d → %d; want unchanged, unchanged, grown",
			st.LocalFlushes, st2.LocalFlushes, st.Invalidations, st2.Invalidations, st.LocalHits, st2.LocalHits)
	}
}
