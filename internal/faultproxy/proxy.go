package faultproxy

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Proxy forwards TCP connections from its own loopback address to an
// upstream address, with faults switched on and off at run time (see the
// package documentation). A Proxy is safe for concurrent use. Close it
// when done: it owns its listener, every connection and their goroutines.
type Proxy struct {
	upstream string
	ln       net.Listener
	ctx      context.Context // cancelled by Close: ends upstream dials
	cancel   context.CancelFunc
	wg       sync.WaitGroup // the accept loop and every connection's pipes

	mu      sync.Mutex
	f       faults
	changed chan struct{} // closed, and replaced, whenever f changes
	conns   map[*conn]struct{}
	closed  bool

	accepted, dropped, cut, reset atomic.Int64
}

// Stats counts what a Proxy did.
type Stats struct {
	// Accepted is the number of connections accepted, dropped ones
	// included.
	Accepted int64
	// Active is the number of connections open now.
	Active int
	// Dropped is the number of connections closed on accept by Drop.
	Dropped int64
	// Cut is the number of connections closed by CutAfter.
	Cut int64
	// Reset is the number of connections closed by Reset.
	Reset int64
}

// Start listens on a free port of 127.0.0.1 and forwards every connection
// to upstream ("host:port"), which is dialled anew for each accepted
// connection. ctx bounds only the start; the proxy runs until Close.
func Start(ctx context.Context, upstream string) (*Proxy, error) {
	if _, _, err := net.SplitHostPort(upstream); err != nil {
		return nil, fmt.Errorf("faultproxy: upstream %q: %w", upstream, err)
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("faultproxy: listen: %w", err)
	}
	p := &Proxy{
		upstream: upstream,
		ln:       ln,
		changed:  make(chan struct{}),
		conns:    map[*conn]struct{}{},
	}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	p.wg.Add(1)
	go p.acceptLoop()
	return p, nil
}

// Addr is the proxy's address, "127.0.0.1:port": what the client under
// test dials instead of the upstream server.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Stats returns the proxy's counters.
func (p *Proxy) Stats() Stats {
	p.mu.Lock()
	active := len(p.conns)
	p.mu.Unlock()
	return Stats{
		Accepted: p.accepted.Load(),
		Active:   active,
		Dropped:  p.dropped.Load(),
		Cut:      p.cut.Load(),
		Reset:    p.reset.Load(),
	}
}

// Close stops accepting, closes every connection (with a FIN, not a
// reset) and waits for every goroutine of the proxy to end. Data held by
// Delay or Blackhole is discarded. Close is idempotent.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	conns := p.snapshotConns()
	p.mu.Unlock()

	p.cancel()
	err := p.ln.Close()
	for _, c := range conns {
		c.close(false, nil)
	}
	p.wg.Wait()
	if err != nil {
		return fmt.Errorf("faultproxy: close: %w", err)
	}
	return nil
}

func (p *Proxy) acceptLoop() {
	defer p.wg.Done()
	for {
		nc, err := p.ln.Accept()
		if err != nil {
			if p.ctx.Err() != nil {
				return // Close
			}
			// Out of file descriptors, most likely: try again shortly.
			select {
			case <-p.ctx.Done():
				return
			case <-time.After(10 * time.Millisecond):
			}
			continue
		}
		p.accepted.Add(1)
		if f, _ := p.faults(); f.drop {
			p.dropped.Add(1)
			nc.Close()
			continue
		}
		c := newConn(p, nc)
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			nc.Close()
			return
		}
		p.conns[c] = struct{}{}
		p.wg.Add(1)
		p.mu.Unlock()
		go c.run()
	}
}

// forget removes a connection whose pipes have ended.
func (p *Proxy) forget(c *conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

// snapshotConns lists the open connections; p.mu must be held.
func (p *Proxy) snapshotConns() []*conn {
	conns := make([]*conn, 0, len(p.conns))
	for c := range p.conns {
		conns = append(conns, c)
	}
	return conns
}
