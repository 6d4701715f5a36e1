package strategy

import (
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
	err   error   // set once, when the connection fails

	broken  atomic.Bool
	pending atomic.Int64  // commands enqueued and not yet answered
	replies atomic.Uint64 // replies read, for the watchdog
}

var errUnsolicited = errors.New("reply with no command waiting for it")

func (n *muxNode) startConn(nc net.Conn) *muxConn {
	c := &muxConn{
		node:   n,
		nc:     nc,
		r:      resp.NewReader(nc, 32<<10),
		signal: make(chan struct{}, 1),
		quit:   make(chan struct{}),
	}
	n.wg.Add(2)
	go c.writeLoop()
	go c.readLoop()
	return c
}

// lockForEnqueue locks c for a caller about to encode a command. It fails
// when the connection is broken.
func (c *muxConn) lockForEnqueue() error {
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		c.pending.Add(-1)
		return connError(c.node.addr, err)
	}
	return nil
}

// push queues cl behind the command just encoded into wbuf, unlocks and
// wakes the writer.
func (c *muxConn) push(cl *call, commands int64) {
	c.queue = append(c.queue, cl)
	c.count += commands
	c.mu.Unlock()
	select {
	case c.signal <- struct{}{}:
	default:
	}
}

// abortEnqueue undoes a lockForEnqueue whose command could not be encoded.
func (c *muxConn) abortEnqueue(mark int) {
	c.wbuf = c.wbuf[:mark]
	c.mu.Unlock()
	c.pending.Add(-1)
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
		// Wait for reply bytes before taking calls: a reply can only arrive
		// for a command already written, hence already queued.
		if err := c.r.Wait(); err != nil {
			c.fail(err)
			return
		}
		c.mu.Lock()
		batch, c.queue = c.queue, spare[:0]
		c.mu.Unlock()
		if len(batch) == 0 {
			c.fail(errUnsolicited)
			return
		}
		for i, cl := range batch {
			if err := cl.read(c.r); err != nil {
				c.fail(err)
				for _, rest := range batch[i:] {
					rest.err = connError(c.node.addr, err)
					c.node.calls.deliver(rest)
				}
				return
			}
			c.node.calls.deliver(cl)
			batch[i] = nil
		}
		c.replies.Add(uint64(len(batch)))
		c.pending.Add(-int64(len(batch)))
		spare = batch[:0]
	}
}

// fail marks c broken, closes it and fails every queued call. Calls the
// reader already took are failed by the reader when its read errors.
func (c *muxConn) fail(err error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = err
	c.broken.Store(true)
	q := c.queue
	c.queue = nil
	c.mu.Unlock()
	close(c.quit)
	c.nc.Close()
	if !errors.Is(err, ErrClosed) {
		c.node.broken.Add(1)
	}
	for _, cl := range q {
		cl.err = connError(c.node.addr, err)
		c.node.calls.deliver(cl)
	}
}
