// Package mux is the Multiplexed transport: a few auto-pipelined
// connections per node shared by every goroutine. strategy.Multiplexed
// documents it and opens it.
package mux

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redisx-go/kit/backend"
	"github.com/redisx-go/kit/internal/command"
	"github.com/redisx-go/kit/internal/failure"
	"github.com/redisx-go/kit/internal/pool"
	"github.com/redisx-go/kit/internal/transport"
	"github.com/redisx-go/kit/internal/wire"
)

// Options are strategy.Multiplexed's fields, field for field (strategy
// converts one into the other); their docs are strategy's.
type Options struct {
	Conns      int
	Lanes      int
	MaxPending int
	Blocking   int
}

// WithDefaults validates o and fills in the defaults of its zero fields.
func (m Options) WithDefaults() (Options, error) {
	switch {
	case m.Conns < 0 || m.Conns > 1024:
		return m, fmt.Errorf("%w: Multiplexed.Conns %d out of range 0..1024", backend.ErrInvalidArgument, m.Conns)
	case m.Lanes < 0 || m.Lanes > 1024:
		return m, fmt.Errorf("%w: Multiplexed.Lanes %d out of range 0..1024", backend.ErrInvalidArgument, m.Lanes)
	case m.Conns > 0 && m.Lanes > 0:
		return m, fmt.Errorf("%w: Multiplexed.Conns (%d fixed connections) and Lanes (up to %d adaptive ones) exclude each other", backend.ErrInvalidArgument, m.Conns, m.Lanes)
	case m.MaxPending < 0:
		return m, fmt.Errorf("%w: Multiplexed.MaxPending %d is negative", backend.ErrInvalidArgument, m.MaxPending)
	case m.Blocking < 0:
		return m, fmt.Errorf("%w: Multiplexed.Blocking %d is negative", backend.ErrInvalidArgument, m.Blocking)
	}
	if m.Conns == 0 && m.Lanes == 0 {
		m.Lanes = DefaultLanes()
	}
	if m.MaxPending == 0 {
		m.MaxPending = 16384
	}
	if m.Blocking == 0 {
		m.Blocking = 8
	}
	return m, nil
}

// New returns a Node for addr, without connecting.
func New(cfg backend.Config, addr string, o Options) (*Node, error) {
	o, err := o.WithDefaults()
	if err != nil {
		return nil, err
	}
	return newMuxNode(cfg, addr, o), nil
}

// NewNode implements transport.Transport: New.
func (o Options) NewNode(cfg backend.Config, addr string) (transport.Node, error) {
	return transport.AsNode(New(cfg, addr, o))
}

// OpenNode implements transport.Transport: Open.
func (o Options) OpenNode(ctx context.Context, cfg backend.Config, addr string) (transport.Node, error) {
	return transport.AsNode(Open(ctx, cfg, addr, o))
}

// Open returns a Node for addr once every shared connection is dialled.
func Open(ctx context.Context, cfg backend.Config, addr string, o Options) (*Node, error) {
	n, err := New(cfg, addr, o)
	if err != nil {
		return nil, err
	}
	open := n.lanes
	if n.adaptive {
		open = 1 // the others when needed
	}
	for i := range open {
		if _, err := n.conn(ctx, i); err != nil {
			n.Close()
			if err == ctx.Err() {
				// The dial runs on under the node's life, whose Close
				// just ended it: the caller is told whom it waited for.
				err = failure.MarkUnsent(failure.DialEnded(addr, err))
			}
			return nil, err
		}
	}
	return n, nil
}

// Node is the Multiplexed backend of one node.
type Node struct {
	// Set by newMuxNode, then only read (a test may set gatherAbove,
	// laneIdle or refusalWait before the first call).
	cfg  backend.Config
	addr string
	opts Options
	// lanes is the number of lanes: Conns, or at most Lanes when
	// adaptive (see route.go).
	lanes    int
	adaptive bool
	// gatherAbove is the load (see loadOf) above which an adaptive node's
	// writers gather batches: poolLoad (see gathers). BenchmarkMuxLoadRule
	// measures the rule against a node whose writers always gather, -1.
	gatherAbove int64
	laneIdle    time.Duration // an adaptive lane idle this long is closed
	refusalWait time.Duration // see the constant refusalWait

	// What routing reads and updates without a lock, as callers route.
	routing struct {
		// calmPicks counts the picks in a row that found the node calm
		// (see Node.calm), up to calmPicks.
		calmPicks atomic.Int64
		// callers counts the callers inside a call on an adaptive node,
		// from routing to return (see loadOf): whether its lanes' writers
		// gather batches (see gathers). Pipelines sent and awaited apart
		// (send, Send) are not counted.
		callers atomic.Int64
		// The adaptive lanes' growth: a lane is being dialled for room
		// (growing), not before growAfter (Unix ns) after a failed dial.
		growing   atomic.Bool
		growAfter atomic.Int64
		// bulkAfter (Unix ns): after a failed dial of a connection for big
		// values, none is dialled for room before then (see pickBulk).
		bulkAfter atomic.Int64
	}

	// Each guards itself: a slot with its mu and atomics (see muxSlot),
	// the pool of calls, and the ordering rule's record (pins).
	slots []muxSlot // the lanes, then bulkConns connections for big values
	calls callPool
	pins  pins

	// The node's life: Close sets closed, cancels life (dials run under
	// it) and closes stop, then waits for wg: every connection's reader
	// and writer, dials, and the watchdog.
	closed atomic.Bool
	life   context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	stop   chan struct{}

	// The dedicated connections for blocking commands, made once (once
	// guards node and err); open is node once made, for Stats.
	side struct {
		once sync.Once
		node *pool.Node
		err  error
		open atomic.Pointer[pool.Node]
	}

	// Stats' counters.
	counts struct{ dials, dialErrors, broken, flushes, commands atomic.Int64 }
}

type muxSlot struct {
	i       int // its index in Node.slots
	cur     atomic.Pointer[muxConn]
	mu      sync.Mutex
	dialing *muxDial    // non-nil while a dial runs
	aging   *time.Timer // MaxConnAge: starts the replacement of cur
}

// muxDial is one dial of a slot's connection, shared by every caller that
// needs the connection meanwhile.
type muxDial struct {
	done chan struct{} // closed when c or err is set
	c    *muxConn
	err  error
	grow bool // a lane dialled for room (see Node.grow)
}

func newMuxNode(cfg backend.Config, addr string, opts Options) *Node {
	lanes := opts.Conns
	if lanes == 0 {
		lanes = opts.Lanes
	}
	n := &Node{cfg: cfg, addr: addr, opts: opts, lanes: lanes, adaptive: opts.Conns == 0, gatherAbove: poolLoad, laneIdle: laneIdle, refusalWait: refusalWait,
		slots: make([]muxSlot, lanes+bulkConns), stop: make(chan struct{})}
	for i := range n.slots {
		n.slots[i].i = i
	}
	n.routing.calmPicks.Store(calmPicks)
	n.life, n.cancel = context.WithCancel(context.Background())
	n.wg.Add(1)
	go n.watchdog(cfg.ReadTimeout)
	return n
}

// enqueue routes cl, whose keys are set (see route.go), and returns its
// connection locked for encoding, after checking the context, the
// client's state and the pending bound. A connection found broken before
// the command is encoded fails the call with an Unsent error; one retired
// meanwhile is replaced by the slot's new one, or, a lane closed for
// idleness, by another lane. On an error cl is recycled.
func (n *Node) enqueue(ctx context.Context, cl *call, big bool) (*muxConn, error) {
	c, err := n.enqueueTo(ctx, cl, big)
	if err != nil {
		n.calls.put(cl)
	}
	return c, err
}

func (n *Node) enqueueTo(ctx context.Context, cl *call, big bool) (*muxConn, error) {
	i, claimed, pinned, err := n.route(ctx, cl, big)
	if err != nil {
		return nil, err
	}
	// unclaim gives back the claim on a lane not taken after all.
	unclaim := func() {
		if claimed != nil {
			claimed.unreserve()
			claimed = nil
		}
	}
	for {
		if err := ctx.Err(); err != nil {
			unclaim()
			return nil, failure.CtxErr(n.addr, false, err)
		}
		if n.closed.Load() {
			unclaim()
			return nil, backend.ErrClosed
		}
		var c *muxConn
		if n.adaptive && !pinned && i > 0 && i < n.lanes {
			// A lane picked freely: taken as it is, never dialled here (grow
			// does that); one closed for idleness or broken since it was
			// picked is picked again. (Lane 0 is dialled by the callers
			// that need it, as a fixed connection is.)
			if c = n.slots[i].cur.Load(); c == nil || c.broken.Load() {
				unclaim()
				if i, claimed, pinned, err = n.route(ctx, cl, big); err != nil {
					return nil, err
				}
				continue
			}
		} else if c, err = n.conn(ctx, i); err != nil {
			unclaim()
			return nil, failure.CtxErr(n.addr, false, err)
		}
		if c != claimed {
			unclaim()
			if limit := int64(n.opts.MaxPending); !c.reserve(limit) {
				err = c.waitRoom(ctx, limit)
			}
		}
		claimed = nil // counted in c's pending from here on
		if err == nil {
			err = c.lockForEnqueue()
		}
		switch {
		case err == nil:
			return c, nil
		case err == errRetired:
			if n.adaptive && !pinned && i > 0 && i < n.lanes {
				if i, claimed, pinned, err = n.route(ctx, cl, big); err != nil {
					return nil, err
				}
			}
			continue
		case ctx.Err() != nil, errors.Is(err, backend.ErrClosed):
			return nil, failure.CtxErr(n.addr, false, err)
		}
		return nil, failure.MarkUnsent(err)
	}
}

// roundTrip is one command, cl's, whose keys are set: it routes cl,
// encodes the command with enc into its connection's write buffer, queues
// cl for its reply, waits for it within ctx and decodes it into rp (whose
// kind, and for a run of SETs n, say what to expect). It returns the
// context's error, the connection's failure, or rp's reply error wrapped
// with cmd.
func (n *Node) roundTrip(ctx context.Context, cl *call, cmd string, rp *wire.Reply, enc func([]byte) []byte) error {
	return n.roundTripSized(ctx, cl, cmd, rp, 0, enc)
}

// roundTripSized is roundTrip for a command of about size bytes, when that
// is big: it is encoded into a chunk of its own size, and, a SET, sent on
// a connection for big values.
func (n *Node) roundTripSized(ctx context.Context, cl *call, cmd string, rp *wire.Reply, size int, enc func([]byte) []byte) error {
	if n.adaptive {
		n.routing.callers.Add(1)
		defer n.routing.callers.Add(-1)
	}
	c, err := n.enqueue(ctx, cl, size > 0)
	if err != nil {
		return err
	}
	if size > 0 {
		c.fit(size)
	}
	c.out.cur = enc(c.out.cur)
	cl.Reply, cl.lead = *rp, true
	leads := c.push(cl, int64(rp.Count()), true)
	if err := c.await(ctx, cl, leads); err != nil {
		return n.callError(cmd, err)
	}
	*rp = cl.Reply
	n.calls.put(cl)
	return failure.ReplyError(cmd, rp.Err)
}

// keyCall returns a call for a command on key.
func (n *Node) keyCall(ctx context.Context, key string) *call {
	cl := n.calls.get(ctx)
	cl.hasKey, cl.key = true, key
	return cl
}

// keysCall returns a call for a command on keys.
func (n *Node) keysCall(ctx context.Context, keys []string) *call {
	cl := n.calls.get(ctx)
	cl.keys = keys
	return cl
}

// Get implements Backend.
func (n *Node) Get(ctx context.Context, key string) ([]byte, error) {
	rp := wire.Reply{Kind: wire.ReplyBulk}
	if err := n.roundTrip(ctx, n.keyCall(ctx, key), "get", &rp, func(b []byte) []byte { return wire.AppendGet(b, key) }); err != nil {
		return nil, err
	}
	if rp.Val == nil {
		return nil, backend.ErrNotFound
	}
	return rp.Val, nil
}

// Set implements Backend.
func (n *Node) Set(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	rp := wire.Reply{Kind: wire.ReplyOK}
	enc := func(b []byte) []byte { return wire.AppendSet(b, key, value, ttl) }
	if len(value) >= bigValue {
		return n.roundTripSized(ctx, n.keyCall(ctx, key), "set", &rp, len(key)+len(value)+64, enc)
	}
	return n.roundTrip(ctx, n.keyCall(ctx, key), "set", &rp, enc)
}

// Del implements Backend.
func (n *Node) Del(ctx context.Context, keys ...string) (int64, error) {
	if len(keys) == 0 {
		return 0, nil
	}
	rp := wire.Reply{Kind: wire.ReplyInt}
	err := n.roundTrip(ctx, n.keysCall(ctx, keys), "del", &rp, func(b []byte) []byte { return wire.AppendKeys(b, "DEL", keys) })
	return rp.Num, err
}

// MGet implements MultiGetter.
func (n *Node) MGet(ctx context.Context, keys []string) ([][]byte, error) {
	if len(keys) == 0 {
		return [][]byte{}, nil
	}
	rp := wire.Reply{Kind: wire.ReplyBulks, Vals: make([][]byte, len(keys))}
	if err := n.roundTrip(ctx, n.keysCall(ctx, keys), "mget", &rp, func(b []byte) []byte { return wire.AppendKeys(b, "MGET", keys) }); err != nil {
		return nil, err
	}
	return rp.Vals, nil
}

// MSet implements MultiSetter: one MSET without a ttl, otherwise one
// pipelined SET … PX per pair, written together.
func (n *Node) MSet(ctx context.Context, kv map[string][]byte, ttl time.Duration) error {
	if len(kv) == 0 {
		return nil
	}
	cl := n.calls.get(ctx)
	cl.kv = kv
	rp := wire.Reply{Kind: wire.ReplyOK}
	return n.roundTrip(ctx, cl, "mset", &rp, func(b []byte) []byte {
		b, rp.N = wire.AppendMSet(b, kv, ttl)
		return b
	})
}

// Do implements Doer. Blocking commands run on a dedicated connection.
func (n *Node) Do(ctx context.Context, args ...any) (any, error) {
	class, err := command.CheckCommand(args)
	if err != nil {
		return nil, err
	}
	if class == command.ClassBlocking {
		side, err := n.sidePool()
		if err != nil {
			return nil, err
		}
		return side.Do(ctx, args...)
	}
	cl := n.calls.get(ctx)
	cl.args = args
	rp := wire.Reply{Kind: wire.ReplyAny}
	if err := n.roundTrip(ctx, cl, command.ArgName(args, 0), &rp, func(b []byte) []byte {
		b, _ = wire.AppendArgs(b, args) // cannot fail: command.CheckCommand refused what it cannot encode
		return b
	}); err != nil {
		return nil, err
	}
	return rp.Any, nil
}

func (n *Node) sidePool() (*pool.Node, error) {
	n.side.once.Do(func() {
		cfg := n.cfg
		cfg.OnConnect = nil // blocking commands and transactions: no read a cache keeps
		n.side.node, n.side.err = pool.New(cfg, n.addr, pool.Options{Size: n.opts.Blocking})
		n.side.open.Store(n.side.node)
	})
	if n.closed.Load() {
		return nil, backend.ErrClosed
	}
	return n.side.node, n.side.err
}

// Stats implements Statser. The dedicated connections of blocking
// commands are counted with the shared ones.
func (n *Node) Stats() backend.Stats {
	s := backend.Stats{
		Strategy:    "multiplexed",
		Flushes:     n.counts.flushes.Load(),
		Commands:    n.counts.commands.Load(),
		Dials:       n.counts.dials.Load(),
		DialErrors:  n.counts.dialErrors.Load(),
		BrokenConns: n.counts.broken.Load(),
	}
	if !n.closed.Load() {
		s.Nodes = 1
	}
	for i := range n.slots {
		if c := n.slots[i].cur.Load(); c != nil && !c.broken.Load() {
			s.Conns++
			p := max(c.pending.Load(), 0)
			s.Pending += p
			s.PipelineDepth = max(s.PipelineDepth, p)
			if i < n.lanes {
				s.Lanes++
			} else {
				s.BigValueConns++
			}
		}
	}
	if side := n.side.open.Load(); side != nil {
		ss := side.Stats()
		s.Conns += ss.Conns
		s.Dials += ss.Dials
		s.DialErrors += ss.DialErrors
		s.BrokenConns += ss.BrokenConns
	}
	return s
}

// Close implements Backend. Calls in flight fail with backend.ErrClosed, dials in
// progress are abandoned.
func (n *Node) Close() error {
	if n.closed.Swap(true) {
		return nil
	}
	n.cancel()
	close(n.stop)
	for i := range n.slots {
		s := &n.slots[i]
		s.mu.Lock() // a dial finishing now sees closed and discards its connection
		c := s.cur.Swap(nil)
		if s.aging != nil {
			s.aging.Stop()
		}
		s.mu.Unlock()
		if c != nil {
			c.fail(backend.ErrClosed)
		}
	}
	n.side.once.Do(func() {}) // no side pool from now on
	if n.side.node != nil {
		n.side.node.Close()
	}
	n.wg.Wait()
	return nil
}

// Exec sends the commands encoded in buf back to back on the connection of
// keys, the keys they name (see route), and decodes their replies into
// rps, in order. Only a connection or context failure is returned, or the
// refusal of a command that the server then closed the connection on (a
// *wire.CutError); each command's own error is in its reply.
func (n *Node) Exec(ctx context.Context, keys []string, buf []byte, rps []wire.Reply) error {
	if n.adaptive {
		n.routing.callers.Add(1)
		defer n.routing.callers.Add(-1)
	}
	cl := n.keysCall(ctx, keys)
	c, err := n.enqueue(ctx, cl, false)
	if err != nil {
		return err
	}
	c.out.cur = append(c.out.cur, buf...)
	cl.Kind, cl.pipe, cl.lead = wire.ReplyPipe, rps, true
	leads := c.push(cl, int64(cl.replies()), true)
	if err := c.await(ctx, cl, leads); err != nil {
		return n.callError("pipeline", err)
	}
	n.calls.put(cl)
	return nil
}

// callError is the error of a call of cmd that got no reply, or only a
// refusal: the server's refusal of a command it then closed the
// connection on (a *wire.CutError, its refusal wrapped with cmd), the
// context's end, or the connection's failure.
func (n *Node) callError(cmd string, err error) error {
	if cut, ok := err.(*wire.CutError); ok {
		return &wire.CutError{N: cut.N, Refusal: failure.ReplyError(cmd, cut.Refusal), Err: cut.Err}
	}
	return failure.CtxErr(n.addr, true, err)
}

// send queues a pipeline as exec does but returns at once, so that a
// caller can have pipelines in flight on several nodes without a
// goroutine per node; await waits for it. Such a call cannot lead (its
// caller is busy elsewhere): the drainer reads for it. buf may be reused
// when send returns.
func (n *Node) send(ctx context.Context, keys []string, buf []byte, rps []wire.Reply) (*call, error) {
	cl := n.keysCall(ctx, keys)
	c, err := n.enqueue(ctx, cl, false)
	if err != nil {
		return nil, err
	}
	cl.Kind, cl.pipe = wire.ReplyPipe, rps
	c.out.cur = append(c.out.cur, buf...)
	c.push(cl, int64(cl.replies()), false)
	return cl, nil
}

// Send is send for another package: the pipeline's outcome is the
// returned Pending's, once awaited.
func (n *Node) Send(ctx context.Context, keys []string, buf []byte, rps []wire.Reply) (transport.Pending, error) {
	cl, err := n.send(ctx, keys, buf, rps)
	if err != nil {
		return nil, err
	}
	return cl, nil
}

// Await implements transport.Pending: the second half of Send.
func (cl *call) Await(ctx context.Context) error { return cl.conn.node.await(ctx, cl) }

// await is the second half of send.
func (n *Node) await(ctx context.Context, cl *call) error {
	if err := wait(ctx, cl); err != nil {
		return n.callError("pipeline", err)
	}
	n.calls.put(cl)
	return nil
}

func (n *Node) Address() string { return n.addr }

// GetWithTTL implements TTLGetter.
func (n *Node) GetWithTTL(ctx context.Context, key string) ([]byte, time.Duration, error) {
	return transport.GetWithTTL(ctx, n, key)
}

// MGetWithTTL implements TTLGetter.
func (n *Node) MGetWithTTL(ctx context.Context, keys []string) ([][]byte, []time.Duration, error) {
	return transport.MGetWithTTL(ctx, n, keys)
}
