package redisx_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/redisx-go/kit/internal/launcher"
	"github.com/redisx-go/kit/redisx"
	"github.com/redisx-go/kit/strategy"
	"go.uber.org/goleak"
)

// fakeBackend is an in-memory strategy.Backend with none of the optional
// interfaces, so every facade fallback is exercised. It counts the calls
// it sees; getErr, when set, is returned by every Get.
type fakeBackend struct {
	mu     sync.Mutex
	data   map[string][]byte
	getErr error
	gets   int
	sets   int
	dels   int
	closes int
}

func newFake() *fakeBackend { return &fakeBackend{data: map[string][]byte{}} }

func (f *fakeBackend) Get(ctx context.Context, key string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gets++
	if f.getErr != nil {
		return nil, f.getErr
	}
	v, ok := f.data[key]
	if !ok {
		return nil, fmt.Errorf("%w: fake", strategy.ErrNotFound)
	}
	return append([]byte{}, v...), nil
}

func (f *fakeBackend) Set(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sets++
	f.data[key] = append([]byte{}, value...)
	return nil
}

func (f *fakeBackend) Del(ctx context.Context, keys ...string) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.dels++
	var n int64
	for _, k := range keys {
		if _, ok := f.data[k]; ok {
			delete(f.data, k)
			n++
		}
	}
	return n, nil
}

func (f *fakeBackend) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closes++
	return nil
}

// calls is how many Get, Set and Del calls f has seen.
func (f *fakeBackend) calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.gets + f.sets + f.dels
}

func (f *fakeBackend) getCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.gets
}

func (f *fakeBackend) setCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.sets
}

func (f *fakeBackend) closeCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.closes
}

func (f *fakeBackend) stored(key string) ([]byte, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	v, ok := f.data[key]
	return v, ok
}

func (f *fakeBackend) setGetErr(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.getErr = err
}

func newFakeClient(t *testing.T) (*redisx.Client, *fakeBackend) {
	t.Helper()
	f := newFake()
	c := redisx.NewFromBackend(f)
	t.Cleanup(func() { c.Close() })
	return c, f
}

// waitFor polls cond until it holds or a few seconds pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// tooBig is one value over Redis's limit, allocated once for every test.
// Its pages are never written, so it costs address space, not memory.
var tooBig = sync.OnceValue(func() []byte { return make([]byte, strategy.MaxValueSize+1) })

// tooBigKey is tooBig as a key, sharing its never-written pages.
func tooBigKey() string { b := tooBig(); return unsafe.String(unsafe.SliceData(b), len(b)) }

func TestNewFromBackendKeepsBackend(t *testing.T) {
	c, f := newFakeClient(t)
	if got := c.Backend(); got != strategy.Backend(f) {
		t.Errorf("Backend() = %v; want the fake passed to NewFromBackend", got)
	}
}

func TestGetSetDelThroughBackend(t *testing.T) {
	ctx := context.Background()
	c, _ := newFakeClient(t)
	if err := c.Set(ctx, "k", []byte("v"), time.Minute); err != nil {
		t.Fatalf("Set = %v", err)
	}
	if v, err := c.Get(ctx, "k"); err != nil || string(v) != "v" {
		t.Errorf("Get(%q) = %q, %v; want %q, nil", "k", v, err, "v")
	}
	if n, err := c.Del(ctx, "k", "missing"); err != nil || n != 1 {
		t.Errorf("Del(k, missing) = %d, %v; want 1, nil", n, err)
	}
	if v, err := c.Get(ctx, "k"); !errors.Is(err, redisx.ErrNotFound) {
		t.Errorf("Get(%q) after Del = %q, %v; want ErrNotFound", "k", v, err)
	}
}

func TestDelWithoutKeysSendsNothing(t *testing.T) {
	c, f := newFakeClient(t)
	if n, err := c.Del(context.Background()); n != 0 || err != nil {
		t.Errorf("Del() = %d, %v; want 0, nil", n, err)
	}
	if got := f.calls(); got != 0 {
		t.Errorf("backend saw %d calls; want 0", got)
	}
}

func TestMGetFallsBackToGetPerKey(t *testing.T) {
	ctx := context.Background()
	c, f := newFakeClient(t)
	if err := c.Set(ctx, "a", []byte("1"), 0); err != nil {
		t.Fatal(err)
	}
	if err := c.Set(ctx, "empty", []byte{}, 0); err != nil {
		t.Fatal(err)
	}
	if err := c.Set(ctx, "c", []byte("3"), 0); err != nil {
		t.Fatal(err)
	}
	gets := f.getCount()

	keys := []string{"a", "b", "empty", "c", "d"}
	vs, err := c.MGet(ctx, keys...)
	if err != nil {
		t.Fatalf("MGet(%q) = %v", keys, err)
	}
	want := [][]byte{[]byte("1"), nil, {}, []byte("3"), nil}
	if len(vs) != len(want) {
		t.Fatalf("MGet(%q) returned %d values; want %d", keys, len(vs), len(want))
	}
	for i := range want {
		if (vs[i] == nil) != (want[i] == nil) || !bytes.Equal(vs[i], want[i]) {
			t.Errorf("MGet(%q)[%d] = %#v; want %#v", keys, i, vs[i], want[i])
		}
	}
	if got := f.getCount() - gets; got != len(keys) {
		t.Errorf("MGet of %d keys made %d Get calls; want %d", len(keys), got, len(keys))
	}
}

func TestMGetWithoutKeysSendsNothing(t *testing.T) {
	c, f := newFakeClient(t)
	vs, err := c.MGet(context.Background())
	if err != nil || vs == nil || len(vs) != 0 {
		t.Errorf("MGet() = %#v, %v; want an empty non-nil slice, nil", vs, err)
	}
	if got := f.calls(); got != 0 {
		t.Errorf("backend saw %d calls; want 0", got)
	}
}

func TestMGetFallbackReturnsGetError(t *testing.T) {
	c, f := newFakeClient(t)
	boom := fmt.Errorf("%w: fake reset", redisx.ErrConnection)
	f.setGetErr(boom)
	vs, err := c.MGet(context.Background(), "a", "b")
	if !errors.Is(err, redisx.ErrConnection) || vs != nil {
		t.Errorf("MGet(a, b) = %q, %v; want nil, an error wrapping ErrConnection", vs, err)
	}
}

func TestMSetFallsBackToSetPerPair(t *testing.T) {
	ctx := context.Background()
	c, f := newFakeClient(t)
	kv := map[string][]byte{"a": []byte("1"), "b": []byte("2"), "e": {}}
	if err := c.MSet(ctx, kv, time.Minute); err != nil {
		t.Fatalf("MSet = %v", err)
	}
	if got := f.setCount(); got != len(kv) {
		t.Errorf("MSet of %d pairs made %d Set calls; want %d", len(kv), got, len(kv))
	}
	for k, want := range kv {
		if v, ok := f.stored(k); !ok || !bytes.Equal(v, want) {
			t.Errorf("after MSet, backend holds %q = %q, %v; want %q, true", k, v, ok, want)
		}
	}
}

func TestMSetEmptyMapSendsNothing(t *testing.T) {
	c, f := newFakeClient(t)
	if err := c.MSet(context.Background(), map[string][]byte{}, 0); err != nil {
		t.Errorf("MSet(empty map) = %v; want nil", err)
	}
	if got := f.calls(); got != 0 {
		t.Errorf("backend saw %d calls; want 0", got)
	}
}

func TestDoWithoutDoerIsUnsupported(t *testing.T) {
	c, f := newFakeClient(t)
	v, err := c.Do(context.Background(), "PING")
	if !errors.Is(err, redisx.ErrUnsupported) || v != nil {
		t.Errorf("Do(PING) = %v, %v; want nil, an error wrapping ErrUnsupported", v, err)
	}
	if got := f.calls(); got != 0 {
		t.Errorf("backend saw %d calls; want 0", got)
	}
}

func TestStatsWithoutStatserHasOnlyFacadeCounters(t *testing.T) {
	ctx := context.Background()
	c, _ := newFakeClient(t)
	if got := c.Stats(); got != (redisx.Stats{}) {
		t.Errorf("Stats() of a new client = %+v; want zero", got)
	}
	if _, err := c.GetOrLoad(ctx, "k", 0, func(context.Context) ([]byte, error) { return []byte("v"), nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetOrLoad(ctx, "bad", 0, func(context.Context) ([]byte, error) { return nil, errors.New("down") }); err == nil {
		t.Fatal("GetOrLoad with a failing loader succeeded")
	}
	want := redisx.Stats{Loads: 2, LoadErrors: 1}
	if got := c.Stats(); got != want {
		t.Errorf("Stats() = %+v; want %+v", got, want)
	}
}

func TestInvalidInputNeverReachesBackend(t *testing.T) {
	ctx := context.Background()
	load := func(context.Context) ([]byte, error) { return []byte("v"), nil }
	tests := []struct {
		name string
		call func(c *redisx.Client) error
	}{
		{"Set value over MaxValueSize", func(c *redisx.Client) error {
			return c.Set(ctx, "k", tooBig(), 0)
		}},
		{"MSet value over MaxValueSize", func(c *redisx.Client) error {
			return c.MSet(ctx, map[string][]byte{"a": []byte("ok"), "k": tooBig()}, 0)
		}},
		{"Get key over MaxValueSize", func(c *redisx.Client) error {
			_, err := c.Get(ctx, tooBigKey())
			return err
		}},
		{"AppendGet key over MaxValueSize", func(c *redisx.Client) error {
			_, err := c.AppendGet(ctx, nil, tooBigKey())
			return err
		}},
		{"Set key over MaxValueSize", func(c *redisx.Client) error {
			return c.Set(ctx, tooBigKey(), []byte("v"), 0)
		}},
		{"Del key over MaxValueSize", func(c *redisx.Client) error {
			_, err := c.Del(ctx, "a", tooBigKey())
			return err
		}},
		{"MGet key over MaxValueSize", func(c *redisx.Client) error {
			_, err := c.MGet(ctx, "a", tooBigKey())
			return err
		}},
		{"MSet key over MaxValueSize", func(c *redisx.Client) error {
			return c.MSet(ctx, map[string][]byte{"a": []byte("ok"), tooBigKey(): []byte("v")}, 0)
		}},
		{"GetOrLoad key over MaxValueSize", func(c *redisx.Client) error {
			_, err := c.GetOrLoad(ctx, tooBigKey(), time.Minute, load)
			return err
		}},
		{"Set negative ttl", func(c *redisx.Client) error {
			return c.Set(ctx, "k", []byte("v"), -time.Second)
		}},
		{"MSet negative ttl", func(c *redisx.Client) error {
			return c.MSet(ctx, map[string][]byte{"k": []byte("v")}, -time.Second)
		}},
		{"MSet nil map", func(c *redisx.Client) error {
			return c.MSet(ctx, nil, time.Minute)
		}},
		{"GetOrLoad negative ttl", func(c *redisx.Client) error {
			_, err := c.GetOrLoad(ctx, "k", -time.Second, load)
			return err
		}},
		{"GetOrLoad nil loader", func(c *redisx.Client) error {
			_, err := c.GetOrLoad(ctx, "k", time.Minute, nil)
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, f := newFakeClient(t)
			if err := tt.call(c); !errors.Is(err, redisx.ErrInvalidArgument) {
				t.Errorf("error = %v; want one wrapping ErrInvalidArgument", err)
			}
			if got := f.calls(); got != 0 {
				t.Errorf("backend saw %d calls; want 0", got)
			}
		})
	}
}

func TestCloseIsIdempotentAndClosesBackendOnce(t *testing.T) {
	f := newFake()
	c := redisx.NewFromBackend(f)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			if err := c.Close(); err != nil {
				t.Errorf("Close = %v", err)
			}
		})
	}
	wg.Wait()
	if err := c.Close(); err != nil {
		t.Errorf("Close again = %v", err)
	}
	if got := f.closeCount(); got != 1 {
		t.Errorf("backend closed %d times; want 1", got)
	}
}

func TestCallsAfterCloseReturnErrClosed(t *testing.T) {
	ctx := context.Background()
	f := newFake()
	c := redisx.NewFromBackend(f)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	calls := map[string]func() error{
		"Get": func() error { _, err := c.Get(ctx, "k"); return err },
		"Set": func() error { return c.Set(ctx, "k", []byte("v"), 0) },
		"Del": func() error { _, err := c.Del(ctx, "k"); return err },
		"MGet": func() error {
			_, err := c.MGet(ctx, "k")
			return err
		},
		"MSet": func() error { return c.MSet(ctx, map[string][]byte{"k": nil}, 0) },
		"Do":   func() error { _, err := c.Do(ctx, "PING"); return err },
		"GetOrLoad": func() error {
			_, err := c.GetOrLoad(ctx, "k", 0, func(context.Context) ([]byte, error) { return []byte("v"), nil })
			return err
		},
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, redisx.ErrClosed) {
			t.Errorf("%s after Close = %v; want ErrClosed", name, err)
		}
	}
	if got := f.calls(); got != 0 {
		t.Errorf("backend saw %d calls after Close; want 0", got)
	}
}

func TestNewRejectsInvalidOptions(t *testing.T) {
	tests := []struct {
		name string
		o    redisx.Options
	}{
		{"address without port", redisx.Options{Addrs: []string{"nohost"}}},
		{"second address without port", redisx.Options{Addrs: []string{"127.0.0.1:1", "nohost"}}},
		{"negative DB", redisx.Options{DB: -1}},
		{"Username without Password", redisx.Options{Username: "app"}},
		{"negative DialTimeout", redisx.Options{DialTimeout: -time.Second}},
		{"negative Multiplexed.Conns", redisx.Options{Strategy: strategy.Multiplexed{Conns: -1}}},
		{"negative Pool.Size", redisx.Options{Strategy: strategy.Pool{Size: -1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			c, err := redisx.New(ctx, tt.o)
			if !errors.Is(err, redisx.ErrInvalidArgument) || c != nil {
				if c != nil {
					c.Close()
				}
				t.Errorf("New(%+v) = client %t, %v; want nil, an error wrapping ErrInvalidArgument", tt.o, c != nil, err)
			}
		})
	}
}

func TestNewClosedPortFailsWithinDialTimeout(t *testing.T) {
	defer goleak.VerifyNone(t)
	port, err := launcher.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	const dialTimeout = 2 * time.Second
	for _, tc := range []struct {
		name string
		s    strategy.Strategy
	}{
		{"multiplexed", strategy.Multiplexed{}},
		{"pool", strategy.Pool{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			c, err := redisx.New(context.Background(), redisx.Options{
				Addrs:       []string{addr},
				Strategy:    tc.s,
				DialTimeout: dialTimeout,
			})
			elapsed := time.Since(start)
			if c != nil {
				c.Close()
			}
			if !errors.Is(err, redisx.ErrConnection) || c != nil {
				t.Errorf("New(%s) = client %t, %v; want nil, an error wrapping ErrConnection", addr, c != nil, err)
			}
			// Slack for a loaded machine running -race.
			if elapsed > dialTimeout+time.Second {
				t.Errorf("New(%s) took %v; want at most DialTimeout %v", addr, elapsed, dialTimeout)
			}
		})
	}
}

// TestNewVerifiesServerAnswers points New at a loopback listener that
// accepts connections and never replies: with no AUTH, SELECT nor CLIENT
// SETNAME to send, only a PING tells it from a Redis server.
func TestNewVerifiesServerAnswers(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var accepted sync.WaitGroup
	accepted.Go(func() {
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	})
	defer accepted.Wait()
	defer l.Close()

	const dialTimeout = 300 * time.Millisecond
	for _, tc := range []struct {
		name string
		s    strategy.Strategy
	}{
		{"multiplexed", strategy.Multiplexed{}},
		{"pool", strategy.Pool{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			c, err := redisx.New(context.Background(), redisx.Options{
				Addrs:       []string{l.Addr().String()},
				Strategy:    tc.s,
				DialTimeout: dialTimeout,
			})
			elapsed := time.Since(start)
			if c != nil {
				c.Close()
			}
			if !errors.Is(err, redisx.ErrConnection) || c != nil {
				t.Errorf("New(silent listener) = client %t, %v; want nil, an error wrapping ErrConnection", c != nil, err)
			}
			if elapsed > dialTimeout+time.Second {
				t.Errorf("New(silent listener) took %v; want at most DialTimeout %v", elapsed, dialTimeout)
			}
		})
	}
}

// TestConnectionOutlivesDialTimeout checks that the handshake's deadline
// does not stay on a connection: one that sent CLIENT SETNAME and SELECT
// while dialling must still serve calls, without being dropped, well
// after DialTimeout has passed.
func TestConnectionOutlivesDialTimeout(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	const dialTimeout = 300 * time.Millisecond
	for _, tc := range []struct {
		name        string
		s           strategy.Strategy
		readTimeout time.Duration
	}{
		{"multiplexed", strategy.Multiplexed{}, 0},
		{"multiplexed/read_timeout=none", strategy.Multiplexed{}, -1},
		{"pool", strategy.Pool{Size: 1}, 0},
		{"pool/read_timeout=none", strategy.Pool{Size: 1}, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			c, err := redisx.New(ctx, redisx.Options{
				Addrs:       []string{srv.Addr()},
				Strategy:    tc.s,
				DB:          1,
				ClientName:  "redisx-test",
				DialTimeout: dialTimeout,
				ReadTimeout: tc.readTimeout,
			})
			if err != nil {
				t.Fatalf("New = %v", err)
			}
			defer c.Close()
			if err := c.Set(ctx, "outlive", []byte("v"), time.Minute); err != nil {
				t.Fatalf("Set = %v", err)
			}
			time.Sleep(3 * dialTimeout)
			if v, err := c.Get(ctx, "outlive"); err != nil || string(v) != "v" {
				t.Errorf("Get(%q) %v after New = %q, %v; want %q, nil", "outlive", 3*dialTimeout, v, err, "v")
			}
			if s := c.Stats(); s.BrokenConns != 0 {
				t.Errorf("Stats().BrokenConns = %d; want 0", s.BrokenConns)
			}
		})
	}
}
