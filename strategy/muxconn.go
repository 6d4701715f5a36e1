package strategy

import (
	"context"
	"errors"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redisx-go/kit/internal/resp"
)

// muxConn is one connection shared by many callers. Callers encode their
// command into wbuf and append their call to queue under mu, then nudge
// the writer. The writer loop swaps wbuf out and writes it whole: it
// flushes once per drain of the queue, so batches grow with load and no
// command is flushed on its own. The reader loop takes calls from queue in
// the order their commands were encoded — the order the server answers —
// and hands each its reply. No lock is held across I/O.
type muxConn struct {
	node   *muxNode
	nc     net.Conn
	r      *resp.Reader
	signal chan struct{} // capacity 1: "wbuf has data"
	quit   chan struct{} // closed when the connection fails or is closed

	mu    sync.Mutex
	wbuf  []byte  // encoded commands not yet taken by the writer
	queue []*call // calls not yet taken by the reader, in command order
	count int64   // commands in wbuf
	err   error   // set once, when the connection fails: what its callers get
	idle  bool    // the reader waits for bytes with no call taken

	broken  atomic.Bool
	pending atomic.Int64 // commands enqueued and not yet answered

	// What the watchdog looks at: bytes received, and the context
	// deadline of the call whose reply comes next (Unix nanoseconds, 0 for
	// none), published by the reader as it reaches each call, or by the
	// caller that queues the first call for an idle reader.
	received     atomic.Int64
	headDeadline atomic.Int64

	// Callers waiting for room under MaxPending sleep on room, which the
	// reader closes (and roomMu's holder replaces) when replies free
	// pending slots while waiters is not zero.
	waiters atomic.Int32
	roomMu  sync.Mutex
	room    chan struct{}
}

var errUnsolicited = errors.New("reply with no command waiting for it")

func (n *muxNode) startConn(nc net.Conn) *muxConn {
	c := &muxConn{
		node:   n,
		nc:     nc,
		signal: make(chan struct{}, 1),
		quit:   make(chan struct{}),
	}
	c.r = resp.NewReader(progressReader{nc, &c.received}, 32<<10)
	n.wg.Add(2)
	go c.writeLoop()
	go c.readLoop()
	return c
}

// progressReader counts the bytes read from a connection: the watchdog's
// sign of life, one atomic add per read system call.
type progressReader struct {
	nc net.Conn
	n  *atomic.Int64
}

func (p progressReader) Read(b []byte) (int, error) {
	n, err := p.nc.Read(b)
	p.n.Add(int64(n))
	return n, err
}

// reserve counts one more command on c and reports whether it fits under
// limit; waitRoom is the slow path when it does not.
func (c *muxConn) reserve(limit int64) bool {
	return c.pending.Add(1) <= limit
}

// release gives back n pending slots and wakes the callers waiting for
// room, if any.
func (c *muxConn) release(n int64) {
	c.pending.Add(-n)
	if c.waiters.Load() > 0 {
		c.roomMu.Lock()
		if c.room != nil {
			close(c.room)
			c.room = nil
		}
		c.roomMu.Unlock()
	}
}

// waitRoom waits, within ctx, for a pending slot of a full connection; the
// caller's failed attempt is still counted. Each attempt is made holding
// the room channel of that moment, so a release after a failed attempt
// wakes the waiter; a waiter whose undo shows room (two attempts crossed)
// retries at once instead of sleeping, so no freed slot is left unclaimed.
func (c *muxConn) waitRoom(ctx context.Context, limit int64) error {
	c.waiters.Add(1)
	defer c.waiters.Add(-1)
	c.pending.Add(-1)
	for {
		c.roomMu.Lock()
		if c.room == nil {
			c.room = make(chan struct{})
		}
		room := c.room
		c.roomMu.Unlock()
		if c.reserve(limit) {
			return nil
		}
		if c.pending.Add(-1) < limit {
			continue
		}
		select {
		case <-room:
		case <-ctx.Done():
			return ctx.Err()
		case <-c.quit:
			return c.failure()
		}
	}
}

// lockForEnqueue locks c for a caller about to encode a command. It fails
// when the connection is broken.
func (c *muxConn) lockForEnqueue() error {
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		c.release(1)
		return err
	}
	return nil
}

// push queues cl behind the command just encoded into wbuf, unlocks and
// wakes the writer.
func (c *muxConn) push(cl *call, commands int64) {
	if c.idle && len(c.queue) == 0 {
		// The reader waits for bytes and will not look at cl before its
		// reply begins: cl is the head of the line from now on.
		c.publishHead(cl)
	}
	c.queue = append(c.queue, cl)
	c.count += commands
	c.mu.Unlock()
	select {
	case c.signal <- struct{}{}:
	default:
	}
}

func (c *muxConn) writeLoop() {
	defer c.node.wg.Done()
	var spare []byte
	wt := c.node.cfg.WriteTimeout
	for {
		select {
		case <-c.signal:
		case <-c.quit:
			return
		}
		// When more commands are in flight than queued for this write,
		// callers woken by the reader are about to enqueue again: let them
		// run first, so one write system call carries them all. Under low
		// concurrency nothing else is runnable and this returns at once.
		if c.pending.Load() > 2*c.queued() {
			runtime.Gosched()
		}
		c.mu.Lock()
		buf, n := c.wbuf, c.count
		c.wbuf, c.count = spare[:0], 0
		c.mu.Unlock()
		if len(buf) == 0 {
			spare = buf
			continue
		}
		if wt > 0 {
			c.nc.SetWriteDeadline(time.Now().Add(wt))
		}
		if _, err := c.nc.Write(buf); err != nil {
			c.fail(err)
			return
		}
		c.node.flushes.Add(1)
		c.node.commands.Add(n)
		if cap(buf) > 1<<20 {
			buf = nil // do not keep a huge buffer after a burst of big values
		}
		spare = buf
	}
}

// queued reports the commands encoded and not yet taken by the writer.
func (c *muxConn) queued() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.count
}

func (c *muxConn) readLoop() {
	defer c.node.wg.Done()
	var batch, spare []*call
	for {
		c.mu.Lock()
		batch, c.queue = c.queue, spare[:0]
		c.idle = len(batch) == 0
		c.mu.Unlock()
		if len(batch) == 0 {
			// Nothing to read for: wait for reply bytes, then take the
			// calls. A reply can only arrive for a command already
			// written, hence already queued.
			spare = batch // empty, and not the queue's array
			if err := c.r.Wait(); err != nil {
				c.fail(err)
				return
			}
			c.mu.Lock()
			batch, c.queue = c.queue, spare[:0]
			c.idle = false
			c.mu.Unlock()
			if len(batch) == 0 {
				c.fail(errUnsolicited)
				return
			}
		}
		for i, cl := range batch {
			c.publishHead(cl)
			if err := cl.read(c.r); err != nil {
				c.fail(err)
				fail := c.failure()
				for _, rest := range batch[i:] {
					rest.fail = fail
					c.node.calls.deliver(rest)
				}
				return
			}
			c.node.calls.deliver(cl)
			batch[i] = nil
		}
		c.release(int64(len(batch)))
		spare = batch[:0]
	}
}

// publishHead tells the watchdog the deadline of cl, whose reply is the
// next to come. Runs of calls share a deadline (none, most often), so the
// store is rarely needed.
func (c *muxConn) publishHead(cl *call) {
	if c.headDeadline.Load() != cl.deadline {
		c.headDeadline.Store(cl.deadline)
	}
}

// failure returns the error the callers of a failed connection get.
func (c *muxConn) failure() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// fail marks c broken, closes it and fails every queued call: with
// ErrClosed when the client closes it, otherwise with ErrConnection
// wrapping err. Calls the reader already took are failed by the reader
// when its read errors.
func (c *muxConn) fail(err error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	closing := errors.Is(err, ErrClosed)
	if !closing {
		err = connError(c.node.addr, err)
	}
	c.err = err
	c.broken.Store(true)
	q := c.queue
	c.queue = nil
	c.mu.Unlock()
	close(c.quit)
	c.nc.Close()
	if !closing {
		c.node.broken.Add(1)
	}
	for _, cl := range q {
		cl.fail = err
		c.node.calls.deliver(cl)
	}
}

// overdue reports whether the reply the reader awaits is late under the
// rule of Config.ReadTimeout, given that nothing has been received since
// quiet: ReadTimeout after quiet (no earlier than the call was sent), or
// the call's context deadline when that is later. A head call with a
// short deadline thus never fails the connection sooner than ReadTimeout
// would: the calls behind it may allow longer.
func (c *muxConn) overdue(now, quiet time.Time, timeout time.Duration) bool {
	due := quiet.Add(timeout)
	if d := c.headDeadline.Load(); d != 0 {
		due = maxTime(due, time.Unix(0, d))
	}
	return !now.Before(due)
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
