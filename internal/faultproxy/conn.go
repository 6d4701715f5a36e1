package faultproxy

import (
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// conn is one proxied connection: the accepted client socket, its own
// upstream socket, and one pipe per direction copying between them. When
// either pipe ends, both sockets are closed, which ends the other.
type conn struct {
	p      *Proxy
	client net.Conn
	done   chan struct{} // closed by close

	mu       sync.Mutex
	upstream net.Conn // nil until dialled
	closed   bool

	stranded atomic.Bool // Strand: nothing is forwarded any more
}

func newConn(p *Proxy, client net.Conn) *conn {
	return &conn{p: p, client: client, done: make(chan struct{})}
}

// run dials upstream and copies both ways until the connection ends. It
// owns one count of p.wg.
func (c *conn) run() {
	defer c.p.wg.Done()
	defer c.p.forget(c)
	d := net.Dialer{Timeout: 5 * time.Second}
	up, err := d.DialContext(c.p.ctx, "tcp", c.p.upstream)
	if err != nil {
		c.close(false, nil)
		return
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		up.Close()
		return
	}
	c.upstream = up
	c.mu.Unlock()

	down := make(chan struct{})
	go func() {
		defer close(down)
		c.pipe(1, up, c.client)
	}()
	c.pipe(0, c.client, up)
	<-down
}

// close closes both sockets, with an RST when rst is set, and reports
// whether this call closed them. When it does, it first adds one to reason
// (if not nil), so that a peer seeing the close also sees it counted.
func (c *conn) close(rst bool, reason *atomic.Int64) bool {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return false
	}
	c.closed = true
	up := c.upstream
	c.mu.Unlock()
	if reason != nil {
		reason.Add(1)
	}
	close(c.done)
	for _, nc := range []net.Conn{c.client, up} {
		if nc == nil {
			continue
		}
		if tc, ok := nc.(*net.TCPConn); ok && rst {
			// Linger zero: close discards unsent data and sends an RST.
			tc.SetLinger(0)
		}
		nc.Close()
	}
	return true
}

// pipeState is what one pipe remembers between chunks.
type pipeState struct {
	cutGen uint64    // the CutAfter generation left counts for
	left   int64     // bytes still allowed before the cut; negative: no cut
	next   time.Time // when Bandwidth lets the next piece go
}

// pipe copies src to dst through the faults of direction i (0 Upstream,
// 1 Downstream) until either fails or the connection is closed.
func (c *conn) pipe(i int, src, dst net.Conn) {
	defer c.close(false, nil)
	buf := make([]byte, 32<<10)
	st := pipeState{left: -1}
	for {
		n, err := src.Read(buf)
		if n > 0 && !c.forward(i, buf[:n], dst, &st) {
			return
		}
		if err != nil {
			return
		}
	}
}

// forward writes one chunk to dst, applying the faults of direction i:
// Blackhole holds it, Delay delays it, Bandwidth paces it in pieces,
// CutAfter truncates it and closes the connection. It reports false when
// the connection is done.
func (c *conn) forward(i int, b []byte, dst net.Conn, st *pipeState) bool {
	f, ok := c.waitOpen()
	if !ok {
		return false
	}
	if d := f.delay[i]; d > 0 && !c.sleep(d) {
		return false
	}
	for len(b) > 0 {
		// Settings may change while a chunk is paced: take them anew for
		// every piece.
		if f, ok = c.waitOpen(); !ok {
			return false
		}
		piece := b
		rate := f.rate[i]
		if rate > 0 {
			piece = b[:min(len(b), max(rate/50, 1))]
			if !c.sleep(time.Until(st.next)) {
				return false
			}
		}
		if cut := f.cut[i]; cut.gen != st.cutGen {
			st.cutGen, st.left = cut.gen, -1
			if cut.on {
				st.left = cut.bytes
			}
		}
		cutNow := st.left >= 0 && int64(len(piece)) >= st.left
		if cutNow {
			piece = piece[:st.left]
		}
		if len(piece) > 0 {
			if _, err := dst.Write(piece); err != nil {
				return false
			}
		}
		if cutNow {
			c.close(false, &c.p.cut)
			return false
		}
		if st.left >= 0 {
			st.left -= int64(len(piece))
		}
		if rate > 0 {
			st.next = later(st.next, time.Now()).Add(time.Duration(len(piece)) * time.Second / time.Duration(rate))
		}
		b = b[len(piece):]
	}
	return true
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// waitOpen returns the current faults once Blackhole is off. It reports
// false when the connection is closed while it waits; a stranded one
// waits for that.
func (c *conn) waitOpen() (faults, bool) {
	for {
		f, changed := c.p.faults()
		if !f.blackhole && !c.stranded.Load() {
			return f, true
		}
		select {
		case <-changed:
		case <-c.done:
			return f, false
		}
	}
}

// sleep waits for d, or until the connection is closed (then false).
func (c *conn) sleep(d time.Duration) bool {
	if d <= 0 {
		select {
		case <-c.done:
			return false
		default:
			return true
		}
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-c.done:
		return false
	}
}
