package localcache_test

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redisx-go/kit/internal/launcher"
	"github.com/redisx-go/kit/localcache"
	"github.com/redisx-go/kit/redisx"
	"go.uber.org/goleak"
)

// The tests of this file hold Near to issue #7, "Correct at the edges":
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
				if d := time.Since(start); d > 2*time.Second {
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
