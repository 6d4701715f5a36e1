package localcache_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/redisx-go/kit/internal/launcher"
	"github.com/redisx-go/kit/localcache"
	"github.com/redisx-go/kit/redisx"
	"github.com/redisx-go/kit/redisxtest"
	goredisstrategy "github.com/redisx-go/kit/strategy/goredis"
)

// TestTrackingRefusedNamesTheModeToSet: on a server whose default user may
// not run CLIENT TRACKING, a Near that tracks — per key, the default, or by
// broadcast — fails New at once with ErrAuth and the server's NOPERM,
// naming TrackNone as the fix; it never falls back by itself.
func TestTrackingRefusedNamesTheModeToSet(t *testing.T) {
	srv := refusingTracking(t)
	for _, mode := range []localcache.Tracking{localcache.TrackKeys, localcache.TrackBroadcast} {
		t.Run(mode.String(), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			start := time.Now()
			c, err := redisx.New(ctx, redisx.Options{Addrs: []string{srv.Addr()}, Strategy: localcache.Near{Tracking: mode}})
			took := time.Since(start)
			if c != nil {
				c.Close()
			}
			if !errors.Is(err, redisx.ErrAuth) || !strings.Contains(fmt.Sprint(err), "NOPERM") || !strings.Contains(fmt.Sprint(err), "localcache.TrackNone") {
				t.Errorf("New(Near{Tracking: %v}) with CLIENT TRACKING refused = %v; want ErrAuth, NOPERM and localcache.TrackNone named", mode, err)
			}
			t.Logf("%v", err)
			if took > 2*time.Second {
				t.Errorf("New returned after %v; want at once", took)
			}
		})
	}
}

// refusingTracking starts a server whose default user may do anything
// but CLIENT TRACKING, as managed services and restrictive ACLs have it.
func refusingTracking(t *testing.T) *launcher.Server {
	t.Helper()
	srv := launcher.Private(t, launcher.Options{})
	ctx := testCtx(t, 5*time.Second)
	if out, err := srv.CLI(ctx, "ACL", "SETUSER", "default", "-client|tracking"); err != nil {
		t.Fatalf("ACL SETUSER default -client|tracking: %v (%s)", err, out)
	}
	return srv
}

// TestTrackNoneServesWithinTTL: with TrackNone — set in Go or by its URL —
// Near opens on a server that refuses tracking, with no invalidation
// connection; it reads its own writes at once, through every write call,
// and another client's write within TTL + 100 ms.
func TestTrackNoneServesWithinTTL(t *testing.T) {
	const ttl = 300 * time.Millisecond
	srv := refusingTracking(t)
	fromURL, err := redisx.ParseURL("redis://" + srv.Addr() + "?near=1MiB&near_ttl=300ms&near_tracking=none")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		o    redisx.Options
	}{
		{"go", redisx.Options{Addrs: []string{srv.Addr()}, Strategy: localcache.Near{Tracking: localcache.TrackNone, TTL: ttl}}},
		{"url", fromURL},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testCtx(t, 15*time.Second)
			name := fmt.Sprintf("none-%s-%d", tc.name, time.Now().UnixNano())
			tc.o.ClientName = name
			c, err := redisx.New(ctx, tc.o)
			if err != nil {
				t.Fatalf("New(%+v): %v", tc.o.Strategy, err)
			}
			defer c.Close()
			for _, f := range clientList(t, ctx, srv) {
				if strings.HasPrefix(f["name"], name+"-") {
					t.Errorf("connection %s open with TrackNone; want the data connections only", f["name"])
				}
			}
			other := goredis.NewClient(&goredis.Options{Addr: srv.Addr(), Protocol: 2, DisableIdentity: true})
			defer other.Close()
			h := &harness{t: t, c: c, other: other, mode: localcache.TrackNone}

			key := "none:" + name
			writes := []struct {
				what  string
				write func(v string) error
			}{
				{"Set", func(v string) error { return c.Set(ctx, key, []byte(v), 0) }},
				{"MSet", func(v string) error { return c.MSet(ctx, map[string][]byte{key: []byte(v)}, 0) }},
				{"Do SET", func(v string) error { _, err := c.Do(ctx, "SET", key, v); return err }},
			}
			for i, w := range writes {
				v := fmt.Sprint("own-", i)
				if err := w.write(v); err != nil {
					t.Fatalf("%s: %v", w.what, err)
				}
				if got, err := c.Get(ctx, key); err != nil || string(got) != v {
					t.Fatalf("Get right after %s(%q) = %s; want %q", w.what, v, show(got, err), v)
				}
				h.warm(ctx, key, []byte(v))
			}
			if _, err := c.Del(ctx, key); err != nil {
				t.Fatal(err)
			}
			if v, err := c.Get(ctx, key); !errors.Is(err, redisx.ErrNotFound) {
				t.Fatalf("Get right after Del = %s; want ErrNotFound", show(v, err))
			}

			// Another client's write: seen once the entry's TTL ends.
			h.otherSet(ctx, key, "old")
			h.warm(ctx, key, []byte("old"))
			h.otherSet(ctx, key, "new")
			d := h.awaitServed(ctx, key, []byte("old"), []byte("new"), time.Now(), ttl+100*time.Millisecond)
			t.Logf("another client's write served %v after it (TTL %v)", d.Round(time.Millisecond), ttl)
		})
	}
}

// TestTrackKeysOverGoRedisRefused: go-redis's connections cannot be
// tracked per key, so Near's default mode over goredis.Strategy is
// refused, naming the modes that work, rather than caching with no
// invalidation.
func TestTrackKeysOverGoRedisRefused(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	rdb := goredis.NewClient(&goredis.Options{Addr: srv.Addr(), DisableIdentity: true})
	defer rdb.Close()
	c, err := redisx.New(testCtx(t, 10*time.Second), redisx.Options{Addrs: []string{srv.Addr()}, Strategy: localcache.Near{Inner: goredisstrategy.Strategy{Client: rdb}}})
	if c != nil {
		c.Close()
	}
	if !errors.Is(err, redisx.ErrInvalidArgument) || !strings.Contains(fmt.Sprint(err), "TrackBroadcast") {
		t.Errorf("New(Near{Inner: goredis.Strategy{…}}) = %v; want ErrInvalidArgument naming TrackBroadcast", err)
	}
}

// TestTrackKeysFollowsSentinelFailover: over Sentinel, the data
// connections dialled to the new master after a failover are tracked
// too: another client's write there is seen within the bound, also after
// they are killed.
func TestTrackKeysFollowsSentinelFailover(t *testing.T) {
	g := redisxtest.StartSentinel(t, redisxtest.Options{Replicas: 1, Sentinels: 1})
	for _, v := range nearVariants(localcache.Near{}) {
		t.Run(v.name, func(t *testing.T) {
			ctx := testCtx(t, 60*time.Second)
			name := fmt.Sprintf("sentinel-%s-%d", v.name, time.Now().UnixNano())
			o := g.Options()
			o.Strategy, o.ClientName = v.s, name
			c, err := redisx.New(ctx, o)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			o.Strategy, o.ClientName = nil, name+"-other"
			writer, err := redisx.New(ctx, o)
			if err != nil {
				t.Fatal(err)
			}
			defer writer.Close()
			key := "sentinel:" + name
			h := &harness{t: t, c: c}
			// coherent writes old over prev, waits until it is served
			// and cached, writes new over it, and checks how long old is
			// served.
			coherent := func(prev []byte, round int) {
				t.Helper()
				old, want := fmt.Appendf(nil, "old-%d", round), fmt.Appendf(nil, "new-%d", round)
				if err := writer.Set(ctx, key, old, 0); err != nil {
					t.Fatal(err)
				}
				h.awaitServed(ctx, key, prev, old, time.Now(), coherenceBound)
				h.warm(ctx, key, old)
				if err := writer.Set(ctx, key, want, 0); err != nil {
					t.Fatal(err)
				}
				d := h.awaitServed(ctx, key, old, want, time.Now(), coherenceBound)
				t.Logf("round %d: another client's write served %v after it", round, d.Round(time.Microsecond))
			}
			coherent(nil, 1)
			if _, err := g.Failover(ctx); err != nil {
				t.Fatal(err)
			}
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
				if err := writer.Set(ctx, key, []byte("x"), 0); err == nil {
					if _, err := c.Get(ctx, key); err == nil {
						break
					}
				}
				if time.Now().After(deadline) {
					t.Fatal("no write and read through the new master 10 s after the failover")
				}
			}
			coherent([]byte("x"), 2)
			h.warm(ctx, key, []byte("new-2"))
			master, err := g.Master()
			if err != nil {
				t.Fatal(err)
			}
			mc := goredis.NewClient(&goredis.Options{Addr: master, Protocol: 2, DisableIdentity: true})
			defer mc.Close()
			list, err := mc.ClientList(ctx).Result()
			if err != nil {
				t.Fatal(err)
			}
			killed := 0
			for line := range strings.Lines(list) {
				if strings.Contains(line, " name="+name+" ") {
					id, _, _ := strings.Cut(strings.TrimPrefix(line, "id="), " ")
					if err := mc.Do(ctx, "CLIENT", "KILL", "ID", id).Err(); err != nil {
						t.Fatal(err)
					}
					killed++
				}
			}
			if killed == 0 {
				t.Fatalf("no data connection named %q on the new master %s", name, master)
			}
			// What the killed connections tracked is forgotten: the write
			// is seen by the check of the connections, within the bound.
			if err := writer.Set(ctx, key, []byte("after-kill"), 0); err != nil {
				t.Fatal(err)
			}
			d := h.awaitServed(ctx, key, []byte("new-2"), []byte("after-kill"), time.Now(), coherenceBound)
			t.Logf("%d data connections killed: another client's write served %v after it", killed, d.Round(time.Microsecond))
			coherent([]byte("after-kill"), 3)
		})
	}
}

// TestTrackKeysIsToldOfKeysReadOnly: another client writes 100 keys: a
// TrackBroadcast Near is sent all 100, a TrackKeys one none, having read
// none of them; once each has read 10 of them, the next writes of those 10
// reach both.
func TestTrackKeysIsToldOfKeysReadOnly(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	ctx := testCtx(t, 15*time.Second)
	keysH := openHarness(t, []string{srv.Addr()}, localcache.Near{}, false)
	bcastH := openHarness(t, []string{srv.Addr()}, localcache.Near{Tracking: localcache.TrackBroadcast}, false)
	keys := make([]string, 100)
	for i := range keys {
		keys[i] = fmt.Sprintf("told:%d:%d", time.Now().UnixNano(), i)
	}
	received := func(h *harness) int64 { return h.stats().InvalidationsReceived }
	// await waits until h was told of n more keys than from, and returns
	// what it was told then.
	await := func(h *harness, from, n int64) int64 {
		t.Helper()
		deadline := time.Now().Add(2 * time.Second)
		for received(h)-from < n {
			if time.Now().After(deadline) {
				t.Fatalf("%v: told of %d keys within 2 s, want %d", h.mode, received(h)-from, n)
			}
			time.Sleep(time.Millisecond)
		}
		return received(h)
	}
	k0, b0 := received(keysH), received(bcastH)
	for _, k := range keys {
		keysH.otherSet(ctx, k, "v1")
	}
	b1 := await(bcastH, b0, int64(len(keys)))
	time.Sleep(50 * time.Millisecond) // what would reach keysH has, as it reached bcastH
	if got := received(keysH) - k0; got != 0 {
		t.Errorf("TrackKeys: told of %d keys it never read; want 0", got)
	}
	for _, h := range []*harness{keysH, bcastH} {
		for _, k := range keys[:10] {
			h.warm(ctx, k, []byte("v1"))
		}
	}
	k1 := received(keysH)
	for _, k := range keys[:10] {
		keysH.otherSet(ctx, k, "v2")
	}
	await(keysH, k1, 10)
	await(bcastH, b1, 10)
	for _, h := range []*harness{keysH, bcastH} {
		for _, k := range keys[:10] {
			h.awaitServed(ctx, k, []byte("v1"), []byte("v2"), time.Now(), invalidationBound)
		}
	}
	t.Logf("told of: TrackKeys %d keys, TrackBroadcast %d", received(keysH)-k0, received(bcastH)-b0)
}

// TestRefusedNewLeavesNoGoroutine: when New fails after the inner strategy
// opened — the server refuses tracking, in each mode — no goroutine of the
// near-cache is still running when New returns: not its store (whose
// close takes tens of milliseconds, which a New at its context's deadline
// must not wait for either), not a listener.
func TestRefusedNewLeavesNoGoroutine(t *testing.T) {
	srv := refusingTracking(t)
	for _, mode := range []localcache.Tracking{localcache.TrackKeys, localcache.TrackBroadcast} {
		t.Run(mode.String(), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			c, err := redisx.New(ctx, redisx.Options{Addrs: []string{srv.Addr()}, Strategy: localcache.Near{Tracking: mode}})
			left := nearGoroutines() // at once: not after a wait
			if err == nil {
				c.Close()
				t.Fatal("New succeeded on a server that refuses tracking")
			}
			if left != "" {
				t.Errorf("New(Near{Tracking: %v}) returned %v with near-cache goroutines still running:\n%s", mode, err, left)
			}
		})
	}
}

// nearGoroutines returns the stacks of the running goroutines that are in
// package localcache (its tests aside).
func nearGoroutines() string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var found []string
	for g := range strings.SplitSeq(string(buf), "\n\n") {
		if strings.Contains(g, "kit/localcache.") && !strings.Contains(g, "localcache_test.") {
			found = append(found, g)
		}
	}
	return strings.Join(found, "\n\n")
}
