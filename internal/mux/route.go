package mux

import (
	"context"
	"time"

	"github.com/redisx-go/kit/backend"
	"github.com/redisx-go/kit/internal/failure"
)

// Routing and the order of a key's commands.
//
// The shared connections of a node are its lanes. With Options.Conns set,
// there are that many, and a key's commands take its own (FNV-1a of the
// key), so that they stay in order. Otherwise (adaptive) there are up to
// Options.Lanes of them, dialled when every open one is busy. While the
// node is calm (fewer calls in flight than lanes; see calm), a command
// takes the first lane with nothing in flight, whose caller then writes
// and reads its own reply as a pooled connection's would; otherwise it
// joins a pipeline (the busiest lane below its depth cap, an idle lane
// only when every busy one is that deep). The load — the callers inside a
// call on the node, per lane it may have (Options.Lanes, open or not; see
// loadOf) — decides how a lane's writer writes: up to poolLoad, commands
// as they come; above it, gathered batches, so that batching grows with
// load. A lane left idle for laneIdle is closed (lane 0 stays).
//
// A SET of a big value takes one of bulkConns connections of their own,
// after the lanes, dialled as the load needs them (pickBulk): the server
// reads a connection's requests 16 KiB at a time, once per turn of its
// event loop, so big values queued on one connection wait for each other
// and delay the small commands behind them; spread over a few connections
// they are read side by side.
//
// A caller's command returns once its reply is read, before its next one
// is sent, so a caller's commands stay in order — unless one returns
// sooner, its context ended: the server may apply it yet, after commands
// sent later on another connection. The rule: while a call whose caller
// left is unanswered, every command on one of its keys goes to that
// call's connection, behind it (pins records which). A command on several
// keys (Del, MGet, MSet, Do by its key positions, a pipeline) obeys it for
// each of its keys; when they are pinned to two connections or more, it
// waits, within its context, until they are not. Nobody else waits, and
// only those keys change their route, until those replies are read. (Not
// covered: a connection that failed, or was replaced for its age, while
// such a call was on its way; and a command whose keys cannot be told,
// such as a script that declares none.)

// route returns the connection for cl, whose keys are set (none: a
// keyless command); a SET of a big value when big. A lane found with
// nothing in flight is returned claimed: its pending count already holds
// cl's command (see enqueue), so that no other caller takes it meanwhile.
// pinned says the connection is the one the rule above imposes.
func (n *Node) route(ctx context.Context, cl *call, big bool) (i int, claimed *muxConn, pinned bool, err error) {
	for {
		i, ok := n.pinned(cl)
		switch {
		case ok && i >= 0:
			return i, nil, true, nil
		case ok:
			i, claimed := n.free(cl, big)
			return i, claimed, false, nil
		}
		if err := n.waitPinned(ctx, cl); err != nil {
			return 0, nil, false, err
		}
	}
}

// pinned returns the connection cl's keys are pinned to under the rule
// above (-1: none), and false when they are pinned to two or more.
func (n *Node) pinned(cl *call) (int, bool) {
	if !n.pins.any() {
		return -1, true
	}
	found, ok := -1, true
	cl.eachKey(func(k string) bool {
		i, mixed := n.pins.of(k)
		switch {
		case mixed, i >= 0 && found >= 0 && i != found:
			ok = false
			return false
		case i >= 0:
			found = i
		}
		return true
	})
	return found, ok
}

// free is the connection for cl when none of its keys is pinned, and the
// lane claimed for it, if any (see pickLane).
func (n *Node) free(cl *call, big bool) (int, *muxConn) {
	switch {
	case big:
		return n.pickBulk()
	case n.adaptive:
		return n.pickLane()
	case n.lanes == 1:
		return 0, nil
	case cl.hasKey:
		return n.sharedRoute(cl.key), nil
	}
	k, _ := cl.firstKey()
	return n.sharedRoute(k), nil
}

// waitPinned waits, within ctx, until cl's keys are pinned to one
// connection at most: for replies to calls whose callers left to be
// read, or their connections to fail. Rare enough to poll.
func (n *Node) waitPinned(ctx context.Context, cl *call) error {
	wait := 200 * time.Microsecond
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return failure.CtxErr(n.addr, false, ctx.Err())
		case <-n.stop:
			return backend.ErrClosed
		case <-t.C:
		}
		if _, ok := n.pinned(cl); ok {
			return nil
		}
		wait = min(2*wait, 10*time.Millisecond)
		t.Reset(wait)
	}
}

// pickLane returns the lane for a command free to take any (adaptive).
// While the node is calm (see calm), the first open lane with nothing in
// flight, claimed (its pending count raised from 0 to 1, which enqueue
// then does not do again): a caller of its own there writes and reads
// its reply as a pooled connection's would. Under load, pipelining
// costs the server and the client fewer system calls per command than a
// connection per caller, so the caller joins the busiest lane whose
// pipeline is not as deep as its depthCap, unclaimed, so that batches
// grow with load as on one connection; it takes an idle lane (claimed)
// only when every busy one is that deep, where the server would make the
// next calls wait a turn; when every lane is that deep, the least
// loaded. Another lane is dialled in the background when every
// open one is busy and there is room for one.
func (n *Node) pickLane() (int, *muxConn) {
	fill, fillLoad := -1, int64(-1)
	least, leastLoad := 0, int64(-1)
	idle, open := -1, 0
	var inFlight int64
	var idleConn *muxConn
	for i := range n.lanes {
		c := n.slots[i].cur.Load()
		if c == nil || c.broken.Load() {
			continue
		}
		open++
		p := c.pending.Load()
		inFlight += max(p, 0)
		if p <= 0 {
			if idle < 0 {
				idle, idleConn = i, c
			}
			continue
		}
		if p > fillLoad && p < c.depthCap() {
			fill, fillLoad = i, p
		}
		if leastLoad < 0 || p < leastLoad {
			least, leastLoad = i, p
		}
	}
	if idle < 0 && open < n.lanes {
		n.grow()
	}
	if calm := n.calm(inFlight); idle >= 0 && (calm || fill < 0) {
		if idleConn.pending.CompareAndSwap(0, 1) {
			return idle, idleConn
		}
	}
	switch {
	case fill >= 0:
		return fill, nil
	case leastLoad >= 0:
		return least, nil
	case idle >= 0:
		return idle, nil // claimed by another meanwhile: join it
	}
	return 0, nil
}

// calm reports whether the node's load is a pool's, for pickLane: fewer
// calls in flight than it has lanes (inFlight, the others'), and so for
// the last calmPicks picks. Under load, the calls in flight dip whenever
// a batch of replies is read and before their callers send again; a
// caller taking an idle lane then would pay a write and a read of its own
// (with the server's) for one command, where joining the busy lane's
// pipeline costs nearly nothing. Writes the shared count only when the
// load changes sides and on the calmPicks picks after.
func (n *Node) calm(inFlight int64) bool {
	if inFlight >= int64(n.lanes) {
		if n.routing.calmPicks.Load() != 0 {
			n.routing.calmPicks.Store(0)
		}
		return false
	}
	if c := n.routing.calmPicks.Load(); c < calmPicks {
		n.routing.calmPicks.Add(1)
		return false
	}
	return true
}

// calmPicks is how many picks in a row must find fewer calls in flight
// than lanes for the node to be used as a pool again (see calm).
const calmPicks = 64

// loadOf returns the load of an adaptive node: its callers inside a call
// (from routing to return), per lane, rounded up. Unlike the calls in
// flight, it counts the callers whose replies were read and who have not
// run yet: on a busy machine, most of them.
func (n *Node) loadOf() int64 {
	l := int64(n.lanes)
	return (n.routing.callers.Load() + l - 1) / l
}

// gathers reports whether a lane's writer waits for the callers about to
// enqueue before it writes (see writeLoop): on a node of fixed
// connections always, on an adaptive one above gatherAbove (poolLoad).
// Below it, the server has time to spare: a wait leaves it idle while the
// client hands out the last replies, and writing each command as it
// comes keeps the server busy; under load, a write per batch spares
// system calls the client and the server are short of.
func (n *Node) gathers() bool {
	return !n.adaptive || n.loadOf() > n.gatherAbove
}

// poolLoad is the load (callers per lane, see loadOf) above which an
// adaptive node's writers gather batches (see gathers). At 9 to 12
// callers on the default 4 lanes (load 3), gathering leaves one batch in
// flight at a time, and the server and the client wait for each other in
// turn; writing commands as they come keeps a second batch going:
// against a threshold of 2, 1.12x GET/s at 10 goroutines (10 of 12
// alternating rounds ahead), 1.03x at 12, while at 20 goroutines writing
// as they come measured 0.71x of gathering (docs/PERFORMANCE.md, "The
// load rule"). Spreading the callers over the lanes instead, each
// command written as it came, up to 4 per lane, measured 0.45–0.63x on a
// quiet machine (a write and a read per GET, against a quarter of each;
// "Alternatives measured and not kept").
const poolLoad = 3

// sharedRoute is key's lane when lanes are fixed (Options.Conns).
func (n *Node) sharedRoute(key string) int {
	if n.lanes == 1 {
		return 0
	}
	return int(fnv(key) % uint32(n.lanes))
}

// pickBulk returns the connection for a SET of a big value, as a pool
// would lend one: the first with nothing in flight, claimed (as pickLane
// claims a lane); else one not dialled yet, which the caller dials, so
// that they open as the load needs them (but for growBackoff after such
// a dial failed, when one is open); else the least loaded. (A key needs
// no connection of its own: a caller's commands return in turn, and the
// pins hold a key's commands behind an abandoned call.)
func (n *Node) pickBulk() (int, *muxConn) {
	least, leastLoad, undialled := -1, int64(0), -1
	for i := n.lanes; i < len(n.slots); i++ {
		c := n.slots[i].cur.Load()
		if c == nil || c.broken.Load() {
			if undialled < 0 {
				undialled = i
			}
			continue
		}
		p := c.pending.Load()
		if p == 0 && c.pending.CompareAndSwap(0, 1) {
			return i, c
		}
		if least < 0 || p < leastLoad {
			least, leastLoad = i, p
		}
	}
	if undialled >= 0 && (least < 0 || time.Now().UnixNano() >= n.routing.bulkAfter.Load()) {
		return undialled, nil
	}
	return least, nil
}

// bulkConns is the number of connections per node for big values; bigValue
// the size from which a value is big.
const (
	bulkConns = 4
	bigValue  = 16 << 10
)

func fnv(key string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(key); i++ {
		h ^= uint32(key[i])
		h *= 16777619
	}
	return h
}
