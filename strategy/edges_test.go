package strategy_test

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redisx-go/kit/internal/launcher"
	"github.com/redisx-go/kit/redisx"
	"github.com/redisx-go/kit/strategy"
)

// The edges of issue #7 on the two transports: dials shared by callers
// with different contexts, error texts, Stats, allocations, and idle
// connections the server closed (the timeouts are in timeouts_test.go).

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
