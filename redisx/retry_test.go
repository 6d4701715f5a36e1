package redisx_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	redigo "github.com/gomodule/redigo/redis"

	"github.com/redisx-go/kit/internal/faultproxy"
	"github.com/redisx-go/kit/internal/launcher"
	"github.com/redisx-go/kit/redisx"
	"github.com/redisx-go/kit/strategy"
)

// flakyBackend fails each call with the next error of its script, then
// with always (nil: succeeds); it counts the calls it saw.
type flakyBackend struct {
	mu     sync.Mutex
	script []error
	always error
	calls  int
	value  []byte
}

func (f *flakyBackend) next(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(f.script) > 0 {
		err := f.script[0]
		f.script = f.script[1:]
		return err
	}
	return f.always
}

func (f *flakyBackend) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

func (f *flakyBackend) Get(ctx context.Context, key string) ([]byte, error) {
	if err := f.next(ctx); err != nil {
		return nil, err
	}
	return f.value, nil
}

func (f *flakyBackend) Set(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	return f.next(ctx)
}

func (f *flakyBackend) Del(ctx context.Context, keys ...string) (int64, error) {
	if err := f.next(ctx); err != nil {
		return 0, err
	}
	return int64(len(keys)), nil
}

func (f *flakyBackend) MGet(ctx context.Context, keys []string) ([][]byte, error) {
	if err := f.next(ctx); err != nil {
		if errors.Is(err, errPartial) {
			return make([][]byte, len(keys)), err
		}
		return nil, err
	}
	return make([][]byte, len(keys)), nil
}

func (f *flakyBackend) MSet(ctx context.Context, kv map[string][]byte, ttl time.Duration) error {
	return f.next(ctx)
}

func (f *flakyBackend) Do(ctx context.Context, args ...any) (any, error) {
	if err := f.next(ctx); err != nil {
		return nil, err
	}
	return "OK", nil
}

func (f *flakyBackend) Close() error { return nil }

// partialDel is a flakyBackend whose failing Del reports one key
// removed: part of the call was applied.
type partialDel struct{ *flakyBackend }

func (p partialDel) Del(ctx context.Context, keys ...string) (int64, error) {
	if err := p.next(ctx); err != nil {
		return 1, err
	}
	return int64(len(keys)), nil
}

// selfRetrying is a flakyBackend that retries by a policy of its own.
type selfRetrying struct{ *flakyBackend }

func (selfRetrying) RetriesCalls() bool { return true }

// errPartial marks an MGet failure that comes with values.
var errPartial = fmt.Errorf("%w: one node failed", strategy.ErrConnection)

// unsentErr returns a real Unsent error: a dial to a closed port.
func unsentErr(t *testing.T) error {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, err = strategy.Dial(context.Background(), strategy.Config{DialTimeout: time.Second}, addr)
	if !strategy.Unsent(err) {
		t.Fatalf("Dial of a closed port = %v; want an Unsent error", err)
	}
	return err
}

// newFlaky opens a Client with policy r over a flakyBackend failing with
// script, then always.
func newFlaky(t *testing.T, r redisx.Retry, always error, script ...error) (*redisx.Client, *flakyBackend) {
	t.Helper()
	f := &flakyBackend{script: script, always: always, value: []byte("v")}
	c, err := redisx.New(context.Background(), redisx.Options{Strategy: fakeStrategy{f}, Retry: r})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, f
}

// fast is a policy with short backoffs, for tests.
var fast = redisx.Retry{MinBackoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond}

// TestRetryWhatIsRetried is the table of Options.Retry's rules: which
// operation is tried again after which error, with the default three
// attempts.
func TestRetryWhatIsRetried(t *testing.T) {
	sent := fmt.Errorf("%w: 127.0.0.1:1: EOF", strategy.ErrConnection)
	notSent := unsentErr(t)
	auth := fmt.Errorf("%w: dial x: %w", strategy.ErrAuth, redigo.Error("WRONGPASS invalid username-password pair"))
	ops := map[string]func(ctx context.Context, c *redisx.Client) error{
		"Get": func(ctx context.Context, c *redisx.Client) error { _, err := c.Get(ctx, "k"); return err },
		"AppendGet": func(ctx context.Context, c *redisx.Client) error {
			dst := []byte("dst")
			got, err := c.AppendGet(ctx, dst, "k")
			if err != nil && string(got) != "dst" {
				return fmt.Errorf("AppendGet returned %q with its error %w; want dst unchanged", got, err)
			}
			return err
		},
		"MGet": func(ctx context.Context, c *redisx.Client) error { _, err := c.MGet(ctx, "a", "b"); return err },
		"GetOrLoad": func(ctx context.Context, c *redisx.Client) error {
			_, err := c.GetOrLoad(ctx, "k", time.Minute, loadV)
			return err
		},
		"Set":  func(ctx context.Context, c *redisx.Client) error { return c.Set(ctx, "k", []byte("v"), 0) },
		"MSet": func(ctx context.Context, c *redisx.Client) error { return c.MSet(ctx, map[string][]byte{"a": nil}, 0) },
		"Del":  func(ctx context.Context, c *redisx.Client) error { _, err := c.Del(ctx, "a"); return err },
		"Do":   func(ctx context.Context, c *redisx.Client) error { _, err := c.Do(ctx, "SET", "k", "v"); return err },
	}
	reads := map[string]bool{"Get": true, "AppendGet": true, "MGet": true, "GetOrLoad": true}
	for _, tc := range []struct {
		name      string
		err       error
		readCalls int // calls the backend sees for a read that keeps failing so
		writeCall int // and for a write
	}{
		{"connection failure after the write", sent, 3, 1},
		{"unsent", notSent, 3, 3},
		{"auth", auth, 1, 1},
		{"invalid argument", fmt.Errorf("%w: x", redisx.ErrInvalidArgument), 1, 1},
		{"closed", redisx.ErrClosed, 1, 1},
		{"unsupported", redisx.ErrUnsupported, 1, 1},
		{"server reply", fmt.Errorf("redisx: get: %w", redigo.Error("WRONGTYPE Operation against a key")), 1, 1},
		{"deadline", context.DeadlineExceeded, 1, 1},
		{"connection failure with a deadline", fmt.Errorf("%w: x: %w", strategy.ErrConnection, context.DeadlineExceeded), 1, 1},
	} {
		for name, op := range ops {
			t.Run(tc.name+"/"+name, func(t *testing.T) {
				c, f := newFlaky(t, fast, tc.err)
				err := op(context.Background(), c)
				if !errors.Is(err, tc.err) {
					t.Errorf("%s failing with %v returned %v; want the backend's error", name, tc.err, err)
				}
				want := tc.writeCall
				if reads[name] {
					want = tc.readCalls
				}
				if got := f.count(); got != want {
					t.Errorf("%s failing with %v: the backend saw %d calls; want %d", name, tc.err, got, want)
				}
				if got := c.Stats().Retries; got != int64(want-1) {
					t.Errorf("Stats().Retries = %d; want %d", got, want-1)
				}
			})
		}
	}
}

func loadV(context.Context) ([]byte, error) { return []byte("loaded"), nil }

// TestRetrySucceedsAfterFailures: a read that fails twice succeeds on the
// third attempt, and a write that never reached the server too.
func TestRetrySucceedsAfterFailures(t *testing.T) {
	sent := fmt.Errorf("%w: 127.0.0.1:1: EOF", strategy.ErrConnection)
	c, f := newFlaky(t, fast, nil, sent, sent)
	if v, err := c.Get(context.Background(), "k"); err != nil || string(v) != "v" {
		t.Errorf("Get failing twice = %q, %v; want %q, nil after retries", v, err, "v")
	}
	if f.count() != 3 || c.Stats().Retries != 2 {
		t.Errorf("Get failing twice: %d calls, Stats().Retries = %d; want 3 and 2", f.count(), c.Stats().Retries)
	}
	notSent := unsentErr(t)
	c, f = newFlaky(t, fast, nil, notSent, notSent)
	if err := c.Set(context.Background(), "k", []byte("v"), 0); err != nil || f.count() != 3 {
		t.Errorf("Set failing twice unsent = %v after %d calls; want nil after 3", err, f.count())
	}
}

// TestRetryPolicy: MaxAttempts is honoured, 1 switches retries off, bad
// policies are refused, an MGet with part of its values is not retried,
// and a backend that retries by itself is left to it.
func TestRetryPolicy(t *testing.T) {
	sent := fmt.Errorf("%w: reset", strategy.ErrConnection)
	for _, n := range []int{1, 2, 5} {
		c, f := newFlaky(t, redisx.Retry{MaxAttempts: n, MinBackoff: time.Millisecond, MaxBackoff: time.Millisecond}, sent)
		if _, err := c.Get(context.Background(), "k"); err == nil || f.count() != n {
			t.Errorf("MaxAttempts %d: Get = %v after %d calls; want an error after %d", n, err, f.count(), n)
		}
	}
	for _, r := range []redisx.Retry{{MaxAttempts: -1}, {MinBackoff: -1}, {MaxBackoff: -1}, {MinBackoff: time.Second, MaxBackoff: time.Millisecond}} {
		if _, err := redisx.New(context.Background(), redisx.Options{Strategy: fakeStrategy{&flakyBackend{}}, Retry: r}); !errors.Is(err, redisx.ErrInvalidArgument) {
			t.Errorf("New with Retry %+v = %v; want ErrInvalidArgument", r, err)
		}
	}

	c, f := newFlaky(t, fast, errPartial)
	vs, err := c.MGet(context.Background(), "a", "b")
	if vs == nil || !errors.Is(err, errPartial) || f.count() != 1 {
		t.Errorf("MGet with part of its values = %v, %v after %d calls; want the values and the error at once", vs, err, f.count())
	}

	pd := partialDel{&flakyBackend{always: unsentErr(t)}}
	c3 := redisx.NewFromBackend(pd)
	defer c3.Close()
	if n, err := c3.Del(context.Background(), "a", "b"); n != 1 || err == nil || pd.count() != 1 {
		t.Errorf("Del removing 1 key then failing unsent = %d, %v after %d calls; want 1 and the error at once", n, err, pd.count())
	}

	self := selfRetrying{&flakyBackend{always: sent}}
	c2 := redisx.NewFromBackend(self)
	defer c2.Close()
	if _, err := c2.Get(context.Background(), "k"); err == nil || self.count() != 1 {
		t.Errorf("Get over a self-retrying backend = %v after %d calls; want its error after 1", err, self.count())
	}
}

// TestRetryWithinTheDeadline: with unlimited attempts, a read that keeps
// failing returns by its deadline — no retry whose backoff would end
// after it is made — and, without a deadline, within about ReadTimeout of
// its first failure.
func TestRetryWithinTheDeadline(t *testing.T) {
	sent := fmt.Errorf("%w: reset", strategy.ErrConnection)
	policy := redisx.Retry{MaxAttempts: 1 << 20, MinBackoff: 20 * time.Millisecond, MaxBackoff: 20 * time.Millisecond}
	c, f := newFlaky(t, policy, sent)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := c.Get(ctx, "k")
	took := time.Since(start)
	if !errors.Is(err, redisx.ErrConnection) || took > 200*time.Millisecond+500*time.Millisecond {
		t.Errorf("Get failing forever with a 200 ms deadline = %v after %v; want the connection error by the deadline", err, took)
	}
	// Backoffs of 10 to 20 ms: at most 20 fit in 200 ms.
	if n := f.count(); n < 2 || n > 21 {
		t.Errorf("Get failing forever with a 200 ms deadline: %d attempts; want 2 to 21", n)
	}

	f2 := &flakyBackend{always: sent}
	c2, err := redisx.New(context.Background(), redisx.Options{Strategy: fakeStrategy{f2}, Retry: policy, ReadTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	start = time.Now()
	_, err = c2.Get(context.Background(), "k")
	took = time.Since(start)
	if !errors.Is(err, redisx.ErrConnection) || took > 200*time.Millisecond+500*time.Millisecond {
		t.Errorf("Get failing forever without a deadline, ReadTimeout 200 ms = %v after %v; want it to give up after about 200 ms", err, took)
	}
	if n := f2.count(); n < 2 || n > 21 {
		t.Errorf("Get failing forever without a deadline: %d attempts; want 2 to 21", n)
	}
}

// TestRetryCancelledDuringBackoffSaysWhy: a call whose context ends while
// it waits to retry returns the failure it was retrying with the
// context's error, not the context's error alone.
func TestRetryCancelledDuringBackoffSaysWhy(t *testing.T) {
	sent := fmt.Errorf("%w: reset", strategy.ErrConnection)
	policy := redisx.Retry{MaxAttempts: 5, MinBackoff: time.Second, MaxBackoff: time.Second}
	c, _ := newFlaky(t, policy, sent)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	_, err := c.Get(ctx, "k")
	if !errors.Is(err, redisx.ErrConnection) || !errors.Is(err, context.Canceled) {
		t.Errorf("Get cancelled during its backoff = %v; want the connection error and context.Canceled", err)
	}
}

// patient retries for as long as a deadline allows.
var patient = redisx.Retry{MaxAttempts: 1 << 20, MinBackoff: 5 * time.Millisecond, MaxBackoff: 50 * time.Millisecond}

func retryStrategies() []struct {
	name string
	s    strategy.Strategy
} {
	return []struct {
		name string
		s    strategy.Strategy
	}{
		{"multiplexed", strategy.Multiplexed{}},
		{"pool", strategy.Pool{Size: 1}},
	}
}

// TestRetryAcrossServerRestart: with the server killed, a Get and then a
// Set (each with a 3 s deadline, the Set's connection already known
// broken) are retried until the server is back, and succeed; the Set is
// stored.
func TestRetryAcrossServerRestart(t *testing.T) {
	for _, tc := range retryStrategies() {
		t.Run(tc.name, func(t *testing.T) {
			srv := launcher.Private(t, launcher.Options{})
			c, err := redisx.New(t.Context(), redisx.Options{Addrs: []string{srv.Addr()}, Strategy: tc.s, Retry: patient, DialTimeout: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if err := c.Set(t.Context(), "restart:warm", []byte("v"), time.Minute); err != nil {
				t.Fatal(err)
			}

			for _, op := range []string{"Get", "Set"} {
				if err := srv.Kill(); err != nil {
					t.Fatal(err)
				}
				if op == "Set" {
					// Make the client know its connection is broken: the
					// shared connection's reader sees the close; the pool
					// learns it from a call.
					ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
					c.Get(ctx, "restart:learn")
					cancel()
				}
				retries := c.Stats().Retries
				done := make(chan error, 1)
				go func() {
					ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
					defer cancel()
					if op == "Get" {
						_, err := c.Get(ctx, "restart:k")
						if errors.Is(err, redisx.ErrNotFound) {
							err = nil // the server answered: a killed server forgets
						}
						done <- err
						return
					}
					done <- c.Set(ctx, "restart:set", []byte("after"), time.Minute)
				}()
				for deadline := time.Now().Add(3 * time.Second); c.Stats().Retries <= retries; time.Sleep(5 * time.Millisecond) {
					if time.Now().After(deadline) {
						t.Fatalf("%s with the server down: no retry after 3 s", op)
					}
				}
				if err := srv.Restart(t.Context()); err != nil {
					t.Fatal(err)
				}
				if err := <-done; err != nil {
					t.Errorf("%s across a server restart, with a 3 s deadline = %v; want success once the server is back", op, err)
				}
				t.Logf("%s: %d retries", op, c.Stats().Retries-retries)
			}
			if v, err := srv.CLI(t.Context(), "GET", "restart:set"); err != nil || v != "after" {
				t.Errorf("GET restart:set on the server = %q, %v; want the retried Set's value", v, err)
			}
		})
	}
}

// TestRetryNeverResendsAWrite: a Set whose connection is cut after the
// request went out — when the first byte of its reply arrives — fails
// with ErrConnection and is not retried, although the server applied it;
// a Get cut so is retried and succeeds.
func TestRetryNeverResendsAWrite(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	for _, tc := range retryStrategies() {
		t.Run(tc.name, func(t *testing.T) {
			p, err := faultproxy.Start(context.Background(), srv.Addr())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { p.Close() })
			c, err := redisx.New(t.Context(), redisx.Options{Addrs: []string{p.Addr()}, Strategy: tc.s, Retry: patient})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			key := fmt.Sprintf("cut:%s:%d", tc.name, time.Now().UnixNano())
			if err := c.Set(t.Context(), key, []byte("before"), time.Minute); err != nil {
				t.Fatal(err)
			}

			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			p.CutAfter(faultproxy.Downstream, 0) // the connection open now, at its next reply byte
			retries := c.Stats().Retries
			err = c.Set(ctx, key, []byte("after"), time.Minute)
			p.Heal()
			if !errors.Is(err, redisx.ErrConnection) || strategy.Unsent(err) {
				t.Errorf("Set cut after its write = %v; want a connection error, not Unsent", err)
			}
			if n := c.Stats().Retries - retries; n != 0 {
				t.Errorf("Set cut after its write was retried %d times; want 0", n)
			}
			if v, err := srv.CLI(ctx, "GET", key); err != nil || v != "after" {
				t.Errorf("GET %s on the server = %q, %v; want %q: the cut Set was applied", key, v, err, "after")
			}

			// A Get cut so is retried: while the cut lasts, every new
			// connection is cut at its handshake's reply, so its retries
			// fail until Heal, and then one succeeds.
			if _, err := c.Get(ctx, key); err != nil {
				t.Fatalf("Get after the cut: %v", err) // on a fresh connection
			}
			retries = c.Stats().Retries
			p.CutAfter(faultproxy.Downstream, 0)
			type result struct {
				v   []byte
				err error
			}
			done := make(chan result, 1)
			go func() {
				v, err := c.Get(ctx, key)
				done <- result{v, err}
			}()
			for deadline := time.Now().Add(2 * time.Second); c.Stats().Retries == retries; time.Sleep(time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("a Get cut after its write was not retried within 2 s")
				}
			}
			p.Heal()
			if r := <-done; r.err != nil || string(r.v) != "after" {
				t.Errorf("Get cut after its write = %q, %v; want %q after retries", r.v, r.err, "after")
			}
		})
	}
}

// TestRetryServerGone: with the server killed and not restarted, a Get
// with a 300 ms deadline and unlimited attempts returns by its deadline.
func TestRetryServerGone(t *testing.T) {
	for _, tc := range retryStrategies() {
		t.Run(tc.name, func(t *testing.T) {
			srv := launcher.Private(t, launcher.Options{})
			c, err := redisx.New(t.Context(), redisx.Options{Addrs: []string{srv.Addr()}, Strategy: tc.s, Retry: patient})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if err := srv.Kill(); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			start := time.Now()
			_, err = c.Get(ctx, "gone:k")
			took := time.Since(start)
			if err == nil || took > 300*time.Millisecond+500*time.Millisecond {
				t.Errorf("Get with the server gone, 300 ms deadline = %v after %v; want an error by the deadline", err, took)
			}
			if !errors.Is(err, redisx.ErrConnection) && !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("Get with the server gone = %v; want ErrConnection or the deadline", err)
			}
			if c.Stats().Retries == 0 {
				t.Errorf("Get with the server gone was not retried")
			}
			t.Logf("%v after %v and %d retries", err, took.Round(time.Millisecond), c.Stats().Retries)
		})
	}
}
