// Package mux is the Multiplexed transport: a few auto-pipelined
// connections per node shared by every goroutine. strategy.Multiplexed
// documents it and opens it.
package mux

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redisx-go/kit/internal/cluster"
	"github.com/redisx-go/kit/internal/conn"
	"github.com/redisx-go/kit/internal/pool"
)

// Options are strategy.Multiplexed's fields, field for field (strategy
// converts one into the other); their docs are strategy's.
type Options struct {
	Conns      int
	MaxPending int
	Blocking   int
}

// WithDefaults validates o and fills in the defaults of its zero fields.
func (m Options) WithDefaults() (Options, error) {
	switch {
	case m.Conns < 0 || m.Conns > 1024:
		return m, fmt.Errorf("%w: Multiplexed.Conns %d out of range 0..1024", conn.ErrInvalidArgument, m.Conns)
	case m.MaxPending < 0:
		return m, fmt.Errorf("%w: Multiplexed.MaxPending %d is negative", conn.ErrInvalidArgument, m.MaxPending)
	case m.Blocking < 0:
		return m, fmt.Errorf("%w: Multiplexed.Blocking %d is negative", conn.ErrInvalidArgument, m.Blocking)
	}
	if m.Conns == 0 {
		m.Conns = 1
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
func New(cfg conn.Config, addr string, o Options) (*Node, error) {
	o, err := o.WithDefaults()
	if err != nil {
		return nil, err
	}
	return newMuxNode(cfg, addr, o), nil
}

// NewNode implements cluster.Transport: New.
func (o Options) NewNode(cfg conn.Config, addr string) (cluster.Node, error) {
	return cluster.AsNode(New(cfg, addr, o))
}

// OpenNode implements cluster.Transport: Open.
func (o Options) OpenNode(ctx context.Context, cfg conn.Config, addr string) (cluster.Node, error) {
	return cluster.AsNode(Open(ctx, cfg, addr, o))
}

// Open returns a Node for addr once every shared connection is dialled.
func Open(ctx context.Context, cfg conn.Config, addr string, o Options) (*Node, error) {
	n, err := New(cfg, addr, o)
	if err != nil {
		return nil, err
	}
	for i := range n.opts.Conns {
		if _, err := n.conn(ctx, i); err != nil {
			n.Close()
			return nil, err
		}
	}
	return n, nil
}

// Node is the Multiplexed backend of one node.
type Node struct {
	cfg   conn.Config
	addr  string
	opts  Options
	slots []muxSlot
	calls callPool

	closed   atomic.Bool
	life     context.Context // the node's own: dials run under it; Close cancels it
	cancel   context.CancelFunc
	wg       sync.WaitGroup // every connection's reader and writer, dials, and the watchdog
	stop     chan struct{}
	sideOnce sync.Once
	side     *pool.Node // dedicated connections for blocking commands
	sideErr  error
	sideOpen atomic.Pointer[pool.Node] // side, once made: for Stats

	dials, dialErrors, broken, flushes, commands atomic.Int64

	// bulkAbandoned counts the calls on the bulk connections whose
	// callers left before their reply was read (see routeBig).
	bulkAbandoned atomic.Int64
}

type muxSlot struct {
	bulk    bool // one of the bulkConns slots, after the shared ones
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
}

func newMuxNode(cfg conn.Config, addr string, opts Options) *Node {
	n := &Node{cfg: cfg, addr: addr, opts: opts, slots: make([]muxSlot, opts.Conns+bulkConns), stop: make(chan struct{})}
	for i := opts.Conns; i < len(n.slots); i++ {
		n.slots[i].bulk = true
	}
	n.life, n.cancel = context.WithCancel(context.Background())
	n.wg.Add(1)
	go n.watchdog(cfg.ReadTimeout)
	return n
}

// enqueue returns connection i locked for encoding, after checking the
// context, the client's state and the pending bound. A connection found
// broken before the command is encoded fails the call with an Unsent
// error; one retired meanwhile is replaced by the slot's new one.
func (n *Node) enqueue(ctx context.Context, i int) (*muxConn, error) {
	for {
		if err := ctx.Err(); err != nil {
			return nil, conn.CtxErr(n.addr, false, err)
		}
		if n.closed.Load() {
			return nil, conn.ErrClosed
		}
		c, err := n.conn(ctx, i)
		if err != nil {
			return nil, conn.CtxErr(n.addr, false, err)
		}
		if limit := int64(n.opts.MaxPending); !c.reserve(limit) {
			err = c.waitRoom(ctx, limit)
		}
		if err == nil {
			err = c.lockForEnqueue()
		}
		switch {
		case err == nil:
			return c, nil
		case err == errRetired:
			continue
		case ctx.Err() != nil, errors.Is(err, conn.ErrClosed):
			return nil, conn.CtxErr(n.addr, false, err)
		}
		return nil, conn.MarkUnsent(err)
	}
}

// roundTrip is one command on connection i: it encodes the command with
// enc into the connection's write buffer, queues a call for its reply,
// waits for it within ctx and decodes it into rp (whose kind, and for a
// run of SETs n, say what to expect). It returns the context's error, the
// connection's failure, or rp's reply error wrapped with cmd.
func (n *Node) roundTrip(ctx context.Context, i int, cmd string, rp *conn.Reply, enc func([]byte) []byte) error {
	return n.roundTripSized(ctx, i, cmd, rp, 0, enc)
}

// roundTripSized is roundTrip for a command of about size bytes, when that
// is big: it is encoded into a chunk of its own size.
func (n *Node) roundTripSized(ctx context.Context, i int, cmd string, rp *conn.Reply, size int, enc func([]byte) []byte) error {
	c, err := n.enqueue(ctx, i)
	if err != nil {
		return err
	}
	if size > 0 {
		c.fit(size)
	}
	c.out.cur = enc(c.out.cur)
	cl := n.calls.get(ctx)
	cl.Reply, cl.lead = *rp, true
	leads := c.push(cl, int64(rp.Count()), true)
	if err := c.await(ctx, cl, leads); err != nil {
		return conn.CtxErr(n.addr, true, err)
	}
	*rp = cl.Reply
	n.calls.put(cl)
	return conn.ReplyError(cmd, rp.Err)
}

// Get implements Backend.
func (n *Node) Get(ctx context.Context, key string) ([]byte, error) {
	i, err := n.route1(ctx, key, false)
	if err != nil {
		return nil, err
	}
	rp := conn.Reply{Kind: conn.ReplyBulk}
	if err := n.roundTrip(ctx, i, "get", &rp, func(b []byte) []byte { return conn.AppendGet(b, key) }); err != nil {
		return nil, err
	}
	if rp.Val == nil {
		return nil, conn.ErrNotFound
	}
	return rp.Val, nil
}

// Set implements Backend.
func (n *Node) Set(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	big := len(value) >= bigValue
	i, err := n.route1(ctx, key, big)
	if err != nil {
		return err
	}
	rp := conn.Reply{Kind: conn.ReplyOK}
	enc := func(b []byte) []byte { return conn.AppendSet(b, key, value, ttl) }
	if big {
		return n.roundTripSized(ctx, i, "set", &rp, len(key)+len(value)+64, enc)
	}
	return n.roundTrip(ctx, i, "set", &rp, enc)
}

// Del implements Backend.
func (n *Node) Del(ctx context.Context, keys ...string) (int64, error) {
	if len(keys) == 0 {
		return 0, nil
	}
	i, err := n.route(ctx, keys, false)
	if err != nil {
		return 0, err
	}
	rp := conn.Reply{Kind: conn.ReplyInt}
	err = n.roundTrip(ctx, i, "del", &rp, func(b []byte) []byte { return conn.AppendKeys(b, "DEL", keys) })
	return rp.Num, err
}

// MGet implements MultiGetter.
func (n *Node) MGet(ctx context.Context, keys []string) ([][]byte, error) {
	if len(keys) == 0 {
		return [][]byte{}, nil
	}
	i, err := n.route(ctx, keys, false)
	if err != nil {
		return nil, err
	}
	rp := conn.Reply{Kind: conn.ReplyBulks, Vals: make([][]byte, len(keys))}
	if err := n.roundTrip(ctx, i, "mget", &rp, func(b []byte) []byte { return conn.AppendKeys(b, "MGET", keys) }); err != nil {
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
	i := 0
	if !n.oneRoute() {
		var err error
		if i, err = n.route(ctx, slices.Collect(maps.Keys(kv)), false); err != nil {
			return err
		}
	}
	rp := conn.Reply{Kind: conn.ReplyOK}
	return n.roundTrip(ctx, i, "mset", &rp, func(b []byte) []byte {
		b, rp.N = conn.AppendMSet(b, kv, ttl)
		return b
	})
}

// Do implements Doer. Blocking commands run on a dedicated connection.
func (n *Node) Do(ctx context.Context, args ...any) (any, error) {
	class, err := conn.CheckCommand(args)
	if err != nil {
		return nil, err
	}
	if class == conn.ClassBlocking {
		side, err := n.sidePool()
		if err != nil {
			return nil, err
		}
		return side.Do(ctx, args...)
	}
	i, err := n.routeDo(ctx, args)
	if err != nil {
		return nil, err
	}
	rp := conn.Reply{Kind: conn.ReplyAny}
	if err := n.roundTrip(ctx, i, conn.ArgName(args, 0), &rp, func(b []byte) []byte {
		b, _ = conn.AppendArgs(b, args) // cannot fail: conn.CheckCommand refused what it cannot encode
		return b
	}); err != nil {
		return nil, err
	}
	return rp.Any, nil
}

func (n *Node) sidePool() (*pool.Node, error) {
	n.sideOnce.Do(func() {
		n.side, n.sideErr = pool.New(n.cfg, n.addr, pool.Options{Size: n.opts.Blocking})
		n.sideOpen.Store(n.side)
	})
	if n.closed.Load() {
		return nil, conn.ErrClosed
	}
	return n.side, n.sideErr
}

// Stats implements Statser. The dedicated connections of blocking
// commands are counted with the shared ones.
func (n *Node) Stats() conn.Stats {
	s := conn.Stats{
		Strategy:    "multiplexed",
		Flushes:     n.flushes.Load(),
		Commands:    n.commands.Load(),
		Dials:       n.dials.Load(),
		DialErrors:  n.dialErrors.Load(),
		BrokenConns: n.broken.Load(),
	}
	for i := range n.slots {
		if c := n.slots[i].cur.Load(); c != nil && !c.broken.Load() {
			s.Conns++
			s.Pending += max(c.pending.Load(), 0)
		}
	}
	if side := n.sideOpen.Load(); side != nil {
		ss := side.Stats()
		s.Conns += ss.Conns
		s.Dials += ss.Dials
		s.DialErrors += ss.DialErrors
		s.BrokenConns += ss.BrokenConns
	}
	return s
}

// Close implements Backend. Calls in flight fail with conn.ErrClosed, dials in
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
			c.fail(conn.ErrClosed)
		}
	}
	n.sideOnce.Do(func() {}) // no side pool from now on
	if n.side != nil {
		n.side.Close()
	}
	n.wg.Wait()
	return nil
}

// Exec sends the commands encoded in buf back to back on the connection of
// keys, the keys they name (see route), and decodes their replies into
// rps, in order. Only a connection or context failure is returned; each
// command's own error is in its reply.
func (n *Node) Exec(ctx context.Context, keys []string, buf []byte, rps []conn.Reply) error {
	i, err := n.route(ctx, keys, false)
	if err != nil {
		return err
	}
	c, err := n.enqueue(ctx, i)
	if err != nil {
		return err
	}
	c.out.cur = append(c.out.cur, buf...)
	cl := n.calls.get(ctx)
	cl.Kind, cl.pipe, cl.lead = conn.ReplyPipe, rps, true
	leads := c.push(cl, int64(cl.replies()), true)
	if err := c.await(ctx, cl, leads); err != nil {
		return conn.CtxErr(n.addr, true, err)
	}
	n.calls.put(cl)
	return nil
}

// send queues a pipeline as exec does but returns at once, so that a
// caller can have pipelines in flight on several nodes without a
// goroutine per node; await waits for it. Such a call cannot lead (its
// caller is busy elsewhere): the drainer reads for it. buf may be reused
// when send returns.
func (n *Node) send(ctx context.Context, keys []string, buf []byte, rps []conn.Reply) (*call, error) {
	i, err := n.route(ctx, keys, false)
	if err != nil {
		return nil, err
	}
	c, err := n.enqueue(ctx, i)
	if err != nil {
		return nil, err
	}
	cl := n.calls.get(ctx)
	cl.Kind, cl.pipe = conn.ReplyPipe, rps
	c.out.cur = append(c.out.cur, buf...)
	c.push(cl, int64(cl.replies()), false)
	return cl, nil
}

// Send is send for another package: the pipeline's outcome is the
// returned Pending's, once awaited.
func (n *Node) Send(ctx context.Context, keys []string, buf []byte, rps []conn.Reply) (conn.Pending, error) {
	cl, err := n.send(ctx, keys, buf, rps)
	if err != nil {
		return nil, err
	}
	return cl, nil
}

// Await implements conn.Pending: the second half of Send.
func (cl *call) Await(ctx context.Context) error { return cl.conn.node.await(ctx, cl) }

// await is the second half of send.
func (n *Node) await(ctx context.Context, cl *call) error {
	if err := wait(ctx, cl); err != nil {
		return conn.CtxErr(n.addr, true, err)
	}
	n.calls.put(cl)
	return nil
}

func (n *Node) Address() string { return n.addr }

// GetWithTTL implements TTLGetter.
func (n *Node) GetWithTTL(ctx context.Context, key string) ([]byte, time.Duration, error) {
	return conn.GetWithTTL(ctx, n, key)
}

// MGetWithTTL implements TTLGetter.
func (n *Node) MGetWithTTL(ctx context.Context, keys []string) ([][]byte, []time.Duration, error) {
	return conn.MGetWithTTL(ctx, n, keys)
}
