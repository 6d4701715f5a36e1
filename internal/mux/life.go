package mux

import (
	"context"
	"fmt"
	"time"

	"github.com/redisx-go/kit/backend"
	"github.com/redisx-go/kit/internal/dial"
)

// The life of a node's connections: dialled on demand, one dial per slot;
// redialled after a failure; retired for their age; failed by the
// watchdog when a reply is overdue.

// conn returns slot i's live connection, dialling one if needed. Only one
// dial runs per slot, so a dead server does not cause a dial storm; it
// runs on its own goroutine under the node's context and DialTimeout, not
// under any caller's context, and every caller — the one that started it
// included — waits for it within its own context: a caller with a short
// deadline gives up alone and leaves the dial to the others.
func (n *Node) conn(ctx context.Context, i int) (*muxConn, error) {
	s := &n.slots[i]
	if c := s.cur.Load(); c != nil && !c.broken.Load() {
		return c, nil
	}
	s.mu.Lock()
	if c := s.cur.Load(); c != nil && !c.broken.Load() {
		s.mu.Unlock()
		return c, nil
	}
	if n.closed.Load() {
		s.mu.Unlock()
		return nil, backend.ErrClosed
	}
	d := n.dial(s)
	s.mu.Unlock()
	select {
	case <-d.done:
		return d.c, d.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// dial returns slot s's dial in progress, starting one if none is. s.mu
// is held.
func (n *Node) dial(s *muxSlot) *muxDial {
	if s.dialing == nil {
		s.dialing = &muxDial{done: make(chan struct{})}
		n.wg.Add(1) // under s.mu, before Close (which takes s.mu) can wait
		go n.redial(s, s.dialing)
	}
	return s.dialing
}

// redial opens slot s's connection and reports it to d's waiters. The
// connection it replaces, when still alive (a replacement for age), is
// retired.
func (n *Node) redial(s *muxSlot, d *muxDial) {
	defer n.wg.Done()
	nc, err := dial.DialData(n.life, &n.cfg, n.addr)
	n.counts.dials.Add(1)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dialing = nil
	switch {
	case n.closed.Load():
		if nc != nil {
			nc.Close()
		}
		err = backend.ErrClosed
	case err != nil:
		n.counts.dialErrors.Add(1)
		if s.i >= n.lanes {
			n.routing.bulkAfter.Store(time.Now().Add(growBackoff).UnixNano())
		}
		if c := s.cur.Load(); c != nil && !c.broken.Load() {
			// A replacement for age failed: the old connection serves on.
			n.age(s, c, min(n.cfg.MaxConnAge, time.Second))
		}
	default:
		d.c = n.startConn(nc, s.i)
		if old := s.cur.Swap(d.c); old != nil && !old.broken.Load() {
			n.wg.Add(1)
			go n.retire(old)
		}
		n.age(s, d.c, n.cfg.MaxConnAge)
	}
	d.err = err
	close(d.done)
	if d.grow {
		n.grown(err)
	}
}

// age arranges, when MaxConnAge is set, for slot s's connection c to be
// replaced after d: a timer, so that a call pays nothing for the check.
// s.mu is held.
func (n *Node) age(s *muxSlot, c *muxConn, d time.Duration) {
	if n.cfg.MaxConnAge <= 0 {
		return
	}
	if s.aging != nil {
		s.aging.Stop()
	}
	s.aging = time.AfterFunc(d, func() { n.replace(s, c) })
}

// replace starts the dial of a replacement for c, slot s's connection,
// unless c is no longer the slot's or a dial already runs. Callers keep
// using c meanwhile: the dial is theirs only if c breaks.
func (n *Node) replace(s *muxSlot, c *muxConn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n.closed.Load() || s.cur.Load() != c || c.broken.Load() || s.dialing != nil {
		return
	}
	n.dial(s)
}

// errRetired is what callers who took a connection just as it was
// retired get from it; enqueue then takes the slot's new connection. It
// wraps backend.ErrClosed so that the connection's failure is not counted as a
// broken connection.
var errRetired = fmt.Errorf("%w: connection retired (for its age, or idle)", backend.ErrClosed)

// retiredPending is the pending count of a retired connection: far above
// any MaxPending, so that a caller still holding the connection cannot
// reserve room on it (it waits for room, and the close wakes it).
const retiredPending = 1 << 62

// retire closes c, replaced for its age, once no call is in flight on it:
// when its pending count is zero, which retire swaps for retiredPending
// in one step, so that no call can slip in between the check and the
// close. Until then it applies the ReadTimeout rule the watchdog applies
// to current connections, and Close fails c's calls with backend.ErrClosed.
func (n *Node) retire(c *muxConn) {
	defer n.wg.Done()
	timeout := n.cfg.ReadTimeout
	var s silence
	wait := time.Millisecond
	t := time.NewTimer(wait)
	defer t.Stop()
	for !c.pending.CompareAndSwap(0, retiredPending) {
		if c.broken.Load() {
			return
		}
		if timeout > 0 {
			if overdue, quiet := s.look(c, timeout); overdue {
				c.fail(s.failure(quiet))
				return
			}
		}
		select {
		case <-n.stop:
			c.fail(backend.ErrClosed)
			return
		case <-t.C:
		}
		wait = min(2*wait, 50*time.Millisecond)
		t.Reset(wait)
	}
	c.fail(errRetired)
}

// finish closes c, failed but left open to its read side (see failOpen),
// when the read side has not closed it first: at once when the node
// closes (Close closes no other way a connection its slot no longer
// holds), when its awaited reply is overdue under the rule of
// Config.ReadTimeout (see silence; the watchdog looks only at its slots'
// current connections), and after linger when that is not zero. It
// returns once c is closed.
func (n *Node) finish(c *muxConn, linger time.Duration) {
	defer n.wg.Done()
	var expired <-chan time.Time
	if linger > 0 {
		t := time.NewTimer(linger)
		defer t.Stop()
		expired = t.C
	}
	timeout := n.cfg.ReadTimeout
	var tick <-chan time.Time
	if timeout > 0 {
		t := time.NewTicker(max(timeout/4, 10*time.Millisecond))
		defer t.Stop()
		tick = t.C
	}
	var s silence
	for {
		select {
		case <-c.quit:
			return
		case <-n.stop:
			c.fail(backend.ErrClosed)
			return
		case <-expired:
			c.fail(c.failure())
			return
		case <-tick:
			if overdue, quiet := s.look(c, timeout); overdue {
				c.fail(s.failure(quiet))
				return
			}
		}
	}
}

// watchdog fails a connection whose awaited reply is overdue (see
// silence.look) while nothing at all arrives: a hung or unreachable
// server is noticed even by callers without a deadline. It looks every
// quarter of the read timeout, so a late reply is noticed within about
// half a read timeout more. It also has the drainer watch a connection
// that stayed idle for a whole tick (see muxConn.watchIdle), so that a
// server closing it is noticed before the next call, and closes an
// adaptive lane that stayed idle for laneIdle (see closeIdle). A negative timeout:
// no overdue replies, idle connections watched every second.
//
// A connection failed for its silence takes with it the node's idle
// connections that have received nothing since that silence began (see
// closeUnheard): they were opened before the peer or the path went quiet
// and nothing shows they survived it, so a caller retrying the failed
// call must not find one and wait a read timeout again — a new
// connection is dialled instead.
func (n *Node) watchdog(timeout time.Duration) {
	defer n.wg.Done()
	tick := time.Second
	if timeout > 0 {
		tick = max(timeout/4, 10*time.Millisecond)
	}
	t := time.NewTicker(tick)
	defer t.Stop()
	last := make([]silence, len(n.slots))
	idleSince := make([]time.Time, len(n.slots))
	lastHeard := make([]heard, len(n.slots))
	for {
		select {
		case <-n.stop:
			return
		case <-t.C:
			var silent []*muxConn
			var silentSince time.Time // the earliest of their silences
			var why []error
			for i := range n.slots {
				c := n.slots[i].cur.Load()
				s := &last[i]
				if c == nil || c.broken.Load() {
					*s = silence{}
					idleSince[i] = time.Time{}
					lastHeard[i] = heard{}
					continue
				}
				lastHeard[i].look(c)
				switch {
				case !c.watchIdle():
					idleSince[i] = time.Time{}
				case !n.adaptive || i == 0 || i >= n.lanes:
				case idleSince[i].IsZero():
					idleSince[i] = time.Now()
				case time.Since(idleSince[i]) >= n.laneIdle:
					idleSince[i] = time.Time{}
					n.closeIdle(i, c)
					continue
				}
				if timeout <= 0 {
					continue
				}
				if overdue, quiet := s.look(c, timeout); overdue {
					if silentSince.IsZero() || s.since.Before(silentSince) {
						silentSince = s.since
					}
					silent = append(silent, c)
					why = append(why, s.failure(quiet))
				}
			}
			if len(silent) > 0 {
				// First the unheard ones, so that no caller told of the
				// failure takes one. A connection heard in the tick the
				// silence was first seen may have been heard before it
				// began: half a tick of margin counts it as unheard.
				n.closeUnheard(lastHeard, silentSince.Add(tick/2))
				for j, c := range silent {
					c.fail(why[j])
				}
			}
		}
	}
}

// heard is when the watchdog last saw a connection receive something: a
// change of its progress from one tick to the next (or its first tick).
type heard struct {
	c        *muxConn
	progress int64
	at       time.Time
}

func (h *heard) look(c *muxConn) {
	if p := c.live.progress.Load(); h.c != c || h.progress != p {
		*h = heard{c: c, progress: p, at: time.Now()}
	}
}

// closeUnheard closes every connection of the node with nothing in flight
// (see closeIdle) that was last heard before cutoff: when one connection
// went silent, nothing shows that those still reach the server.
// Connections with calls in flight are left to the ReadTimeout rule,
// which their calls are owed.
func (n *Node) closeUnheard(heard []heard, cutoff time.Time) {
	for i := range n.slots {
		c := n.slots[i].cur.Load()
		if c != nil && !c.broken.Load() && heard[i].c == c && heard[i].at.Before(cutoff) {
			n.closeIdle(i, c)
		}
	}
}

// silence is what the ReadTimeout rule times on one connection: since
// when, as first seen, it has made no progress (no byte received, no
// reply answered, and while the request whose reply comes next is still
// on its way, no byte of it acknowledged) while calls were pending.
type silence struct {
	c        *muxConn
	progress int64
	sent     bool  // the request whose reply comes next was sent whole
	acked    int64 // while it was not: the bytes the peer had acknowledged
	since    time.Time
}

// look updates s from c now, and reports whether the reply c awaits is
// overdue (see muxConn.overdue), with how long c has been silent. A
// silence starts over when c makes progress, and when it is a different
// connection or has nothing pending.
//
// It must never start before the call whose reply comes next was sent,
// or that call could fail early. So progress is read before pending (a
// release lowers pending before it counts the reply as progress: a look
// that sees the reply counted sees pending without it), and the clock
// after both. Never from a tick's value: that is when the tick was due,
// and a goroutine that runs late receives it late (CI saw a call fail
// after 499.97 ms for a ReadTimeout of 500 ms).
//
// Sent means written whole, and acknowledged by the peer where the socket
// tells (see sendState): a big request on a thin link may take longer to
// send than ReadTimeout, and its reply is not awaited until then. While
// it is being sent on a socket that tells, it must make progress: a peer
// that acknowledges nothing for ReadTimeout (a half-open connection, a
// server that reads nothing) fails the connection as a missing reply
// would. Where nothing tells, a request being written is never overdue:
// WriteTimeout bounds the write.
func (s *silence) look(c *muxConn, timeout time.Duration) (overdue bool, quiet time.Duration) {
	progress := c.live.progress.Load()
	if c.pending.Load() <= 0 {
		*s = silence{}
		return false, 0
	}
	sent, moving, acked := c.sendState()
	if !sent && !moving {
		*s = silence{}
		return false, 0
	}
	now := time.Now()
	if s.c != c || s.progress != progress || s.sent != sent || s.acked != acked {
		*s = silence{c: c, progress: progress, sent: sent, acked: acked, since: now}
		return false, 0
	}
	return c.overdue(now, s.since, timeout), now.Sub(s.since)
}

// failure is the error of a connection found overdue after quiet.
func (s *silence) failure(quiet time.Duration) error {
	if !s.sent {
		return fmt.Errorf("request not acknowledged for %v (ReadTimeout)", quiet.Round(time.Millisecond))
	}
	return fmt.Errorf("no reply for %v (ReadTimeout)", quiet.Round(time.Millisecond))
}
