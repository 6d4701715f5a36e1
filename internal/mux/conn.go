package mux

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redisx-go/kit/backend"
	"github.com/redisx-go/kit/internal/dial"
	"github.com/redisx-go/kit/internal/failure"
	"github.com/redisx-go/kit/internal/resp"
)

// muxConn is one connection shared by many callers.
//
// Writing. Callers encode their command into out and append their call to
// queue under mu, in the same critical section, so the byte stream and the
// queue have the same order. Whoever finds the write side free takes it:
// a caller writes what is buffered once, on its own goroutine (a lone
// caller pays no hand-off) — of more than a chunk, only what the socket
// takes without waiting (writeSome); whatever is left, and whatever
// accumulated meanwhile, goes to the writer goroutine, which writes until
// nothing is left, so under load batches grow and no caller writes for
// others for long.
//
// Reading. One goroutine at a time holds the read side: nobody, the
// drainer goroutine, or a caller leading, that is reading its own reply,
// the next on the wire (read.go lists how it moves). A caller that queues
// the only call of an idle connection leads at once: it writes, reads its
// reply and returns with no goroutine hand-off at all, as a pooled
// connection would; a caller that has read its reply hands the read side
// to the next call's caller, who is waiting anyway (one wake-up, the one
// a delivery would have cost). A caller never blocks on I/O it cannot
// abandon when its context can end: it reads until its reply is whole in
// the read buffer, under a read deadline that its context sets or
// interrupts, and parses it only then (a parse cannot heed a context);
// one whose context ends first, or whose reply is larger than the read
// buffer, leaves the reading to the drainer; of a write of more than a
// chunk, it writes only what the socket takes at once. No reply ever reaches the wrong
// caller, and a cancelled call never costs the connection.
//
// Each field below is either set by startConn and then only read, or
// owned by one role, or guarded by the lock named with its group. No lock
// is held across I/O.
type muxConn struct {
	node *Node
	nc   net.Conn
	slot int // the connection's index among its node's (see route.go)
	// What the peer has acknowledged, for a socket that tells (see
	// sendState), from ackBase, its count when the connection was handed
	// over (the handshake's bytes, all acknowledged by then: they were
	// answered).
	acks    dial.Acks
	ackBase int64

	writeSig chan struct{} // capacity 1: the writer goroutine holds the write side
	drainSig chan struct{} // capacity 1: the drainer holds the read side, or may exit

	quit chan struct{} // closed by fail, when the connection fails or is closed

	// mu guards the fields below, up to ws.
	mu      sync.Mutex
	out     outbuf   // encoded commands not yet written
	free    [][]byte // written chunks, for reuse
	lists   [][]byte // the emptied chunk list of the last write, for reuse
	queue   []*call  // calls not yet taken by the read side, in command order
	writing bool     // someone holds the write side
	reading bool     // someone holds the read side
	err     error    // set when the connection fails: what its callers get (see fail)
	closed  bool     // fail has closed the socket (err may be set before: see failOpen)
	// Idle watch (watchIdle): calls pushed so far, as counted by push and
	// as last seen by the watchdog, and whether the drainer was given the
	// read side to watch an idle connection.
	pushes, seen uint64
	watching     bool // until the drainer's wait on the idle socket ends
	// Where the last writes ended (marks[nmarks-1] the latest; see
	// sendState).
	marks  [sendMarks]sendMark
	nmarks uint64

	// The write side's holder's: the chunks of a write, for writev.
	ws struct {
		iov  net.Buffers
		iovs [][]byte
	}

	// The read side's holder's; the hand-offs (a channel send to the next
	// leader or the drainer) order its accesses.
	rs struct {
		r *resp.Reader // set by startConn; its buffer is the holder's
		// The calls taken from queue whose replies come next, batch[i]
		// first.
		batch []*call
		i     int
		// A leading caller waiting, with a context that can end, for its
		// reply to be whole in the buffer (never while a reply is parsed;
		// see awaitWhole).
		wait interrupter
	}

	// mu guards wait: the call whose reply the drainer waits for, with
	// nothing buffered (see drainFor).
	drainer struct {
		mu   sync.Mutex
		wait *call
	}

	// Callers waiting for room under MaxPending sleep on ch, which the
	// reader closes (and mu's holder replaces) when replies free pending
	// slots while waiters is not zero.
	room struct {
		waiters atomic.Int32
		mu      sync.Mutex
		ch      chan struct{}
	}

	// Atomics, last so that they share no cache line with mu and the
	// fields it guards: broken, set once by fail (under mu) and read as
	// callers route; the others written on every call, by callers and by
	// the write and read sides.
	broken  atomic.Bool
	pending atomic.Int64 // commands enqueued and not yet answered

	// The sizes of c's calls (see depthCap): bytes written (by the write
	// side) and read, and calls answered (by the read side).
	sizes struct{ tx, rx, answered atomic.Int64 }

	// What the watchdog looks at (see silence): progress, which counts
	// the bytes received and the replies answered, and the context
	// deadline of the call whose reply comes next (Unix nanoseconds, 0 for
	// none), published by the read side as it reaches each call.
	live struct{ progress, headDeadline atomic.Int64 }

	// now writes to the socket without waiting (see writeSome); nil when
	// it cannot (TLS). Set by startConn, then used by the write side's
	// holder; last, so that it moves none of the fields above.
	now *nowWriter
}

var errUnsolicited = errors.New("reply with no command waiting for it")

func (n *Node) startConn(nc net.Conn, slot int) *muxConn {
	c := &muxConn{
		node:     n,
		slot:     slot,
		nc:       nc,
		quit:     make(chan struct{}),
		writeSig: make(chan struct{}, 1),
		drainSig: make(chan struct{}, 1),
	}
	size := laneReadBuffer
	if slot >= n.lanes {
		size = bulkReadBuffer
	}
	c.rs.r = resp.NewReader(progressReader{c}, size)
	c.now = newNowWriter(nc)
	if c.acks = dial.AcksOf(nc); c.acks != (dial.Acks{}) {
		c.ackBase, _, _ = c.acks.Read()
	}
	c.out.cur = c.chunk()
	n.wg.Add(2)
	go c.writeLoop()
	go c.drainLoop()
	return c
}

// The read buffer of a lane, and of a connection for big values: a
// leading caller reads its reply itself only when it fits whole in the
// buffer (see awaitWhole), so a lane's holds a value of 32 KiB with its
// header; the connections for big values get the replies of SETs.
const (
	laneReadBuffer = 64 << 10
	bulkReadBuffer = 16 << 10
)

// progressReader counts the bytes read from a connection: the watchdog's
// sign of life, and a part of the depth a lane's pipeline may reach (see
// depthCap); two atomic adds per read system call.
type progressReader struct{ c *muxConn }

func (p progressReader) Read(b []byte) (int, error) {
	n, err := p.c.nc.Read(b)
	p.c.live.progress.Add(int64(n))
	p.c.sizes.rx.Add(int64(n))
	return n, err
}

// depthCap is the most calls in flight on c for a caller to join its
// pipeline rather than a less loaded lane's (see pickLane): laneTxBytes
// of requests or laneRxBytes of replies, whichever comes first, at the
// sizes of c's calls so far (bytes sent and received per call answered).
func (c *muxConn) depthCap() int64 {
	calls := c.sizes.answered.Load()
	if calls < 16 {
		return laneTxBytes // too few to tell: as for calls of a byte
	}
	tx, rx := max(c.sizes.tx.Load()/calls, 1), max(c.sizes.rx.Load()/calls, 1)
	return max(min(laneTxBytes/tx, laneRxBytes/rx), 1)
}

// The bytes in flight on a lane (see depthCap) beyond which a caller
// takes another. A Redis server reads 16 KiB of a connection's requests
// (PROTO_IOBUF_LEN) and writes up to 64 KiB of its replies
// (NET_MAX_WRITES_PER_EVENT) per turn of its event loop. Requests are
// capped at four such reads: another turn on the same connection costs
// the server and the client less than another connection's batches,
// each a write and a read more on both sides — at 1000 goroutines,
// against a cap of one read, 1.17x SET-then-GET/s and 1.16x SET/s (12
// alternating rounds; docs/PERFORMANCE.md, "The depth cap"). Replies are
// capped at half a turn's writes: a GET of 64 B then stays near the depth
// it had (about 460), where a deeper one measured 0.82–0.98x, and big
// replies are read by more lanes' drainers side by side.
const (
	laneTxBytes = 64 << 10
	laneRxBytes = 32 << 10
)

// reserve counts one more command on c and reports whether it fits under
// limit; waitRoom is the slow path when it does not.
func (c *muxConn) reserve(limit int64) bool {
	return c.pending.Add(1) <= limit
}

// release gives back n pending slots of calls answered, counts them as
// progress (in that order: see silence.look), and wakes the callers
// waiting for room, if any.
func (c *muxConn) release(n int64) {
	c.pending.Add(-n)
	c.sizes.answered.Add(n)
	c.live.progress.Add(n)
	c.wakeWaiters()
}

// unreserve gives back the pending slot of a call that was not queued on
// c after all: nothing answered, no progress.
func (c *muxConn) unreserve() {
	c.pending.Add(-1)
	c.wakeWaiters()
}

// wakeWaiters wakes the callers waiting for room, if any.
func (c *muxConn) wakeWaiters() {
	if c.room.waiters.Load() > 0 {
		c.room.mu.Lock()
		if c.room.ch != nil {
			close(c.room.ch)
			c.room.ch = nil
		}
		c.room.mu.Unlock()
	}
}

// waitRoom waits, within ctx, for a pending slot of a full connection; the
// caller's failed attempt is still counted. Each attempt is made holding
// the room channel of that moment, so a release after a failed attempt
// wakes the waiter; a waiter whose undo shows room (two attempts crossed)
// retries at once instead of sleeping, so no freed slot is left unclaimed.
func (c *muxConn) waitRoom(ctx context.Context, limit int64) error {
	c.room.waiters.Add(1)
	defer c.room.waiters.Add(-1)
	c.pending.Add(-1)
	for {
		c.room.mu.Lock()
		if c.room.ch == nil {
			c.room.ch = make(chan struct{})
		}
		room := c.room.ch
		c.room.mu.Unlock()
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

// lockForEnqueue locks c for a caller about to encode a command into
// c.out.cur. It fails when the connection is broken.
func (c *muxConn) lockForEnqueue() error {
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		if !c.closed {
			// Failed, but left open to its read side (see failOpen): the
			// call goes to the slot's next connection, as from a retired
			// one.
			err = errRetired
		}
		c.mu.Unlock()
		c.unreserve()
		return err
	}
	return nil
}

// push queues cl behind the command just encoded into c.out, takes the
// read side for cl when it is free (cl leads when its caller can: lead;
// otherwise the drainer reads for it), unlocks, and writes when the write
// side is free. It reports whether cl leads from now on: its caller must
// then read the reply itself (await with leads set).
func (c *muxConn) push(cl *call, commands int64, lead bool) (leads bool) {
	cl.conn = c
	// When cl's reply is the next to come and no reader has reached it,
	// the watchdog must judge it by cl's deadline, not by the last one
	// published (an answered call's, perhaps an hour away).
	switch {
	case !c.reading:
		c.publishHead(cl) // cl's caller, or the drainer, reads next
	case c.watching && len(c.queue) == 0:
		c.drainFor(cl) // the drainer waits on the idle socket
	}
	c.queue = append(c.queue, cl)
	c.out.count += commands
	c.pushes++
	c.seal()
	drain := false
	if !c.reading {
		c.reading = true
		if lead {
			cl.state.Store(callLeading)
			leads = true
		} else {
			drain = true
		}
	}
	write, some, handOff := !c.writing, false, false
	switch {
	case !write:
	case c.busy():
		// The writer goroutine batches better under load.
		write, handOff = false, true
	case len(c.out.full) > 0:
		// A write of more than a chunk (a big value, a slow link) could
		// keep this caller past its context, which a write cannot heed:
		// the caller writes what the socket takes without waiting, and
		// leaves the rest to the writer goroutine (writeSome); where
		// the socket cannot be written that way (TLS), all of it.
		write, some, handOff = false, c.now != nil, c.now == nil
	}
	c.writing = true
	c.mu.Unlock()
	switch {
	case write:
		c.writeOnce()
	case some:
		c.writeSome()
	}
	if handOff {
		signal(c.writeSig)
	}
	if drain {
		signal(c.drainSig)
	}
	return leads
}

// directMax is the most commands in flight on a connection for callers
// to write and read for themselves. Beyond it the writer goroutine and the
// drainer keep the write and read sides, as a dedicated writer and reader
// would: a hand-off per call then costs more than it saves, and batches
// grow larger on goroutines that stay busy.
const directMax = 2

// busy reports whether more than directMax commands are in flight.
func (c *muxConn) busy() bool { return c.pending.Load() > directMax }

// failure returns the error the callers of a failed connection get.
func (c *muxConn) failure() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// fail marks c broken, closes it and fails every queued call: with
// backend.ErrClosed when the client closes it, otherwise with backend.ErrConnection
// wrapping err — or with the failure failOpen recorded first. The calls
// the read side has taken are failed by its holder, whose next read
// errors (failRead); when nobody reads, the drainer is woken to exit.
func (c *muxConn) fail(err error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	switch {
	case c.err == nil:
		c.broke(err)
	case errors.Is(err, backend.ErrClosed):
		c.err = err // the client closes it: the calls still queued fail so (see Node.Close)
	}
	err = c.err
	q := c.queue
	c.queue = nil
	idle := !c.reading
	c.mu.Unlock()
	close(c.quit)
	c.nc.Close()
	for _, cl := range q {
		cl.fail = err
		c.node.calls.deliver(cl)
	}
	if idle {
		signal(c.drainSig)
	}
}

// broke records err as c's failure, which its callers get: backend.ErrClosed
// when the client closes it, otherwise backend.ErrConnection wrapping err.
// No call is queued on c from then on. Under mu.
func (c *muxConn) broke(err error) {
	if !errors.Is(err, backend.ErrClosed) {
		err = failure.ConnError(c.node.addr, err)
		c.node.counts.broken.Add(1)
	}
	c.err = err
	c.broken.Store(true)
}

// failOpen fails c with err for new calls — they go to the slot's next
// connection (see lockForEnqueue) — but leaves its socket to the read
// side's holder, which reads the replies of the calls already queued (the
// writer writes their requests meanwhile) and closes it once it has
// delivered them all (nextBatch) or meets the end of the stream
// (failRead), which fails the rest. Meanwhile finish closes it when its
// awaited reply is overdue under the rule of Config.ReadTimeout, when the
// node closes, and after linger unless it is zero. It does nothing, and
// reports false, when c failed already or nobody reads.
func (c *muxConn) failOpen(err error, linger time.Duration) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil || !c.reading {
		return false
	}
	c.broke(err)
	// c's reader and writer are counted in wg until it is closed: the
	// count is not zero here, and Close may be waiting.
	c.node.wg.Add(1)
	go c.node.finish(c, linger)
	return true
}

// overdue reports whether the reply the read side awaits is late under
// the rule of Config.ReadTimeout, given that c has been silent since
// quiet (see silence): ReadTimeout after quiet (no earlier than the call
// was sent), or the call's context deadline when that is later and its
// caller still waits. A head call with a short deadline thus never fails
// the connection sooner than ReadTimeout would: the calls behind it may
// allow longer. One whose caller left (its context was cancelled) no
// longer holds the connection: nobody waits for its reply, and the calls
// behind it may not allow as long.
func (c *muxConn) overdue(now, quiet time.Time, timeout time.Duration) bool {
	if now.Before(quiet.Add(timeout)) {
		return false
	}
	d := c.live.headDeadline.Load()
	return d == 0 || now.UnixNano() >= d || c.drainingAbandoned()
}

// drainFor records that the drainer waits for the first byte of cl's
// reply (nil: it no longer does) and publishes cl's deadline, under drainer.mu:
// a caller that leaves meanwhile can then be seen to have left (see
// drainingAbandoned). A call is recycled only once its reply is read,
// after the drainer's wait, so the call recorded is never one reused.
func (c *muxConn) drainFor(cl *call) {
	c.drainer.mu.Lock()
	c.drainer.wait = cl
	if cl != nil {
		c.publishHead(cl)
	}
	c.drainer.mu.Unlock()
}

// drainingAbandoned reports whether the drainer waits for the reply of a
// call whose caller has left.
func (c *muxConn) drainingAbandoned() bool {
	c.drainer.mu.Lock()
	defer c.drainer.mu.Unlock()
	return c.drainer.wait != nil && c.drainer.wait.state.Load() == callAbandoned
}
