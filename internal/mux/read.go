package mux

import (
	"context"
	"errors"
	"os"
	"time"

	"github.com/redisx-go/kit/internal/failure"
	"github.com/redisx-go/kit/internal/wire"
)

// The read side of a muxConn: who reads its replies, one holder at a
// time — nobody (reading is false), the drainer goroutine, or a leading
// caller, which reads its own reply, the next on the wire. It moves only
// as follows:
//
//	nobody  → caller   push: a call queued while nobody reads, whose
//	                   caller awaits it at once
//	nobody  → drainer  push: a call awaited later (a pipeline's);
//	                   watchIdle: to hear an idle connection close
//	caller  → caller   pass: the next reply is not whole in the buffer,
//	                   and its caller can lead (handToCaller)
//	caller  → drainer  pass: the same, but its caller cannot lead;
//	                   lead: the reply is larger than the read buffer;
//	                   leave: the caller's context ended first
//	drainer → caller   drain: nothing is buffered, and the next call's
//	                   caller can lead (handToCaller)
//	any     → nobody   nextBatch: no call is queued; failRead: the
//	                   stream failed
//
// Whoever holds it reads and delivers the replies already whole in the
// buffer without handing it on (readNext); under load (busy) the drainer
// keeps it, as a dedicated reader would.

// await waits for cl's outcome within ctx: its delivery, or the read side,
// which it then uses to read its own reply (lead). leads is push's result:
// cl holds the read side already. It returns ctx's error when ctx ends
// first (cl is then abandoned, and recycled by whoever reads its reply),
// or the connection's failure when cl cannot be answered; otherwise cl
// holds the reply.
func (c *muxConn) await(ctx context.Context, cl *call, leads bool) error {
	if !leads {
		// A token on done, and only one: delivered, or handed the read
		// side. (The state alone would not do: a hand-off may come before
		// this caller gets here, and its token must still be taken.) A
		// context that cannot end needs no select, which costs a busy
		// node about twice a plain receive.
		if done := ctx.Done(); done == nil {
			<-cl.done
		} else {
			select {
			case <-cl.done:
			case <-done:
				if cl.abandon() {
					return ctx.Err()
				}
				<-cl.done
			}
		}
		if cl.state.Load() != callLeading {
			return cl.fail
		}
	}
	return c.lead(ctx, cl)
}

// lead is the read side for a caller whose call cl is the next to be
// answered: it reads cl's reply, then passes the read side on.
func (c *muxConn) lead(ctx context.Context, cl *call) error {
	if !c.nextBatch() {
		return c.failure() // the connection failed and took the queue, cl with it
	}
	if c.rs.batch[c.rs.i] != cl {
		// Cannot happen: the read side is only given to the next call's caller.
		c.failRead(errors.New("internal error: read side given to a call that is not next"), cl)
		return c.failure()
	}
	c.publishHead(cl)
	if n := cl.replies(); !c.rs.r.WholeN(n) {
		whole, err := c.awaitWhole(ctx, cl, n)
		switch {
		case err != nil:
			return err
		case !whole:
			// Larger than the read buffer (a big value, the replies of a
			// long pipeline): parsing it as it comes could outlast ctx,
			// which a parse cannot heed. The drainer reads it; this
			// caller waits for it as any other, and may leave.
			cl.state.Store(callWaiting)
			c.toDrainer()
			return wait(ctx, cl)
		}
	}
	if err := cl.read(c.rs.r); err != nil {
		c.failRead(err, cl)
		return cl.cut(err, c.failure())
	}
	c.closesAfter(cl)
	c.rs.batch[c.rs.i] = nil
	c.rs.i++
	c.release(1)
	c.pass()
	return nil
}

// awaitWhole waits, within cl's context, until the n replies of cl, the
// next call to be answered, are whole in the read buffer, so that reading
// them cannot block. It reports false when they cannot be (they are
// larger than the buffer; some of them may be buffered), and returns an
// error when cl leaves — its context ended first: the stream is intact,
// only buffered, and the drainer reads and drops the reply — or the
// connection failed. A context that cannot end needs no wait: its caller
// may block on the parse, so the first byte is enough.
func (c *muxConn) awaitWhole(ctx context.Context, cl *call, n int) (whole bool, err error) {
	done := ctx.Done()
	if done == nil {
		if c.rs.r.Buffered() == 0 {
			if err := c.rs.r.Wait(); err != nil {
				c.failRead(err, cl)
				return false, c.failure()
			}
		}
		return true, nil
	}
	if ctx.Err() != nil {
		return false, c.leave(ctx, cl)
	}
	if cl.deadline != 0 {
		c.nc.SetReadDeadline(time.Unix(0, cl.deadline))
	}
	disarm := c.rs.wait.arm(ctx, c.nc.SetReadDeadline)
	whole = true
	for !c.rs.r.WholeN(n) {
		if c.rs.r.Buffered() >= c.rs.r.Size() {
			whole = false
			break
		}
		if err = c.rs.r.Fill(); err != nil {
			break
		}
	}
	disarm()
	// Whatever deadline the wait had (cl's, or the past one of interrupt),
	// the parse and later readers have none: the watchdog bounds them.
	c.nc.SetReadDeadline(time.Time{})
	if err == nil {
		return whole, nil
	}
	if errors.Is(err, os.ErrDeadlineExceeded) && (ctx.Err() != nil || deadlinePassed(cl.deadline)) {
		// The reply is not read, only buffered: the stream is intact.
		return false, c.leave(ctx, cl)
	}
	if failure.PeerClosed(err) {
		if c.rs.r.WholeN(n) {
			return true, nil // whole before the end, which the next read meets
		}
		// The replies the server sent before it closed are all buffered:
		// parsing them cannot block. The last may refuse cl (see call.cut).
		cl.read(c.rs.r)
	}
	c.failRead(err, cl)
	return false, cl.cut(err, c.failure())
}

// deadlinePassed reports whether a deadline (Unix ns, 0 for none) has come,
// within a millisecond: the socket's timer may fire a moment before the
// context's own.
func deadlinePassed(d int64) bool {
	return d != 0 && time.Now().UnixNano() >= d-int64(time.Millisecond)
}

// leave is a leading caller giving up: its call is abandoned and the read
// side goes to the drainer, which reads and drops the reply.
func (c *muxConn) leave(ctx context.Context, cl *call) error {
	cl.pin()
	cl.state.Store(callAbandoned)
	c.toDrainer()
	err := ctx.Err()
	if err == nil {
		err = context.DeadlineExceeded // the socket's timer came first
	}
	return err
}

// toDrainer hands the read side to the drainer goroutine.
func (c *muxConn) toDrainer() {
	signal(c.drainSig)
}

// pass hands the read side on, after a leading caller read its own reply:
// replies already whole in the buffer are read and delivered at once (that
// cannot block); then the read side goes to the caller of the next call,
// who will wait for its own reply to be whole and read it (the rest of a
// reply may take any time to come, and would keep this caller, whose own
// reply is in, past its context; a reply is whole only with all the
// replies of its call); or to the drainer when that caller cannot lead;
// or nowhere when nothing is queued.
func (c *muxConn) pass() {
	for c.nextBatch() {
		next := c.rs.batch[c.rs.i]
		// Now, not once the next reader runs: it may run late.
		c.publishHead(next)
		if !c.rs.r.WholeN(next.replies()) {
			if !c.handToCaller(next) {
				c.toDrainer()
			}
			return
		}
		if !c.readNext() {
			return
		}
	}
}

// handToCaller gives the read side to the caller of next, the call whose
// reply comes next, and reports whether it did: only while the
// connection is not busy, and only to a caller that waits for its reply
// right after queueing the call (lead) and has not left.
func (c *muxConn) handToCaller(next *call) bool {
	if c.busy() || !next.lead || !next.state.CompareAndSwap(callWaiting, callLeading) {
		return false
	}
	c.publishHead(next)
	next.done <- struct{}{}
	return true
}

// readNext reads the reply of rs.batch[rs.i] and delivers it; false when the
// connection failed (every call has been failed then).
func (c *muxConn) readNext() bool {
	next := c.rs.batch[c.rs.i]
	c.publishHead(next)
	if err := next.read(c.rs.r); err != nil {
		c.failRead(err, nil)
		return false
	}
	c.closesAfter(next)
	c.rs.batch[c.rs.i] = nil
	c.rs.i++
	// Released first: a caller woken by its reply then finds its lane
	// free (see pickLane), as a lone caller should.
	c.release(1)
	c.node.calls.deliver(next)
	return true
}

// nextBatch makes sure rs.batch[rs.i] is the next call to be answered, taking
// the queued calls when rs.batch is used up. It returns false, and gives up
// the read side, when nothing is queued.
func (c *muxConn) nextBatch() bool {
	if c.rs.i < len(c.rs.batch) {
		return true
	}
	c.mu.Lock()
	clear(c.rs.batch)
	c.rs.batch, c.queue, c.rs.i = c.queue, c.rs.batch[:0], 0
	if len(c.rs.batch) > 0 {
		c.mu.Unlock()
		return true
	}
	c.reading = false
	err, open := c.err, c.err != nil && !c.closed
	if err != nil {
		signal(c.drainSig) // the drainer may exit now
	}
	c.mu.Unlock()
	if open {
		// Failed but left open to the read side (see failOpen), which has
		// delivered every reply it was owed: no call is queued on it any
		// more.
		c.fail(err)
	}
	return false
}

// drainLoop is the drainer: it holds the read side when a caller cannot
// (see pass), reading replies and delivering them, and passes it back to
// a caller as soon as the next reply is not already here. It exits once
// the connection has failed and nobody reads any more.
func (c *muxConn) drainLoop() {
	defer c.node.wg.Done()
	for range c.drainSig {
		c.drain()
		c.mu.Lock()
		exit := c.err != nil && !c.reading
		c.mu.Unlock()
		if exit {
			return
		}
	}
}

func (c *muxConn) drain() {
	c.mu.Lock()
	watch := c.watching
	c.mu.Unlock()
	if watch {
		// An idle connection: wait for a reply to a call queued meanwhile,
		// or for the server to close the connection. Until the wait ends,
		// push publishes the deadline of the first call queued.
		err := c.rs.r.Wait()
		c.mu.Lock()
		c.watching = false
		unsolicited := len(c.queue) == 0
		c.mu.Unlock()
		c.drainFor(nil)
		if err != nil {
			c.failRead(err, nil)
			return
		}
		if unsolicited {
			c.failRead(errUnsolicited, nil)
			return
		}
	}
	for c.nextBatch() {
		next := c.rs.batch[c.rs.i]
		if c.rs.r.Buffered() == 0 && c.handToCaller(next) {
			return
		}
		if c.rs.r.Buffered() == 0 {
			c.drainFor(next)
			err := c.rs.r.Wait()
			c.drainFor(nil)
			if err != nil {
				c.failRead(err, nil)
				return
			}
		}
		if !c.readNext() {
			return
		}
	}
}

// watchIdle gives the read side to the drainer, to wait on the socket,
// and lets go of the chunks kept for reuse, when the connection has been
// idle since the last look (nobody reads, no call was queued): a server
// that closes an idle connection (a restart, an idle timeout) is then
// noticed at once and the connection replaced, rather than by the next
// call failing. The next call goes through the drainer (one hand-off) and
// the read side moves back to callers from there. Called by the watchdog
// on each tick; it reports whether no call was queued since the last
// look.
func (c *muxConn) watchIdle() (unused bool) {
	c.mu.Lock()
	unused = c.pushes == c.seen && len(c.queue) == 0 && c.pending.Load() <= 0
	idle := !c.reading && c.err == nil && c.pushes == c.seen
	c.seen = c.pushes
	if idle {
		c.reading, c.watching = true, true
		c.free = nil // a burst of big values leaves nothing behind
	}
	c.mu.Unlock()
	if idle {
		signal(c.drainSig)
	}
	return unused
}

// closesAfter fails c for new calls (see failOpen) when cl's replies,
// just read, hold an error after which the server may close the
// connection (see wire.Closes): before cl's caller hears of it, so that
// its next call, and every other, goes to another connection. The read
// side goes on reading the replies of the calls queued behind cl, with
// no bound but the rule of Config.ReadTimeout: the error may be a
// script's own, which the server goes on after; if the server closes,
// the end of the stream fails them.
func (c *muxConn) closesAfter(cl *call) {
	if cl.Kind == wire.ReplyPipe && wire.Closing(cl.pipe) || cl.Reply.Err != nil && wire.Closes(cl.Reply.Err) {
		c.failOpen(errServerCloses, 0)
	}
}

// errServerCloses is the failure of a connection after a reply the server
// closes it after (see wire.Closes).
var errServerCloses = errors.New("the server closes the connection after a protocol error")

// failRead is a stream error met by the read side's holder: the
// connection fails, every call the read side had taken is failed (but
// own, the holder's, which returns the failure itself; the first, whose
// replies the error stopped, with its refusal if it was refused: see
// call.cut), and the read side is given up; the drainer is woken so that
// it can exit.
func (c *muxConn) failRead(err error, own *call) {
	c.fail(err)
	fail := c.failure()
	for j, cl := range c.rs.batch[c.rs.i:] {
		if cl == own {
			continue
		}
		cl.fail = fail
		if j == 0 {
			cl.fail = cl.cut(err, fail)
		}
		c.node.calls.deliver(cl)
	}
	clear(c.rs.batch)
	c.rs.batch, c.rs.i = c.rs.batch[:0], 0
	c.mu.Lock()
	c.reading = false
	c.mu.Unlock()
	signal(c.drainSig)
}

// publishHead tells the watchdog the deadline of cl, whose reply is the
// next to come. Runs of calls share a deadline (none, most often), so the
// store is rarely needed.
func (c *muxConn) publishHead(cl *call) {
	if c.live.headDeadline.Load() != cl.deadline {
		c.live.headDeadline.Store(cl.deadline)
	}
}
