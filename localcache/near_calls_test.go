package localcache_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	redisv9 "github.com/redis/go-redis/v9"
	"github.com/redisx-go/kit/internal/launcher"
	"github.com/redisx-go/kit/localcache"
	"github.com/redisx-go/kit/redisx"
	"github.com/redisx-go/kit/strategy"
	"github.com/redisx-go/kit/strategy/goredis"
	"go.uber.org/goleak"
)

// The tests of this file hold Near to its behaviour at the edges:
// Close never hangs, returned bytes are the caller's, Do's writes are
// read back at once, failed reads are not cached, statistics count what
// they say, and a done context wins over a local hit.

// proxy forwards connections to a server until it is made silent: from
// then on it accepts new connections and reads them, but never answers,
// as a server that stopped responding would.
type proxy struct {
	ln     net.Listener
	target string
	silent atomic.Bool
	heard  chan struct{} // a silent connection received a request

	mu    sync.Mutex
	conns []net.Conn
	wg    sync.WaitGroup
}

func startProxy(t *testing.T, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	p := &proxy{ln: ln, target: target, heard: make(chan struct{}, 1)}
	p.wg.Go(p.accept)
	return p
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

func (p *proxy) track(c net.Conn) {
	p.mu.Lock()
	p.conns = append(p.conns, c)
	p.mu.Unlock()
}

func (p *proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.track(c)
		if p.silent.Load() {
			p.wg.Go(func() {
				buf := make([]byte, 512)
				for {
					n, err := c.Read(buf)
					if n > 0 {
						select {
						case p.heard <- struct{}{}:
						default:
						}
					}
					if err != nil {
						return
					}
				}
			})
			continue
		}
		u, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.track(u)
		for _, pair := range [][2]net.Conn{{u, c}, {c, u}} {
			p.wg.Go(func() {
				io.Copy(pair[0], pair[1])
				pair[0].Close()
				pair[1].Close()
			})
		}
	}
}

// close closes the listener and every connection and waits for the
// proxy's goroutines.
func (p *proxy) close() {
	p.ln.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// TestNearCloseReturnsWhileServerSilent: the invalidation connection is
// lost, and its replacement reaches a server that accepts but never
// answers — while dialling (CLIENT SETNAME) or after (CLIENT ID). Close
// must still return at once and leave nothing running.
func TestNearCloseReturnsWhileServerSilent(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	for _, tc := range []struct{ name, clientName string }{
		{"silent-after-dial", ""},
		{"silent-during-dial", nearTestName},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := goleak.IgnoreCurrent()
			ctx := testCtx(t, 15*time.Second)
			p := startProxy(t, srv.Addr())
			defer p.close()
			c, err := redisx.New(ctx, redisx.Options{Addrs: []string{p.addr()}, Strategy: localcache.Near{}, ClientName: tc.clientName})
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			closed := false
			defer func() {
				if !closed {
					c.Close()
				}
			}()
			if err := c.Set(ctx, "near:silent", []byte("v"), 0); err != nil {
				t.Fatalf("Set: %v", err)
			}

			p.silent.Store(true)
			if out, err := srv.CLI(ctx, "CLIENT", "KILL", "TYPE", "pubsub"); err != nil || out != "1" {
				t.Fatalf("CLIENT KILL TYPE pubsub = %q, %v; want 1 (the invalidation connection)", out, err)
			}
			select {
			case <-p.heard:
			case <-time.After(5 * time.Second):
				t.Fatalf("no new invalidation connection reached the silent server 5 s after the kill")
			}

			start := time.Now()
			done := make(chan error, 1)
			go func() { done <- c.Close() }()
			select {
			case err := <-done:
				closed = true
				d := time.Since(start)
				t.Logf("Close returned %v after it was called, the server silent", d)
				if d > 2*time.Second {
					t.Errorf("Close took %v while the server was silent, want < 2s", d)
				}
				if err != nil {
					t.Errorf("Close: %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("Close still running 10 s after it was called, the server silent")
			}
			p.close()
			if err := findLeaks(before); err != nil {
				t.Errorf("goroutines left after Close: %v", err)
			}
		})
	}
}

// openNear opens Near's backend directly (not through the facade), to
// reach its optional interfaces.
func openNear(t *testing.T, addr string, n localcache.Near) strategy.Backend {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b, err := n.Open(ctx, strategy.Config{Addrs: []string{addr}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatalf("Near.Open: %v", err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// warmBackend reads key through b until a read is served locally.
func warmBackend(t *testing.T, ctx context.Context, b strategy.Backend, key string) {
	t.Helper()
	st := b.(strategy.Statser)
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(time.Millisecond) {
		hits := st.Stats().LocalHits
		if _, err := b.Get(ctx, key); err != nil && !errors.Is(err, strategy.ErrNotFound) {
			t.Fatalf("Get(%q): %v", key, err)
		}
		if st.Stats().LocalHits > hits {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("Get(%q) still not served locally after 2 s", key)
		}
	}
}

// TestNearReturnedBytesAreTheCallers: every read of Near — Get, MGet,
// GetWithTTL, MGetWithTTL, AppendGet — hands out bytes the caller may
// modify; a local hit is never the cached slice itself.
func TestNearReturnedBytesAreTheCallers(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	b := openNear(t, srv.Addr(), localcache.Near{})
	ctx := testCtx(t, 15*time.Second)
	const key = "near:own"
	if err := b.Set(ctx, key, []byte("hello"), 0); err != nil {
		t.Fatalf("Set: %v", err)
	}
	warmBackend(t, ctx, b, key)
	tg, app := b.(strategy.TTLGetter), b.(strategy.Appender)
	reads := map[string]func() ([]byte, error){
		"Get": func() ([]byte, error) { return b.Get(ctx, key) },
		"MGet": func() ([]byte, error) {
			vs, err := b.(strategy.MultiGetter).MGet(ctx, []string{key})
			if err != nil {
				return nil, err
			}
			return vs[0], nil
		},
		"GetWithTTL": func() ([]byte, error) { v, _, err := tg.GetWithTTL(ctx, key); return v, err },
		"MGetWithTTL": func() ([]byte, error) {
			vs, _, err := tg.MGetWithTTL(ctx, []string{key})
			if err != nil {
				return nil, err
			}
			return vs[0], nil
		},
		"AppendGet": func() ([]byte, error) { return app.AppendGet(ctx, nil, key) },
	}
	st := b.(strategy.Statser)
	hits := st.Stats().LocalHits
	for name, read := range reads {
		for range 3 {
			v, err := read()
			if err != nil || string(v) != "hello" {
				t.Fatalf("%s after the earlier reads' values were modified = %q, %v; want \"hello\"", name, v, err)
			}
			v[0] = 'J'
		}
	}
	if d := st.Stats().LocalHits - hits; d < int64(3*len(reads)) {
		t.Errorf("only %d of the %d reads were local hits: the check proves little", d, 3*len(reads))
	}
}

// TestNearAppendGet: AppendGet appends a hit or a read-through miss after
// dst's bytes, returns dst unchanged with ErrNotFound for a missing key,
// and keeps its own copy of what it caches.
func TestNearAppendGet(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	for _, v := range nearVariants(localcache.Near{NegativeTTL: time.Minute}) {
		t.Run(v.name, func(t *testing.T) {
			b := openNear(t, srv.Addr(), v.s)
			app, ok := b.(strategy.Appender)
			if !ok {
				t.Fatalf("Near's backend %T does not implement strategy.Appender", b)
			}
			ctx := testCtx(t, 15*time.Second)
			key, missing := "near:append:"+v.name, "near:append:missing:"+v.name
			if err := b.Set(ctx, key, []byte("value"), 0); err != nil {
				t.Fatalf("Set: %v", err)
			}
			st := b.(strategy.Statser)
			for i := range 20 { // the first read misses, later ones hit
				dst := append(make([]byte, 0, 64), "prefix:"...)
				got, err := app.AppendGet(ctx, dst, key)
				if err != nil || string(got) != "prefix:value" {
					t.Fatalf("read %d: AppendGet(%q, %q) = %q, %v; want \"prefix:value\"", i, "prefix:", key, got, err)
				}
				if &got[0] != &dst[0] {
					t.Fatalf("read %d: AppendGet into a dst with room returned another array", i)
				}
				got[len(got)-1] = 'X' // the caller's: must not reach the cache
				got, err = app.AppendGet(ctx, dst, missing)
				if !errors.Is(err, strategy.ErrNotFound) || string(got) != "prefix:" {
					t.Fatalf("read %d: AppendGet(missing) = %q, %v; want dst unchanged and ErrNotFound", i, got, err)
				}
				time.Sleep(time.Millisecond)
			}
			if s := st.Stats(); s.LocalHits < 20 {
				t.Errorf("LocalHits = %d after 40 reads of two keys, want most of them", s.LocalHits)
			}
		})
	}
}

// TestNearAppendGetHitAllocations: a local hit appended to a dst with
// room allocates nothing (bar P7's spirit for the near-cache). Without
// -race only: the race detector distorts allocation counts.
func TestNearAppendGetHitAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are distorted by the race detector; run without -race")
	}
	srv := launcher.Standalone(t, launcher.Options{})
	b := openNear(t, srv.Addr(), localcache.Near{})
	app := b.(strategy.Appender)
	ctx := context.Background()
	const key = "near:allocs"
	if err := b.Set(ctx, key, bytes.Repeat([]byte("v"), 64), 0); err != nil {
		t.Fatalf("Set: %v", err)
	}
	warmBackend(t, ctx, b, key)
	dst := make([]byte, 0, 128)
	hits := b.(strategy.Statser).Stats().LocalHits
	allocs := testing.AllocsPerRun(1000, func() {
		if _, err := app.AppendGet(ctx, dst, key); err != nil {
			t.Fatal(err)
		}
	})
	if d := b.(strategy.Statser).Stats().LocalHits - hits; d < 1000 {
		t.Fatalf("only %d of 1001 AppendGet calls were local hits", d)
	}
	if allocs != 0 {
		t.Errorf("AppendGet on a local hit with room in dst: %v allocations, want 0", allocs)
	}
}

// TestNearDoReadsItsOwnWrites: what a command sent through Do writes is
// read back at once — every key of a multi-key write, EVAL's declared
// keys (its second argument is the script), every key after FLUSHALL —
// 200 times over, while a read-only command invalidates nothing.
func TestNearDoReadsItsOwnWrites(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	h := openHarness(t, []string{srv.Addr()}, localcache.Near{}, false)
	ctx := testCtx(t, 60*time.Second)
	const iterations = 200
	for _, tc := range []struct {
		name string
		// do writes key with the value new through Do, or deletes it
		// when new is nil.
		do  func(key string, new []byte) error
		del bool
	}{
		{"MSET", func(key string, new []byte) error {
			_, err := h.c.Do(ctx, "MSET", key+":other", "1", key, new)
			return err
		}, false},
		{"EVAL", func(key string, new []byte) error {
			_, err := h.c.Do(ctx, "EVAL", "return redis.call('SET', KEYS[1], ARGV[1])", 1, key, new)
			return err
		}, false},
		{"FLUSHALL", func(string, []byte) error {
			_, err := h.c.Do(ctx, "FLUSHALL")
			return err
		}, true},
		{"FLUSHDB", func(string, []byte) error {
			_, err := h.c.Do(ctx, "FLUSHDB")
			return err
		}, true},
		{"SORT-STORE", func(key string, new []byte) error { // keys the table cannot tell: flush
			if err := h.other.RPush(ctx, key+":src", new).Err(); err != nil {
				return err
			}
			_, err := h.c.Do(ctx, "SORT", key+":src", "ALPHA", "STORE", key)
			return err
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stale := 0
			for i := range iterations {
				key := fmt.Sprintf("near:do:%s:%d", tc.name, i)
				old := fmt.Appendf(nil, "old-%d", i)
				h.otherSetSeen(ctx, key, string(old))
				h.warm(ctx, key, old)
				var want []byte
				if !tc.del {
					want = fmt.Appendf(nil, "new-%d", i)
				}
				if err := tc.do(key, want); err != nil {
					t.Fatalf("Do %s: %v", tc.name, err)
				}
				got, err := h.c.Get(ctx, key)
				if tc.name == "SORT-STORE" && err == nil {
					// SORT … STORE leaves a list: a GET of it fails on the server.
					t.Fatalf("Get after SORT … STORE = %q, want the server's WRONGTYPE", got)
				}
				if tc.name != "SORT-STORE" && !same(got, err, want) {
					if stale++; stale <= 3 {
						t.Errorf("iteration %d: Get(%q) right after Do %s = %s; want %s", i, key, tc.name, show(got, err), show(want, nil))
					}
				}
			}
			if stale > 0 {
				t.Errorf("%d of %d reads right after Do %s were stale", stale, iterations, tc.name)
			}
		})
	}
	t.Run("read-only", func(t *testing.T) {
		key := "near:do:readonly"
		h.otherSetSeen(ctx, key, "v")
		h.warm(ctx, key, []byte("v"))
		st := h.stats()
		for _, args := range [][]any{{"GET", key}, {"STRLEN", key}, {"EXISTS", key}, {"TTL", key}, {"PING"}} {
			if _, err := h.c.Do(ctx, args...); err != nil {
				t.Fatalf("Do(%v): %v", args, err)
			}
		}
		if v, err := h.c.Get(ctx, key); !same(v, err, []byte("v")) {
			t.Fatalf("Get = %s, want \"v\"", show(v, err))
		}
		if st2 := h.stats(); st2.Invalidations != st.Invalidations || st2.LocalFlushes != st.LocalFlushes || st2.LocalHits <= st.LocalHits {
			t.Errorf("read-only commands: Invalidations %d → %d, LocalFlushes %d → %d, LocalHits %d → %d; want unchanged, unchanged, grown",
				st.Invalidations, st2.Invalidations, st.LocalFlushes, st2.LocalFlushes, st.LocalHits, st2.LocalHits)
		}
	})
}

// TestNearDoesNotCacheFailedReads: an MGet through Near over GoRedis in
// which one key's GET fails on the server (WRONGTYPE: it holds a list)
// returns the error, and — NegativeTTL set — nothing is remembered as
// missing: the list key's reads go on failing on the server.
func TestNearDoesNotCacheFailedReads(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	rdb := redisv9.NewClient(&redisv9.Options{Addr: srv.Addr(), DisableIdentity: true})
	defer rdb.Close()
	h := openHarness(t, []string{srv.Addr()}, localcache.Near{Inner: goredis.Strategy{Client: rdb}, NegativeTTL: time.Minute, Tracking: localcache.TrackBroadcast}, false)
	ctx := testCtx(t, 15*time.Second)
	const str, list, missing = "near:fail:str", "near:fail:list", "near:fail:missing"
	h.otherSet(ctx, str, "v")
	if err := h.other.RPush(ctx, list, "x").Err(); err != nil {
		t.Fatalf("RPUSH: %v", err)
	}
	wrongType := func(err error) bool {
		var re redis.Error
		return errors.As(err, &re) && strings.HasPrefix(string(re), "WRONGTYPE")
	}
	for i := range 3 {
		vs, err := h.c.MGet(ctx, missing, str, list)
		if !wrongType(err) {
			t.Fatalf("MGet %d (missing, str, list) = %q, %v; want a WRONGTYPE error", i, vs, err)
		}
	}
	hits := h.stats().LocalHits
	for i := range 20 {
		if v, err := h.c.Get(ctx, list); !wrongType(err) {
			t.Fatalf("Get(list key) %d after the failed MGets = %s; want the server's WRONGTYPE", i, show(v, err))
		}
		time.Sleep(time.Millisecond)
	}
	if _, err := h.c.Get(ctx, missing); !errors.Is(err, redisx.ErrNotFound) {
		t.Fatalf("Get(missing): %v, want ErrNotFound", err)
	}
	if d := h.stats().LocalHits - hits; d != 0 {
		t.Errorf("%d reads were served locally: a failed MGet left entries behind", d)
	}
}

// TestNearStatsCountRealFlushes: a fresh Near has flushed nothing; losing
// the invalidation connection flushes; after Close, Stats still works and
// names the strategy.
func TestNearStatsCountRealFlushes(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	for _, v := range nearVariants(localcache.Near{}) {
		t.Run(v.name, func(t *testing.T) {
			ctx := testCtx(t, 15*time.Second)
			c, err := redisx.New(ctx, redisx.Options{Addrs: []string{srv.Addr()}, Strategy: v.s, ClientName: nearTestName})
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			defer c.Close()
			want := "near/" + v.name
			if st := c.Stats(); st.LocalFlushes != 0 || st.Strategy != want {
				t.Fatalf("fresh Near: LocalFlushes %d, Strategy %q; want 0, %q", st.LocalFlushes, st.Strategy, want)
			}
			if _, err := c.Do(ctx, "FLUSHDB"); err != nil {
				t.Fatalf("FLUSHDB: %v", err)
			}
			flushes := c.Stats().LocalFlushes
			if flushes < 1 {
				t.Fatalf("LocalFlushes %d after FLUSHDB, want ≥ 1", flushes)
			}
			killClient(t, ctx, srv, invalidationConn(t, ctx, srv))
			for deadline := time.Now().Add(3 * time.Second); c.Stats().LocalFlushes == flushes; time.Sleep(time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("LocalFlushes still %d 3 s after the invalidation connection was killed", flushes)
				}
			}
			if err := c.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			after := c.Stats()
			if after.Strategy != want {
				t.Errorf("Stats after Close: Strategy %q, want %q", after.Strategy, want)
			}
		})
	}
}

// TestNearContextAlreadyDone: a call whose context is done returns the
// context's error on every path, a local hit included.
func TestNearContextAlreadyDone(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	b := openNear(t, srv.Addr(), localcache.Near{NegativeTTL: time.Minute})
	ctx := testCtx(t, 15*time.Second)
	const key, missing = "near:done", "near:done:missing"
	if err := b.Set(ctx, key, []byte("v"), 0); err != nil {
		t.Fatalf("Set: %v", err)
	}
	warmBackend(t, ctx, b, key)
	warmBackend(t, ctx, b, missing) // a remembered miss, served locally too
	done, cancel := context.WithCancel(context.Background())
	cancel()
	tg, app := b.(strategy.TTLGetter), b.(strategy.Appender)
	mg, ms, do := b.(strategy.MultiGetter), b.(strategy.MultiSetter), b.(strategy.Doer)
	for _, k := range []string{key, missing} {
		checks := map[string]error{}
		_, checks["Get"] = b.Get(done, k)
		_, checks["AppendGet"] = app.AppendGet(done, nil, k)
		_, checks["MGet"] = mg.MGet(done, []string{k})
		_, _, checks["GetWithTTL"] = tg.GetWithTTL(done, k)
		_, _, checks["MGetWithTTL"] = tg.MGetWithTTL(done, []string{k})
		checks["Set"] = b.Set(done, k+":w", []byte("v"), 0)
		checks["MSet"] = ms.MSet(done, map[string][]byte{k + ":w": []byte("v")}, 0)
		_, checks["Del"] = b.Del(done, k+":w")
		_, checks["Do"] = do.Do(done, "GET", k)
		for name, err := range checks {
			if !errors.Is(err, context.Canceled) {
				t.Errorf("%s(%q) with a cancelled context: error = %v, want context.Canceled", name, k, err)
			}
		}
	}
}
