package mux

import (
	"runtime"
	"time"

	"github.com/redisx-go/kit/internal/failure"
)

// The write side of a muxConn: encoded commands in chunks, written by a
// caller that finds the write side free, or by the writer goroutine.

// outbuf holds encoded commands in chunks: a burst of big values fills
// chunks of their own size instead of growing (and copying, again and
// again) one buffer, and the chunks are written together with writev.
type outbuf struct {
	full  [][]byte // sealed chunks, in order, before cur
	cur   []byte   // the chunk being encoded into
	count int64    // commands
	upto  uint64   // set by takeOut: the calls pushed through it (c.pushes)
}

const (
	chunkSize = 16 << 10 // a chunk is sealed once it holds this much
	keepChunk = 64 << 10 // larger chunks are not reused after a write
	keepFree  = 64       // chunks kept for reuse per connection, until it is idle
)

func (o *outbuf) empty() bool { return len(o.cur) == 0 && len(o.full) == 0 }

// chunk returns an empty chunk, reused when one is free. Under mu.
func (c *muxConn) chunk() []byte {
	if n := len(c.free); n > 0 {
		b := c.free[n-1]
		c.free = c.free[:n-1]
		return b
	}
	return make([]byte, 0, chunkSize)
}

// fit makes room for a command of about n bytes (a big value) in the
// current chunk without growing it: a chunk of its own otherwise. Under mu.
func (c *muxConn) fit(n int) {
	if cap(c.out.cur)-len(c.out.cur) >= n {
		return
	}
	if len(c.out.cur) > 0 {
		c.out.full = append(c.out.full, c.out.cur)
	} else {
		c.keep(c.out.cur)
	}
	for i := len(c.free) - 1; i >= 0; i-- {
		if cap(c.free[i]) >= n {
			c.out.cur = c.free[i]
			c.free = append(c.free[:i], c.free[i+1:]...)
			return
		}
	}
	c.out.cur = make([]byte, 0, max(n, chunkSize))
}

// seal starts a new chunk once the current one is full enough. Under mu.
func (c *muxConn) seal() {
	if len(c.out.cur) >= chunkSize {
		c.out.full = append(c.out.full, c.out.cur)
		c.out.cur = c.chunk()
	}
}

// takeOut returns what is buffered, for the holder of the write side, and
// starts an empty buffer. Under mu.
func (c *muxConn) takeOut() outbuf {
	o := c.out
	o.upto = c.pushes
	c.out = outbuf{full: c.lists, cur: c.chunk()}
	c.lists = nil
	return o
}

// recycle keeps the chunks of a finished write for reuse: a few of modest
// size, so that a burst of big values leaves no buffer at its peak. Under
// mu.
func (c *muxConn) recycle(o outbuf) {
	for _, b := range o.full {
		c.keep(b)
	}
	c.keep(o.cur)
	if o.full != nil && c.lists == nil {
		clear(o.full)
		c.lists = o.full[:0]
	}
}

func (c *muxConn) keep(b []byte) {
	if len(c.free) < keepFree && cap(b) <= keepChunk {
		c.free = append(c.free, b[:0])
	}
}

// write sends o whole. Only the write side's holder calls it.
func (c *muxConn) write(o outbuf) error {
	if wt := c.node.cfg.WriteTimeout; wt > 0 {
		c.nc.SetWriteDeadline(time.Now().Add(wt))
	}
	c.count(o)
	var err error
	var n int
	switch {
	case len(o.full) == 0:
		n, err = c.nc.Write(o.cur)
	case len(o.full) == 1 && len(o.cur) == 0:
		n, err = c.nc.Write(o.full[0])
	default:
		// WriteTo consumes the slice it is given: give it a copy of the
		// chunk list (c.ws.iov, whose backing array c.ws.iovs keeps), so that
		// recycle still sees every chunk whole.
		c.ws.iovs = append(append(c.ws.iovs[:0], o.full...), o.cur)
		c.ws.iov = c.ws.iovs
		var n64 int64
		n64, err = c.ws.iov.WriteTo(c.nc)
		n = int(n64)
		clear(c.ws.iovs)
	}
	c.sizes.tx.Add(int64(n))
	return err
}

// count counts the write of o in Stats, before it starts: once the bytes
// leave, the replies may be read and their callers return (and read
// Stats) before the writer runs again. A write of nothing but the rest of
// a batch a caller began (see writeSome) is not another batch.
func (c *muxConn) count(o outbuf) {
	if o.count > 0 {
		c.node.counts.flushes.Add(1)
		c.node.counts.commands.Add(o.count)
	}
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// writeOnce writes what is buffered, for a caller that took the write
// side, and leaves what accumulated meanwhile to the writer goroutine.
func (c *muxConn) writeOnce() {
	c.mu.Lock()
	o := c.takeOut()
	c.mu.Unlock()
	if err := c.write(o); err != nil {
		c.failWrite(err) // the write side stays taken: nothing more is written
		return
	}
	c.wrote(o)
}

// wrote ends a caller's write of o, written whole: its chunks are kept
// for reuse, and what accumulated meanwhile is left to the writer
// goroutine.
func (c *muxConn) wrote(o outbuf) {
	c.mu.Lock()
	c.mark(o.upto)
	c.recycle(o)
	more := !c.out.empty()
	if !more {
		c.writing = false
	}
	c.mu.Unlock()
	if more {
		signal(c.writeSig)
	}
}

// writeSome is writeOnce for more than a chunk (a big value, a long
// pipeline), which could keep the caller past its context if written
// whole, as a write cannot heed one: the caller writes only what the
// socket takes at once, without waiting (writeNow), which on an idle
// connection is most often all of it, and spares a hand-off to the
// writer goroutine. What the socket did not take goes back ahead of
// what was buffered since, and the writer goroutine writes it; the write
// side stays taken meanwhile, so the stream stays whole. The caller then
// goes on to read its reply, as it did when the writer goroutine wrote
// it all, and never waits on the write.
func (c *muxConn) writeSome() {
	c.mu.Lock()
	o := c.takeOut()
	c.mu.Unlock()
	if wt := c.node.cfg.WriteTimeout; wt > 0 {
		// As write sets it: the deadline the last write left may have
		// passed, and a socket past its deadline takes nothing.
		c.nc.SetWriteDeadline(time.Now().Add(wt))
	}
	c.count(o)
	c.ws.iovs = append(append(c.ws.iovs[:0], o.full...), o.cur)
	n, err := c.now.writeNow(c.ws.iovs)
	clear(c.ws.iovs)
	c.sizes.tx.Add(int64(n))
	if err == nil && n == o.bytes() {
		c.wrote(o)
		return
	}
	// The rest, or all of it after an error, to the writer goroutine,
	// whose write then fails the connection as it would have: this
	// caller goes on to read meanwhile, and may yet read what the server
	// sent before it closed (a refusal of this request).
	c.mu.Lock()
	c.requeue(o, n)
	c.mu.Unlock()
	signal(c.writeSig)
}

// requeue puts what is left of o after its first n bytes, written, back
// ahead of what was buffered since, for the writer goroutine; the chunks
// written whole are kept for reuse. The commands were counted with o's
// write. Under mu.
func (c *muxConn) requeue(o outbuf, n int) {
	rest := make([][]byte, 0, len(o.full)+1+len(c.out.full))
	for _, b := range append(o.full, o.cur) {
		if len(b) == 0 || n >= len(b) && len(rest) == 0 {
			n -= len(b)
			c.keep(b)
			continue
		}
		tail := b[n:]
		if n > 0 && cap(b) > keepChunk && len(tail) <= keepChunk {
			// Copied, so that keeping it for reuse once written does not
			// keep b's array, too large to keep, alive.
			tail = append([]byte(nil), tail...)
		}
		rest = append(rest, tail)
		n = 0
	}
	c.out.full = append(rest, c.out.full...)
}

// bytes is the length of what o holds.
func (o *outbuf) bytes() int {
	n := len(o.cur)
	for _, b := range o.full {
		n += len(b)
	}
	return n
}

// writeLoop holds the write side when a writer hands it over, and writes
// until nothing is left.
func (c *muxConn) writeLoop() {
	defer c.node.wg.Done()
	for {
		select {
		case <-c.writeSig:
		case <-c.quit:
			return
		}
		for {
			// When more commands are in flight than queued for this write,
			// callers woken by the reader are about to enqueue again: under
			// load, let them run first, so one write system call carries
			// them all (see Node.gathers).
			c.mu.Lock()
			queued := c.out.count
			c.mu.Unlock()
			if c.pending.Load() > 2*queued && c.node.gathers() {
				runtime.Gosched()
			}
			c.mu.Lock()
			if c.out.empty() {
				c.writing = false
				c.mu.Unlock()
				break
			}
			o := c.takeOut()
			c.mu.Unlock()
			if err := c.write(o); err != nil {
				c.failWrite(err)
				return
			}
			c.mu.Lock()
			c.mark(o.upto)
			c.recycle(o)
			c.mu.Unlock()
		}
	}
}

// sendMark is where a write ended: the calls pushed through it, and the
// bytes written on the connection through it.
type sendMark struct {
	calls uint64
	bytes int64
}

// sendMarks is how many of the last writes sendState can place a call
// in; a call written before them is placed at the oldest, which ended
// after it.
const sendMarks = 8

// mark records the end of a write that took the calls pushed through
// upto. Under mu.
func (c *muxConn) mark(upto uint64) {
	c.marks[c.nmarks%sendMarks] = sendMark{calls: upto, bytes: c.sizes.tx.Load()}
	c.nmarks++
}

// written reports whether the request of call number i (c.pushes counts
// them) has been written whole, and the bytes written on the connection
// through it (or through a later request, when its write is older than
// the marks kept). Under mu.
func (c *muxConn) written(i uint64) (end int64, ok bool) {
	for k := c.nmarks - min(c.nmarks, sendMarks); k < c.nmarks; k++ {
		if m := c.marks[k%sendMarks]; m.calls >= i {
			return m.bytes, true
		}
	}
	return 0, false
}

// sendState tells how far the request of the call whose reply comes next
// (the first one not answered) has gone, for the ReadTimeout rule (see
// silence.look): sent, once it is written whole and, where the socket
// tells (see dial.Acks), the peer has acknowledged its last byte; else
// moving when the socket tells how far it got: acked, the bytes of the
// connection the peer has acknowledged, grows while it is being sent.
// Neither: no request awaits a reply, or one is being written and
// nothing tells how far.
func (c *muxConn) sendState() (sent, moving bool, acked int64) {
	next := uint64(c.sizes.answered.Load()) + 1
	c.mu.Lock()
	queued := c.pushes >= next
	end, written := c.written(next)
	c.mu.Unlock()
	if !queued {
		return false, false, 0
	}
	acked, _, ok := c.acks.Read()
	if !ok {
		return written, false, 0
	}
	acked -= c.ackBase
	if written && acked >= end {
		return true, false, 0
	}
	return false, true, acked
}

// failWrite is a write's failure. A write the peer reset (see
// failure.PeerClosed) may have met a server that refused a request as it
// read it and closed, its refusal sent before the reset and maybe not yet
// read (see wire.CutError): the connection fails at once — no call is
// queued on it any more — but its socket stays open for the read side's
// holder (see failOpen), which reads and delivers what the server sent,
// then meets the end of the stream and closes it (failRead); within
// refusalWait at the latest, and at once when the node closes. Any other
// failure, or one while nobody reads (no call awaits a reply), closes it
// at once.
func (c *muxConn) failWrite(err error) {
	if failure.PeerClosed(err) && c.failOpen(err, c.node.refusalWait) {
		return
	}
	c.fail(err)
}

// refusalWait bounds the reads of a connection whose write the peer reset
// (see failWrite). Once the server has closed, the socket's receive
// buffer holds all there is, and is read at once.
const refusalWait = 100 * time.Millisecond
