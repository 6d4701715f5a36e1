package strategy_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	redigo "github.com/gomodule/redigo/redis"
	goredis "github.com/redis/go-redis/v9"

	"github.com/redisx-go/kit/internal/launcher"
	"github.com/redisx-go/kit/redisx"
	"github.com/redisx-go/kit/strategy"
)

// The edges of issue #7 on the two transports: dials shared by callers
// with different contexts, blocking commands, the ReadTimeout rule, the
// MaxPending wait, error texts and Stats.

// edgeTransports are the transports under test, built fresh for each use.
func edgeTransports() []struct {
	name string
	s    strategy.Strategy
} {
	return []struct {
		name string
		s    strategy.Strategy
	}{
		{"multiplexed", strategy.Multiplexed{Blocking: 1}},
		{"pool", strategy.Pool{Size: 1}},
	}
}

func edgeCtx(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// edgeNew opens a client without retries (unless o asks for them): the
// edges are those of one attempt on the transport; redisx's tests cover
// the facade's retries.
func edgeNew(t *testing.T, o redisx.Options) *redisx.Client {
	t.Helper()
	if o.Retry == (redisx.Retry{}) {
		o.Retry.MaxAttempts = 1
	}
	c, err := redisx.New(edgeCtx(t, 10*time.Second), o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// debugServer starts a server of the test's own that accepts DEBUG SLEEP,
// which stalls every reply for as long as asked.
func debugServer(t *testing.T) *launcher.Server {
	return startPrivateServer(t, launcher.Options{Args: []string{"--enable-debug-command", "yes"}})
}

// edgeProxy is a TCP proxy on loopback in front of a real server, which
// can delay new connections (a server slow to accept), hold back replies,
// and cut every connection.
type edgeProxy struct {
	ln       net.Listener
	upstream string
	delay    atomic.Int64  // before a new connection is forwarded, in ns
	accepted chan struct{} // one token per accepted connection (dropped when full)
	hold     sync.RWMutex  // held for writing: replies are held back
	done     chan struct{} // closed when the test ends

	mu    sync.Mutex
	conns []net.Conn
	wg    sync.WaitGroup
}

func startProxy(t *testing.T, upstream string) *edgeProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &edgeProxy{ln: ln, upstream: upstream, accepted: make(chan struct{}, 64), done: make(chan struct{})}
	p.wg.Add(1)
	go p.serve()
	t.Cleanup(func() {
		close(p.done)
		ln.Close()
		p.drop()
		p.wg.Wait()
	})
	return p
}

func (p *edgeProxy) addr() string { return p.ln.Addr().String() }

func (p *edgeProxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.track(c)
		select {
		case p.accepted <- struct{}{}:
		default:
		}
		p.wg.Add(1)
		go p.forward(c)
	}
}

func (p *edgeProxy) track(c net.Conn) {
	p.mu.Lock()
	p.conns = append(p.conns, c)
	p.mu.Unlock()
}

func (p *edgeProxy) forward(c net.Conn) {
	defer p.wg.Done()
	select {
	case <-time.After(time.Duration(p.delay.Load())):
	case <-p.done:
		c.Close()
		return
	}
	up, err := net.Dial("tcp", p.upstream)
	if err != nil {
		c.Close()
		return
	}
	p.track(up)
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		io.Copy(up, c)
		up.Close()
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := up.Read(buf)
		if n > 0 {
			p.hold.RLock()
			_, werr := c.Write(buf[:n])
			p.hold.RUnlock()
			if werr != nil {
				break
			}
		}
		if err != nil {
			break
		}
	}
	c.Close()
}

// drop cuts every connection through the proxy.
func (p *edgeProxy) drop() {
	p.mu.Lock()
	conns := p.conns
	p.conns = nil
	p.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
}

// holdReplies stops forwarding replies until the returned function is
// called.
func (p *edgeProxy) holdReplies() (release func()) {
	p.hold.Lock()
	var once sync.Once
	return func() { once.Do(p.hold.Unlock) }
}

// breakConn makes c's connection through p fail and waits until the next
// call will have to dial.
func breakConn(t *testing.T, c *redisx.Client, p *edgeProxy, name string) {
	t.Helper()
	before := c.Stats().BrokenConns
	p.drop()
	if name == "pool" {
		// The pool learns of it from the next call on the idle connection.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := c.Get(ctx, "edge:break"); !errors.Is(err, redisx.ErrConnection) {
			t.Fatalf("Get on a cut connection = %v; want ErrConnection", err)
		}
		return
	}
	for deadline := time.Now().Add(5 * time.Second); c.Stats().BrokenConns == before; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the cut connection is not noticed after 5s")
		}
	}
}

// TestDialIsSharedNotBoundToOneCaller is item 1: caller A, with a short
// deadline, starts the dial of a server slow to accept; caller B, without
// a deadline, waits for the same dial. A gets its own context's error, B
// its value: A's deadline does not end the dial B waits for.
func TestDialIsSharedNotBoundToOneCaller(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	for _, tc := range edgeTransports() {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := startProxy(t, srv.Addr())
			c := edgeNew(t, redisx.Options{Addrs: []string{p.addr()}, Strategy: tc.s})
			key := "edge:dial:" + tc.name
			if err := c.Set(edgeCtx(t, 5*time.Second), key, []byte("v"), time.Minute); err != nil {
				t.Fatalf("Set: %v", err)
			}
			breakConn(t, c, p, tc.name)
			for len(p.accepted) > 0 {
				<-p.accepted
			}
			const slow = time.Second
			p.delay.Store(int64(slow))

			errA := make(chan error, 1)
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
				defer cancel()
				_, err := c.Get(ctx, key)
				errA <- err
			}()
			select {
			case <-p.accepted: // A's dial is under way
			case <-time.After(5 * time.Second):
				t.Fatal("no dial 5s after A's call")
			}
			start := time.Now()
			v, err := c.Get(context.Background(), key)
			if err != nil || string(v) != "v" {
				t.Fatalf("B (no deadline) during A's dial: Get = %q, %v; want %q, nil", v, err, "v")
			}
			t.Logf("B got its value after %v", time.Since(start).Round(time.Millisecond))
			if err := <-errA; !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, redisx.ErrConnection) {
				t.Fatalf("A (200ms deadline, dial of %v): error = %v; want context.DeadlineExceeded alone", slow, err)
			}
		})
	}
}

// TestDialOutlivesItsFirstCaller is item 1 for the caller that starts the
// dial: it leaves at its deadline, and the dial still completes for the
// next caller, which finds the connection without dialling again.
func TestDialOutlivesItsFirstCaller(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	p := startProxy(t, srv.Addr())
	c := edgeNew(t, redisx.Options{Addrs: []string{p.addr()}, Strategy: strategy.Multiplexed{}})
	breakConn(t, c, p, "multiplexed")
	p.delay.Store(int64(300 * time.Millisecond))
	dials := c.Stats().Dials
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	_, err := c.Get(ctx, "edge:first")
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Get with 50ms deadline during a 300ms dial = %v; want context.DeadlineExceeded", err)
	}
	for deadline := time.Now().Add(5 * time.Second); c.Stats().Conns == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the dial abandoned by its caller did not complete: %+v", c.Stats().Stats)
		}
	}
	if _, err := c.Get(edgeCtx(t, 5*time.Second), "edge:first"); !errors.Is(err, redisx.ErrNotFound) {
		t.Fatalf("Get after the dial = %v; want ErrNotFound", err)
	}
	if got := c.Stats().Dials - dials; got != 1 {
		t.Fatalf("%d dials; want 1, shared by both calls", got)
	}
}

// TestSidePoolDialIsShared is item 1 for the dedicated connections of
// Multiplexed's blocking commands, dialled on first use: a BLPOP whose
// short deadline ends during that dial leaves alone; another BLPOP
// without deadline, waiting for the same dial, runs.
func TestSidePoolDialIsShared(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	p := startProxy(t, srv.Addr())
	c := edgeNew(t, redisx.Options{Addrs: []string{p.addr()}, Strategy: strategy.Multiplexed{Blocking: 1}})
	for len(p.accepted) > 0 {
		<-p.accepted
	}
	p.delay.Store(int64(time.Second))
	errA := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		_, err := c.Do(ctx, "BLPOP", "edge:side", 5)
		errA <- err
	}()
	select {
	case <-p.accepted:
	case <-time.After(5 * time.Second):
		t.Fatal("no dial 5s after the first BLPOP")
	}
	if v, err := c.Do(context.Background(), "BLPOP", "edge:side", "0.01"); err != nil || v != nil {
		t.Fatalf("BLPOP without deadline during the first one's dial = %v, %v; want nil, nil", v, err)
	}
	if err := <-errA; !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, redisx.ErrConnection) {
		t.Fatalf("BLPOP with a 200ms deadline during a 1s dial: error = %v; want context.DeadlineExceeded alone", err)
	}
}

// TestCloseAbortsDial checks that Close does not wait for a dial in
// progress — it is the node's, not a caller's — and that the caller
// waiting for it gets ErrClosed.
func TestCloseAbortsDial(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	for _, tc := range edgeTransports() {
		t.Run(tc.name, func(t *testing.T) {
			p := startProxy(t, srv.Addr())
			c := edgeNew(t, redisx.Options{Addrs: []string{p.addr()}, Strategy: tc.s})
			breakConn(t, c, p, tc.name)
			for len(p.accepted) > 0 {
				<-p.accepted
			}
			p.delay.Store(int64(time.Minute)) // far beyond DialTimeout (5 s)
			errs := make(chan error, 1)
			go func() {
				_, err := c.Get(context.Background(), "edge:close")
				errs <- err
			}()
			select {
			case <-p.accepted:
			case <-time.After(5 * time.Second):
				t.Fatal("no dial 5s after the call")
			}
			start := time.Now()
			if err := c.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			if took := time.Since(start); took > 2*time.Second {
				t.Errorf("Close during a dial took %v; want it to abort the dial (< 2s)", took)
			}
			select {
			case err := <-errs:
				if !errors.Is(err, redisx.ErrClosed) {
					t.Errorf("call waiting for a dial during Close: error = %v; want ErrClosed", err)
				}
			case <-time.After(2 * time.Second):
				t.Fatal("call waiting for a dial still waits 2s after Close")
			}
		})
	}
}

// pushLater pushes v onto list after d (measured from now), from a client
// of its own.
func pushLater(t *testing.T, addr, list, v string, d time.Duration) {
	rdb := goredis.NewClient(&goredis.Options{Addr: addr, Protocol: 2, DisableIdentity: true})
	t.Cleanup(func() { rdb.Close() })
	time.AfterFunc(d, func() { rdb.RPush(context.Background(), list, v) })
}

// TestBlockingCommandExtendsReadTimeout is item 2: a blocking command's
// own block time extends ReadTimeout, block 0 lifts it, and the
// connection survives for the next call.
func TestBlockingCommandExtendsReadTimeout(t *testing.T) {
	const rt = 300 * time.Millisecond
	for _, tc := range edgeTransports() {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := startPrivateServer(t, launcher.Options{})
			c := edgeNew(t, redisx.Options{Addrs: []string{srv.Addr()}, Strategy: tc.s, ReadTimeout: rt})
			bg := context.Background()
			// Open the blocking connection before counting.
			if _, err := c.Do(bg, "BLPOP", "edge:warm", "0.01"); err != nil {
				t.Fatalf("BLPOP warm-up: %v", err)
			}
			before := c.Stats()

			pushLater(t, srv.Addr(), "edge:q4", "late", 2*rt)
			start := time.Now()
			v, err := redigo.Strings(c.Do(bg, "BLPOP", "edge:q4", 4*rt.Seconds()))
			if err != nil || len(v) != 2 || v[1] != "late" {
				t.Fatalf("BLPOP q %v with ReadTimeout %v, pushed after %v = %q, %v (after %v); want [q late]", 4*rt.Seconds(), rt, 2*rt, v, err, time.Since(start))
			}

			start = time.Now()
			got, err := c.Do(bg, "BLPOP", "edge:empty", fmt.Sprint(3*rt.Seconds()))
			if took := time.Since(start); err != nil || got != nil || took < 3*rt-50*time.Millisecond {
				t.Fatalf("BLPOP empty %v with ReadTimeout %v = %v, %v after %v; want nil, nil after the block time", 3*rt.Seconds(), rt, got, err, took)
			}

			pushLater(t, srv.Addr(), "edge:q0", "forever", 3*rt)
			v, err = redigo.Strings(c.Do(bg, "BLPOP", "edge:q0", 0))
			if err != nil || len(v) != 2 || v[1] != "forever" {
				t.Fatalf("BLPOP q 0 with ReadTimeout %v, pushed after %v = %q, %v; want [q forever]", rt, 3*rt, v, err)
			}

			// The millisecond block times: XREAD BLOCK and WAIT (no
			// replica acknowledges, so WAIT 1 waits its full timeout).
			start = time.Now()
			got, err = c.Do(bg, "XREAD", "COUNT", 1, "BLOCK", (3 * rt).Milliseconds(), "STREAMS", "edge:stream", "$")
			if took := time.Since(start); err != nil || got != nil || took < 3*rt-50*time.Millisecond {
				t.Fatalf("XREAD BLOCK %d with ReadTimeout %v = %v, %v after %v; want nil, nil after the block time", (3 * rt).Milliseconds(), rt, got, err, took)
			}
			n, err := redigo.Int64(c.Do(bg, "WAIT", 1, (3 * rt).Milliseconds()))
			if err != nil || n != 0 {
				t.Fatalf("WAIT 1 %d with ReadTimeout %v = %d, %v; want 0, nil", (3 * rt).Milliseconds(), rt, n, err)
			}

			after := c.Stats()
			if after.BrokenConns != before.BrokenConns || after.Dials != before.Dials {
				t.Fatalf("blocking commands within their block time broke or replaced connections: BrokenConns %d → %d, Dials %d → %d",
					before.BrokenConns, after.BrokenConns, before.Dials, after.Dials)
			}
		})
	}
}

// TestReadTimeoutRule is item 3 on both transports, both ways: a call with
// a context deadline waits until that deadline even past ReadTimeout; a
// call without one fails with ErrConnection once ReadTimeout has passed
// with no reply — not sooner, and not later because an earlier caller's
// deadline was longer — and the next call works.
func TestReadTimeoutRule(t *testing.T) {
	if launcher.External() {
		t.Skip("needs DEBUG SLEEP, which an external server may refuse")
	}
	const rt = 500 * time.Millisecond
	for _, tc := range edgeTransports() {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := debugServer(t)
			c := edgeNew(t, redisx.Options{Addrs: []string{srv.Addr()}, Strategy: tc.s, ReadTimeout: rt})

			// A deadline longer than ReadTimeout is honoured.
			ctx := edgeCtx(t, 10*time.Second)
			start := time.Now()
			if v, err := c.Do(ctx, "DEBUG", "SLEEP", 3*rt.Seconds()); err != nil || v != "OK" {
				t.Fatalf("DEBUG SLEEP %v with a 10s context and ReadTimeout %v = %v, %v (after %v); want OK", 3*rt.Seconds(), rt, v, err, time.Since(start))
			}
			broken := c.Stats().BrokenConns

			// An earlier call's long deadline must not carry over: first a
			// call with a 1h deadline, then one without.
			long, cancel := context.WithTimeout(context.Background(), time.Hour)
			defer cancel()
			if _, err := c.Get(long, "edge:rule"); !errors.Is(err, redisx.ErrNotFound) {
				t.Fatalf("Get with a 1h deadline = %v; want ErrNotFound", err)
			}
			start = time.Now()
			_, err := c.Do(context.Background(), "DEBUG", "SLEEP", 5*rt.Seconds())
			took := time.Since(start)
			if !errors.Is(err, redisx.ErrConnection) {
				t.Fatalf("DEBUG SLEEP %v without deadline, ReadTimeout %v = %v after %v; want ErrConnection", 5*rt.Seconds(), rt, err, took)
			}
			if n := strings.Count(err.Error(), "redisx:"); n != 1 {
				t.Errorf("error %q has %d \"redisx:\" prefixes, want 1", err, n)
			}
			if took < rt || took > 4*rt {
				t.Errorf("DEBUG SLEEP without deadline failed after %v; want between ReadTimeout %v and %v", took, rt, 4*rt)
			}
			t.Logf("no deadline: failed after %v: %v", took.Round(time.Millisecond), err)

			// The next call works (once the server wakes up).
			if err := c.Set(edgeCtx(t, 10*time.Second), "edge:rule", []byte("after"), time.Minute); err != nil {
				t.Fatalf("Set after the timed-out call: %v", err)
			}
			if v, err := c.Get(edgeCtx(t, 5*time.Second), "edge:rule"); err != nil || string(v) != "after" {
				t.Fatalf("Get after the timed-out call = %q, %v; want %q", v, err, "after")
			}
			if c.Stats().BrokenConns == broken {
				t.Errorf("BrokenConns did not count the connection discarded for its overdue reply")
			}
		})
	}
}

// inWaitRoom counts the goroutines waiting for room on a full
// multiplexed connection.
func inWaitRoom() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return bytes.Count(buf[:n], []byte("(*muxConn).waitRoom("))
		}
		buf = make([]byte, 2*len(buf))
	}
}

// TestMaxPendingWaitsForRoom is item 5: with MaxPending 4, 200 goroutines
// all get through; a waiter whose context ends leaves at once with the
// context's error; waiters are woken with ErrConnection when the
// connection fails.
func TestMaxPendingWaitsForRoom(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	t.Run("all-succeed", func(t *testing.T) {
		c := edgeNew(t, redisx.Options{Addrs: []string{srv.Addr()}, Strategy: strategy.Multiplexed{MaxPending: 4}})
		ctx := edgeCtx(t, 30*time.Second)
		var wg sync.WaitGroup
		errs := make(chan error, 200)
		for g := 0; g < 200; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				key := fmt.Sprintf("edge:room:%d", g)
				for i := 0; i < 20; i++ {
					want := relValue(key, i)
					if err := c.Set(ctx, key, []byte(want), time.Minute); err != nil {
						errs <- fmt.Errorf("Set(%q): %w", key, err)
						return
					}
					if v, err := c.Get(ctx, key); err != nil || string(v) != want {
						errs <- fmt.Errorf("Get(%q) = %q, %v; want %q", key, v, err, want)
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	})
	t.Run("waiters-leave-and-wake", func(t *testing.T) {
		p := startProxy(t, srv.Addr())
		c := edgeNew(t, redisx.Options{Addrs: []string{p.addr()}, Strategy: strategy.Multiplexed{MaxPending: 4}, ReadTimeout: -1})
		release := p.holdReplies()
		defer release()
		bg := context.Background()
		results := make(chan error, 20)
		for i := 0; i < 4; i++ {
			go func() { _, err := c.Get(bg, "edge:held"); results <- err }()
		}
		for deadline := time.Now().Add(5 * time.Second); c.Stats().Pending < 4; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("4 calls not pending after 5s: %+v", c.Stats().Stats)
			}
		}

		ctx, cancel := context.WithTimeout(bg, 100*time.Millisecond)
		start := time.Now()
		_, err := c.Get(ctx, "edge:held")
		cancel()
		if took := time.Since(start); !errors.Is(err, context.DeadlineExceeded) || took > 2*time.Second {
			t.Fatalf("Get with 100ms deadline on a full connection = %v after %v; want DeadlineExceeded promptly", err, took)
		}

		const waiters = 10
		for i := 0; i < waiters; i++ {
			go func() { _, err := c.Get(bg, "edge:held"); results <- err }()
		}
		for deadline := time.Now().Add(5 * time.Second); inWaitRoom() < waiters; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%d of %d callers waiting for room after 5s", inWaitRoom(), waiters)
			}
		}
		p.drop()
		timeout := time.After(3 * time.Second)
		for i := 0; i < 4+waiters; i++ {
			select {
			case err := <-results:
				if !errors.Is(err, redisx.ErrConnection) {
					t.Errorf("call on a full connection that failed: error = %v; want ErrConnection", err)
				}
			case <-timeout:
				t.Fatalf("%d of %d calls still waiting 3s after their connection failed", 4+waiters-i, 4+waiters)
			}
		}
	})
}

// TestConnectionErrorHasOnePrefix is item 6 for the failure of a call in
// flight: ErrConnection, one "redisx:" — on the shared connection (Do and
// Get) and on the pool.
func TestConnectionErrorHasOnePrefix(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	for _, tc := range edgeTransports() {
		t.Run(tc.name, func(t *testing.T) {
			p := startProxy(t, srv.Addr())
			c := edgeNew(t, redisx.Options{Addrs: []string{p.addr()}, Strategy: tc.s, ReadTimeout: -1})
			release := p.holdReplies()
			defer release()
			bg := context.Background()
			calls := []func() error{func() error { _, err := c.Do(bg, "ECHO", "x"); return err }}
			if tc.name == "multiplexed" {
				calls = append(calls, func() error { _, err := c.Get(bg, "edge:k"); return err })
			} // a pool of one connection serves one call at a time
			results := make(chan error, len(calls))
			for _, call := range calls {
				go func() { results <- call() }()
			}
			inFlight := func() int { st := c.Stats(); return int(st.Pending) + st.InUse }
			for deadline := time.Now().Add(5 * time.Second); inFlight() < len(calls); time.Sleep(time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("%d of %d calls in flight after 5s", inFlight(), len(calls))
				}
			}
			p.drop()
			for range calls {
				err := <-results
				if !errors.Is(err, redisx.ErrConnection) {
					t.Fatalf("call on a cut connection: error = %v; want ErrConnection", err)
				}
				if n := strings.Count(err.Error(), "redisx:"); n != 1 {
					t.Errorf("error %q has %d \"redisx:\" prefixes, want 1", err, n)
				}
			}
		})
	}
}

// TestStatsFreshAndClosed checks Stats on a new client and after Close.
func TestStatsFreshAndClosed(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	for _, tc := range []struct {
		name, want string
		s          strategy.Strategy
	}{
		{"multiplexed", "multiplexed", strategy.Multiplexed{Conns: 2}},
		{"pool", "pool", strategy.Pool{Size: 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := redisx.New(edgeCtx(t, 10*time.Second), redisx.Options{Addrs: []string{srv.Addr()}, Strategy: tc.s})
			if err != nil {
				t.Fatal(err)
			}
			st := c.Stats()
			if st.Strategy != tc.want || st.Conns < 1 || st.Pending != 0 || st.InUse != 0 || st.BrokenConns != 0 || st.Dials < 1 || st.DialErrors != 0 {
				t.Errorf("Stats of a new client = %+v; want Strategy %q, Conns ≥ 1, Dials ≥ 1, nothing pending, in use or broken", st.Stats, tc.want)
			}
			if tc.name == "pool" && (st.MaxConns != 4 || st.Idle+st.InUse != st.Conns) {
				t.Errorf("Stats of a new pool = %+v; want MaxConns 4, Idle+InUse = Conns", st.Stats)
			}
			if _, err := c.Do(edgeCtx(t, 5*time.Second), "BLPOP", "edge:stats", "0.01"); err != nil {
				t.Fatal(err)
			}
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			st = c.Stats()
			if st.Strategy != tc.want || st.Conns != 0 || st.Pending != 0 || st.InUse != 0 || st.Idle != 0 {
				t.Errorf("Stats after Close = %+v; want Strategy %q and no connection", st.Stats, tc.want)
			}
		})
	}
}

// TestAllocationsPerCallOnTheTransports holds the transports to their
// measured allocation counts below the facade's bar (P7): a GET
// allocates its value only, a SET nothing.
func TestAllocationsPerCallOnTheTransports(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are distorted by the race detector; run without -race (make allocs)")
	}
	srv := launcher.Standalone(t, launcher.Options{})
	for _, tc := range edgeTransports() {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			b, err := tc.s.Open(ctx, strategy.Config{Addrs: []string{srv.Addr()}, DialTimeout: 5 * time.Second, ReadTimeout: 3 * time.Second, WriteTimeout: 3 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			v := make([]byte, 64)
			if err := b.Set(ctx, "edge:allocs", v, 0); err != nil {
				t.Fatal(err)
			}
			get := testing.AllocsPerRun(2000, func() {
				if _, err := b.Get(ctx, "edge:allocs"); err != nil {
					t.Fatal(err)
				}
			})
			set := testing.AllocsPerRun(2000, func() {
				if err := b.Set(ctx, "edge:allocs", v, time.Minute); err != nil {
					t.Fatal(err)
				}
			})
			if get > 1 || set > 0 {
				t.Errorf("Get allocates %.2f, Set %.2f times per call; want ≤ 1 and 0", get, set)
			}
		})
	}
}

// TestPoolIdleConnectionsClosedByServer: connections the server closed
// while they sat idle in the pool (a restart, an idle timeout, CLIENT
// KILL) are never lent to a call: the next write succeeds on its one
// attempt, on a new connection, rather than failing after its request
// was sent.
func TestPoolIdleConnectionsClosedByServer(t *testing.T) {
	srv := startPrivateServer(t, launcher.Options{})
	c := edgeNew(t, redisx.Options{Addrs: []string{srv.Addr()}, Strategy: strategy.Pool{Size: 4, MinIdle: 4}})
	ctx := edgeCtx(t, 10*time.Second)
	for c.Stats().Idle < 4 {
		if ctx.Err() != nil {
			t.Fatalf("the pool never had its 4 idle connections: %+v", c.Stats())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if _, err := srv.CLI(ctx, "CLIENT", "KILL", "TYPE", "normal"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // the connections are idle, and closed
	for i := range 3 {
		if err := c.Set(ctx, "idle", []byte("v"), 0); err != nil {
			t.Fatalf("Set %d after the server closed the idle connections: %v", i, err)
		}
	}
	if got := c.Stats().BrokenConns; got < 1 {
		t.Errorf("BrokenConns = %d, want the closed idle connections counted", got)
	}
}
