package strategytest

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"go.uber.org/goleak"

	"github.com/redisx-go/kit/internal/faultproxy"
	"github.com/redisx-go/kit/internal/launcher"
	"github.com/redisx-go/kit/strategy"
)

// slack is what a call may take beyond its deadline before it counts as
// not honouring it: generous, for a shared 2-core machine under -race
// (a load average of 11 was seen to stall a whole test process for
// 300 ms).
const slack = 500 * time.Millisecond

// env is one scenario's server, proxy and backend.
type env struct {
	t      *testing.T
	srv    *launcher.Server
	p      *faultproxy.Proxy
	c      strategy.Backend
	do     strategy.Capabilities
	before goleak.Option
	closed atomic.Bool // close was called
}

// setup starts a server and a proxy in front of it, and opens a backend
// with open on the proxy, with the timeouts of cfg (its Addrs are set
// here; a zero DialTimeout or WriteTimeout is redisx's default, 5 s and
// 3 s). The cleanup closes the backend if the scenario did not, then the
// proxy.
func setup(t *testing.T, open Opener, cfg strategy.Config) *env {
	t.Helper()
	srv := launcher.Standalone(t, launcher.Options{})
	p, err := faultproxy.Start(context.Background(), srv.Addr())
	if err != nil {
		t.Fatalf("faultproxy.Start: %v", err)
	}
	t.Cleanup(func() { p.Close() })
	e := &env{t: t, srv: srv, p: p, before: goleak.IgnoreCurrent()}
	cfg.Addrs = []string{p.Addr()}
	if cfg.DialTimeout == 0 {
		cfg.DialTimeout = 5 * time.Second
	}
	if cfg.WriteTimeout == 0 {
		cfg.WriteTimeout = 3 * time.Second
	}
	ctx, cancel := bounded(5 * time.Second)
	defer cancel()
	e.c, err = open(ctx, cfg)
	if err != nil {
		t.Fatalf("open through the proxy: %v", err)
	}
	e.do = strategy.CapabilitiesOf(e.c)
	t.Cleanup(func() {
		if !e.closed.Load() {
			e.p.Heal()
			e.c.Close()
		}
	})
	return e
}

// close closes the backend, which must return within 3 s, and checks that
// none of its goroutines is left.
func (e *env) close() {
	e.t.Helper()
	e.closed.Store(true)
	start := time.Now()
	err := e.c.Close()
	if took := time.Since(start); took > 3*time.Second {
		e.t.Errorf("Close took %v; want < 3 s", took)
	}
	if err != nil {
		e.t.Errorf("Close: %v", err)
	}
	// The proxy's goroutines are still running: it stays up until the
	// test ends, since a proxy that closed its sockets would unblock, and
	// so hide, a client goroutine that would otherwise hang on one.
	const fp = "github.com/redisx-go/kit/internal/faultproxy."
	if err := findLeaks(e.before,
		goleak.IgnoreAnyFunction(fp+"(*Proxy).acceptLoop"),
		goleak.IgnoreAnyFunction(fp+"(*conn).run"),
		goleak.IgnoreAnyFunction(fp+"(*conn).pipe"),
	); err != nil {
		e.t.Errorf("goroutines left after Close: %v", err)
	}
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

// bounded returns a context cancelled after d that has no deadline. The
// setup calls use it: a Pool connection keeps the socket deadline of a
// call with a long context deadline for later calls without one (see
// HalfOpenAfterLongDeadline), which would blur what the scenarios measure.
func bounded(d time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	t := time.AfterFunc(d, cancel)
	return ctx, func() {
		t.Stop()
		cancel()
	}
}

// mustSet stores value under key through the client, within 5 s.
func (e *env) mustSet(key, value string) {
	e.t.Helper()
	mustSet(e.t, e.c, key, value)
}

// waitBlocked waits up to 3 s until n clients of the server are blocked
// (BLPOP), asking the server directly, not through the proxy.
func (e *env) waitBlocked(n int) {
	e.t.Helper()
	rc, err := redis.Dial("tcp", e.srv.Addr(), redis.DialReadTimeout(2*time.Second))
	if err != nil {
		e.t.Fatalf("dial the server: %v", err)
	}
	defer rc.Close()
	deadline := time.Now().Add(3 * time.Second)
	for {
		info, err := redis.String(rc.Do("INFO", "clients"))
		if err != nil {
			e.t.Fatalf("INFO clients: %v", err)
		}
		if blockedClients(info) >= n {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("%d blocked clients after 3 s; want %d", blockedClients(info), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func blockedClients(info string) int {
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "blocked_clients:"); ok {
			var n int
			fmt.Sscan(v, &n)
			return n
		}
	}
	return 0
}

// outcome is how one call ended.
type outcome struct {
	op   string
	key  string
	err  error
	took time.Duration
}

func (o outcome) String() string {
	return fmt.Sprintf("%s(%q) = %v after %v", o.op, o.key, o.err, o.took.Round(time.Millisecond))
}

// call runs a Set (even i) or a Get of a key never set (odd i) under ctx
// and reports how it ended. The Get's key is fresh so that a near-cache
// cannot answer it locally.
func (e *env) call(ctx context.Context, prefix string, i int) outcome {
	o := outcome{op: "Set", key: fmt.Sprintf("%s:set:%d", prefix, i)}
	start := time.Now()
	if i%2 == 0 {
		o.err = e.c.Set(ctx, o.key, []byte("v"), time.Minute)
	} else {
		o.op, o.key = "Get", fmt.Sprintf("%s:missing:%d:%d", prefix, i, start.UnixNano())
		_, o.err = e.c.Get(ctx, o.key)
		if o.err == strategy.ErrNotFound {
			o.err = nil // the server answered: the call succeeded
		}
	}
	o.took = time.Since(start)
	return o
}

// callAll runs n calls at once, the i-th under the context ctx(i) returns,
// and returns how each ended.
func (e *env) callAll(n int, prefix string, ctx func(i int) (context.Context, context.CancelFunc)) []outcome {
	out := make([]outcome, n)
	done := make(chan struct{})
	for i := range n {
		go func() {
			defer func() { done <- struct{}{} }()
			c, cancel := ctx(i)
			defer cancel()
			out[i] = e.call(c, prefix, i)
		}()
	}
	for range n {
		<-done
	}
	return out
}

func within(d time.Duration) func(int) (context.Context, context.CancelFunc) {
	return func(int) (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.Background(), d)
	}
}

func noDeadline(int) (context.Context, context.CancelFunc) {
	return context.WithCancel(context.Background())
}

// recovered waits up to 2 s for a first successful call after a fault was
// healed — a dial that was already failing may still report its error —
// and then requires rounds of n concurrent calls, each with a 2 s deadline,
// to succeed every one: a connection broken by the fault and kept would
// fail some.
func (e *env) recovered(prefix string, n int) {
	e.t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		o := e.call(ctx, prefix+":first", 0)
		cancel()
		if o.err == nil {
			break
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("no call succeeded within 2 s of Heal; last: %v", o)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for round := range 3 {
		for _, o := range e.callAll(n, fmt.Sprintf("%s:round%d", prefix, round), within(2*time.Second)) {
			if o.err != nil {
				e.t.Errorf("after Heal (round %d of %d calls): %v; want every call to succeed", round, n, o)
			}
		}
	}
}
