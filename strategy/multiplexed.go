package strategy

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Multiplexed shares a few auto-pipelined connections per node among all
// goroutines, the model of Lettuce and rueidis.
//
// Callers encode their command into the connection's write buffer and
// wait; one writer goroutine per connection writes whatever accumulated
// whenever the queue drains (the busier, the bigger the batch), and one
// reader goroutine matches replies to callers in order. A caller whose
// context ends leaves at once; its reply is still read and dropped, so no
// reply ever reaches the wrong caller. A connection that fails fails its
// in-flight calls with ErrConnection and is redialled by the next call.
// Blocking commands (BLPOP, XREAD BLOCK, WAIT…) run on a small pool of
// dedicated connections instead, and commands that change a
// connection's state are refused.
//
// The zero value is one connection per node.
type Multiplexed struct {
	// Conns is the number of shared connections per node. Zero: 1. A key
	// always maps to the same connection, so the reads and writes of one
	// key stay in order. More than 2–4 rarely helps: batching already
	// amortises the system calls.
	Conns int
	// MaxPending bounds the commands queued or awaiting a reply on one
	// connection; further callers wait, within their context, for room.
	// Zero: 16384.
	MaxPending int
	// Blocking is the number of dedicated connections per node for
	// blocking commands sent through Do, opened on first use. Zero: 8.
	Blocking int
}

// Open implements Strategy. It dials every shared connection of the first
// seed that answers before it returns; on a cluster, the other nodes'
// connections are dialled on first use.
func (m Multiplexed) Open(ctx context.Context, cfg Config) (Backend, error) {
	if _, err := m.withDefaults(); err != nil {
		return nil, err
	}
	return openDeployment(ctx, cfg, m)
}

func (m Multiplexed) withDefaults() (Multiplexed, error) {
	switch {
	case m.Conns < 0 || m.Conns > 1024:
		return m, fmt.Errorf("%w: Multiplexed.Conns %d out of range 0..1024", ErrInvalidArgument, m.Conns)
	case m.MaxPending < 0:
		return m, fmt.Errorf("%w: Multiplexed.MaxPending %d is negative", ErrInvalidArgument, m.MaxPending)
	case m.Blocking < 0:
		return m, fmt.Errorf("%w: Multiplexed.Blocking %d is negative", ErrInvalidArgument, m.Blocking)
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

func (m Multiplexed) newNode(cfg Config, addr string) (node, error) {
	m, err := m.withDefaults()
	if err != nil {
		return nil, err
	}
	return newMuxNode(cfg, addr, m), nil
}

func (m Multiplexed) openNode(ctx context.Context, cfg Config, addr string) (node, error) {
	nd, err := m.newNode(cfg, addr)
	if err != nil {
		return nil, err
	}
	n := nd.(*muxNode)
	for i := range n.slots {
		if _, err := n.conn(ctx, i); err != nil {
			n.Close()
			return nil, err
		}
	}
	return n, nil
}

// muxNode is the Multiplexed backend of one node.
type muxNode struct {
	cfg   Config
	addr  string
	opts  Multiplexed
	slots []muxSlot
	calls callPool

	closed   atomic.Bool
	wg       sync.WaitGroup // every connection's reader and writer, and the watchdog
	stop     chan struct{}
	sideOnce sync.Once
	side     *poolNode // dedicated connections for blocking commands
	sideErr  error

	dials, dialErrors, broken, flushes, commands atomic.Int64
}

type muxSlot struct {
	cur     atomic.Pointer[muxConn]
	mu      sync.Mutex
	dialing *dialWait // non-nil while a dial runs
}

type dialWait struct {
	done chan struct{}
	err  error
}

func newMuxNode(cfg Config, addr string, opts Multiplexed) *muxNode {
	n := &muxNode{cfg: cfg, addr: addr, opts: opts, slots: make([]muxSlot, opts.Conns), stop: make(chan struct{})}
	if cfg.ReadTimeout > 0 {
		n.wg.Add(1)
		go n.watchdog(cfg.ReadTimeout)
	}
	return n
}

// route picks the connection of key (FNV-1a), so a key's commands stay
// ordered.
func (n *muxNode) route(key string) int {
	if len(n.slots) == 1 {
		return 0
	}
	h := uint32(2166136261)
	for i := 0; i < len(key); i++ {
		h ^= uint32(key[i])
		h *= 16777619
	}
	return int(h % uint32(len(n.slots)))
}

// conn returns slot i's live connection, dialling one if needed. Only one
// dial runs per slot; concurrent callers wait for it within their context
// and share its outcome, so a dead server does not cause a dial storm.
func (n *muxNode) conn(ctx context.Context, i int) (*muxConn, error) {
	s := &n.slots[i]
	if c := s.cur.Load(); c != nil && !c.broken.Load() {
		return c, nil
	}
	for {
		s.mu.Lock()
		if c := s.cur.Load(); c != nil && !c.broken.Load() {
			s.mu.Unlock()
			return c, nil
		}
		if n.closed.Load() {
			s.mu.Unlock()
			return nil, ErrClosed
		}
		if w := s.dialing; w != nil {
			s.mu.Unlock()
			select {
			case <-w.done:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			if w.err != nil {
				return nil, w.err
			}
			continue
		}
		w := &dialWait{done: make(chan struct{})}
		s.dialing = w
		s.mu.Unlock()

		nc, err := dial(ctx, &n.cfg, n.addr)
		n.dials.Add(1)
		var c *muxConn
		s.mu.Lock()
		s.dialing = nil
		switch {
		case err != nil:
			n.dialErrors.Add(1)
		case n.closed.Load():
			nc.Close()
			err = ErrClosed
		default:
			c = n.startConn(nc)
			s.cur.Store(c)
		}
		w.err = err
		close(w.done)
		s.mu.Unlock()
		return c, err
	}
}

// enqueue returns connection i locked for encoding, after checking the
// context, the client's state and the pending bound.
func (n *muxNode) enqueue(ctx context.Context, i int) (*muxConn, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if n.closed.Load() {
		return nil, ErrClosed
	}
	c, err := n.conn(ctx, i)
	if err != nil {
		return nil, err
	}
	if c.pending.Add(1) > int64(n.opts.MaxPending) {
		if err := c.waitRoom(ctx, int64(n.opts.MaxPending)); err != nil {
			return nil, err
		}
	}
	return c, c.lockForEnqueue()
}

// waitRoom is the slow path of a full connection: poll for room within
// ctx. The caller's pending slot has been counted already.
func (c *muxConn) waitRoom(ctx context.Context, limit int64) error {
	c.pending.Add(-1)
	t := time.NewTimer(50 * time.Microsecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-c.quit:
			return connError(c.node.addr, ErrClosed)
		case <-t.C:
		}
		if c.pending.Add(1) <= limit {
			return nil
		}
		c.pending.Add(-1)
		t.Reset(200 * time.Microsecond)
	}
}

// Get implements Backend.
func (n *muxNode) Get(ctx context.Context, key string) ([]byte, error) {
	c, err := n.enqueue(ctx, n.route(key))
	if err != nil {
		return nil, err
	}
	cl := n.calls.get(replyBulk, 1)
	c.wbuf = appendGet(c.wbuf, key)
	c.push(cl, 1)
	if err := wait(ctx, cl); err != nil {
		return nil, err
	}
	v, err := cl.val, cl.err
	n.calls.put(cl)
	switch {
	case err != nil:
		return nil, replyError("get", err)
	case v == nil:
		return nil, ErrNotFound
	}
	return v, nil
}

// Set implements Backend.
func (n *muxNode) Set(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	c, err := n.enqueue(ctx, n.route(key))
	if err != nil {
		return err
	}
	cl := n.calls.get(replyOK, 1)
	c.wbuf = appendSet(c.wbuf, key, value, ttl)
	c.push(cl, 1)
	if err := wait(ctx, cl); err != nil {
		return err
	}
	err = cl.err
	n.calls.put(cl)
	return replyError("set", err)
}

// Del implements Backend.
func (n *muxNode) Del(ctx context.Context, keys ...string) (int64, error) {
	if len(keys) == 0 {
		return 0, nil
	}
	c, err := n.enqueue(ctx, n.route(keys[0]))
	if err != nil {
		return 0, err
	}
	cl := n.calls.get(replyInt, 1)
	c.wbuf = appendKeys(c.wbuf, "DEL", keys)
	c.push(cl, 1)
	if err := wait(ctx, cl); err != nil {
		return 0, err
	}
	v, err := cl.num, cl.err
	n.calls.put(cl)
	return v, replyError("del", err)
}

// MGet implements MultiGetter.
func (n *muxNode) MGet(ctx context.Context, keys []string) ([][]byte, error) {
	if len(keys) == 0 {
		return [][]byte{}, nil
	}
	c, err := n.enqueue(ctx, n.route(keys[0]))
	if err != nil {
		return nil, err
	}
	cl := n.calls.get(replyBulks, 1)
	cl.vals = make([][]byte, len(keys))
	c.wbuf = appendKeys(c.wbuf, "MGET", keys)
	c.push(cl, 1)
	if err := wait(ctx, cl); err != nil {
		return nil, err
	}
	vs, err := cl.vals, cl.err
	n.calls.put(cl)
	if err != nil {
		return nil, replyError("mget", err)
	}
	return vs, nil
}

// MSet implements MultiSetter: one MSET without a ttl, otherwise one
// pipelined SET … PX per pair, written together.
func (n *muxNode) MSet(ctx context.Context, kv map[string][]byte, ttl time.Duration) error {
	if len(kv) == 0 {
		return nil
	}
	var first string
	for k := range kv {
		first = k
		break
	}
	c, err := n.enqueue(ctx, n.route(first))
	if err != nil {
		return err
	}
	var replies int
	c.wbuf, replies = appendMSet(c.wbuf, kv, ttl)
	cl := n.calls.get(replyOK, replies)
	c.push(cl, int64(replies))
	if err := wait(ctx, cl); err != nil {
		return err
	}
	err = cl.err
	n.calls.put(cl)
	return replyError("mset", err)
}

// Do implements Doer. Blocking commands run on a dedicated connection.
func (n *muxNode) Do(ctx context.Context, args ...any) (any, error) {
	class, err := checkCommand(args)
	if err != nil {
		return nil, err
	}
	if class == classBlocking {
		side, err := n.sidePool()
		if err != nil {
			return nil, err
		}
		return side.Do(ctx, args...)
	}
	c, err := n.enqueue(ctx, 0)
	if err != nil {
		return nil, err
	}
	mark := len(c.wbuf)
	if c.wbuf, err = appendArgs(c.wbuf, args); err != nil {
		c.abortEnqueue(mark)
		return nil, err
	}
	cl := n.calls.get(replyAny, 1)
	c.push(cl, 1)
	if err := wait(ctx, cl); err != nil {
		return nil, err
	}
	v, err := cl.any, cl.err
	n.calls.put(cl)
	if err != nil {
		return nil, replyError(argName(args, 0), err)
	}
	return v, nil
}

func (n *muxNode) sidePool() (*poolNode, error) {
	n.sideOnce.Do(func() {
		n.side, n.sideErr = newPoolNode(n.cfg, n.addr, Pool{Size: n.opts.Blocking})
	})
	if n.closed.Load() {
		return nil, ErrClosed
	}
	return n.side, n.sideErr
}

// watchdog fails a connection whose replies have stopped coming for
// longer than the read timeout while commands wait for them: a hung or
// unreachable server is noticed even by callers without a deadline.
func (n *muxNode) watchdog(timeout time.Duration) {
	defer n.wg.Done()
	tick := max(timeout/4, 10*time.Millisecond)
	t := time.NewTicker(tick)
	defer t.Stop()
	type progress struct {
		c       *muxConn
		replies uint64
		since   time.Time
	}
	last := make([]progress, len(n.slots))
	for {
		select {
		case <-n.stop:
			return
		case now := <-t.C:
			for i := range n.slots {
				c := n.slots[i].cur.Load()
				p := &last[i]
				if c == nil || c.broken.Load() || c.pending.Load() <= 0 {
					*p = progress{}
					continue
				}
				r := c.replies.Load()
				if p.c != c || p.replies != r {
					*p = progress{c: c, replies: r, since: now}
					continue
				}
				if now.Sub(p.since) >= timeout {
					c.fail(fmt.Errorf("no reply within %v", timeout))
				}
			}
		}
	}
}

// Stats implements Statser.
func (n *muxNode) Stats() Stats {
	s := Stats{
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
	return s
}

// Close implements Backend. Calls in flight fail with ErrClosed.
func (n *muxNode) Close() error {
	if n.closed.Swap(true) {
		return nil
	}
	close(n.stop)
	for i := range n.slots {
		s := &n.slots[i]
		s.mu.Lock() // a dial finishing now sees closed and discards its connection
		c := s.cur.Swap(nil)
		s.mu.Unlock()
		if c != nil {
			c.fail(ErrClosed)
		}
	}
	n.sideOnce.Do(func() {}) // no side pool from now on
	if n.side != nil {
		n.side.Close()
	}
	n.wg.Wait()
	return nil
}

// exec sends the commands encoded in buf back to back on key's connection
// and decodes their replies into rps, in order. Only a connection or
// context failure is returned; each command's own error is in its reply.
func (n *muxNode) exec(ctx context.Context, key string, buf []byte, rps []reply) error {
	cl, err := n.send(ctx, key, buf, rps)
	if err != nil {
		return err
	}
	return n.await(ctx, cl)
}

// send is the first half of exec: it queues the pipeline and returns at
// once, so that a caller can have pipelines in flight on several nodes
// without a goroutine per node. buf may be reused when send returns.
func (n *muxNode) send(ctx context.Context, key string, buf []byte, rps []reply) (*call, error) {
	c, err := n.enqueue(ctx, n.route(key))
	if err != nil {
		return nil, err
	}
	cl := n.calls.get(replyPipe, 0)
	cl.pipe = rps
	c.wbuf = append(c.wbuf, buf...)
	c.push(cl, int64(len(rps)))
	return cl, nil
}

// await is the second half of exec.
func (n *muxNode) await(ctx context.Context, cl *call) error {
	if err := wait(ctx, cl); err != nil {
		return err
	}
	err := cl.err
	n.calls.put(cl)
	return err
}

func (n *muxNode) address() string { return n.addr }
