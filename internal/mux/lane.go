package mux

import (
	"runtime"
	"time"
)

// The adaptive lanes' life (see route.go): dialled in the background when
// every open lane is busy, closed once idle.

// DefaultLanes is the most lanes per node of an adaptive node whose
// Options.Lanes is zero: GOMAXPROCS, at least 4.
func DefaultLanes() int { return max(runtime.GOMAXPROCS(0), 4) }

const (
	// laneIdle is how long a lane other than lane 0 may go without a
	// command before it is closed.
	laneIdle = 30 * time.Second
	// growBackoff is how long after a failed dial no lane is dialled for
	// room: the busy lanes serve meanwhile.
	growBackoff = time.Second
)

// grow dials one more lane, in the background, when none is being
// dialled: the first slot without a live connection. The callers that
// found every lane busy meanwhile join the open ones' pipelines.
func (n *Node) grow() {
	if time.Now().UnixNano() < n.routing.growAfter.Load() || !n.routing.growing.CompareAndSwap(false, true) {
		return
	}
	for i := range n.lanes {
		s := &n.slots[i]
		if c := s.cur.Load(); c != nil && !c.broken.Load() {
			continue
		}
		s.mu.Lock()
		if c := s.cur.Load(); c != nil && !c.broken.Load() {
			s.mu.Unlock() // dialled meanwhile
			continue
		}
		if n.closed.Load() || s.dialing != nil {
			// Closing, or a dial of this lane is under way already.
			s.mu.Unlock()
			break
		}
		n.dial(s).grow = true
		s.mu.Unlock()
		return
	}
	n.routing.growing.Store(false)
}

// grown is the end of grow's dial: another lane may be dialled for room
// from now on, or after growBackoff when this one failed.
func (n *Node) grown(err error) {
	if err != nil {
		n.routing.growAfter.Store(time.Now().Add(growBackoff).UnixNano())
	}
	n.routing.growing.Store(false)
}

// closeIdle closes slot i, whose connection c has had no command for
// laneIdle (a lane other than lane 0) or was not heard from when another
// went silent (closeUnheard), if nothing is in flight on it nor claimed: its
// pending count goes from 0 to retiredPending in one step, so that no
// caller can take it meanwhile (one that loaded it finds no room, then
// errRetired, and picks again; see enqueue), and it leaves its slot.
func (n *Node) closeIdle(i int, c *muxConn) {
	s := &n.slots[i]
	s.mu.Lock()
	if n.closed.Load() || s.cur.Load() != c || s.dialing != nil || !c.pending.CompareAndSwap(0, retiredPending) {
		s.mu.Unlock()
		return
	}
	s.cur.Store(nil)
	if s.aging != nil {
		s.aging.Stop()
		s.aging = nil
	}
	s.mu.Unlock()
	c.fail(errRetired)
}
