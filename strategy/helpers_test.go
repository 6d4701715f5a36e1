package strategy_test

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redisx-go/kit/internal/launcher"
	"github.com/redisx-go/kit/redisx"
	"github.com/redisx-go/kit/strategy"
)

// Helpers of the transports' tests: the transports under test, contexts,
// clients without retries, and a proxy that breaks connections.

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
	return launcher.Private(t, launcher.Options{Args: []string{"--enable-debug-command", "yes"}})
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
