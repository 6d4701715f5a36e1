// Package pool is the Pool transport: each call borrows a connection of
// its own from a jackc/puddle pool for a blocking write and read on the
// caller's goroutine. strategy.Pool documents it and opens it.
package pool

import (
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/puddle/v2"
	"github.com/redisx-go/kit/backend"
	"github.com/redisx-go/kit/internal/command"
	"github.com/redisx-go/kit/internal/dial"
	"github.com/redisx-go/kit/internal/failure"
	"github.com/redisx-go/kit/internal/resp"
	"github.com/redisx-go/kit/internal/transport"
	"github.com/redisx-go/kit/internal/wire"
)

// Options are strategy.Pool's fields, field for field (strategy converts
// one into the other); their docs are strategy's.
type Options struct {
	Size              int
	MinIdle           int
	MaxIdleTime       time.Duration
	MaxLifetime       time.Duration
	HealthCheckPeriod time.Duration
}

// WithDefaults validates o and fills in the defaults of its zero fields.
func (p Options) WithDefaults() (Options, error) {
	switch {
	case p.Size < 0:
		return p, fmt.Errorf("%w: Pool.Size %d is negative", backend.ErrInvalidArgument, p.Size)
	case p.MinIdle < 0:
		return p, fmt.Errorf("%w: Pool.MinIdle %d is negative", backend.ErrInvalidArgument, p.MinIdle)
	case p.MaxLifetime < 0:
		return p, fmt.Errorf("%w: Pool.MaxLifetime %v is negative", backend.ErrInvalidArgument, p.MaxLifetime)
	case p.HealthCheckPeriod < 0:
		return p, fmt.Errorf("%w: Pool.HealthCheckPeriod %v is negative", backend.ErrInvalidArgument, p.HealthCheckPeriod)
	}
	if p.Size == 0 {
		p.Size = 10 * runtime.GOMAXPROCS(0)
	}
	if p.MinIdle > p.Size {
		return p, fmt.Errorf("%w: Pool.MinIdle %d over Size %d", backend.ErrInvalidArgument, p.MinIdle, p.Size)
	}
	if p.MaxIdleTime == 0 {
		p.MaxIdleTime = 30 * time.Minute
	}
	if p.HealthCheckPeriod == 0 {
		p.HealthCheckPeriod = time.Minute
	}
	return p, nil
}

// NewNode implements transport.Transport: New.
func (o Options) NewNode(cfg backend.Config, addr string) (transport.Node, error) {
	return transport.AsNode(New(cfg, addr, o))
}

// OpenNode implements transport.Transport: Open.
func (o Options) OpenNode(ctx context.Context, cfg backend.Config, addr string) (transport.Node, error) {
	return transport.AsNode(Open(ctx, cfg, addr, o))
}

// Open returns a Node for addr once it has opened a connection (or
// MinIdle).
func Open(ctx context.Context, cfg backend.Config, addr string, o Options) (*Node, error) {
	n, err := New(cfg, addr, o)
	if err != nil {
		return nil, err
	}
	err = n.p.CreateResource(ctx)
	if errors.Is(err, puddle.ErrNotAvailable) {
		// The health check's first top-up has already filled the pool
		// (MinIdle = Size): wait for one of its connections instead.
		var res *puddle.Resource[*pconn]
		if res, err = n.p.Acquire(ctx); err == nil {
			res.ReleaseUnused()
		}
	}
	if err != nil {
		n.Close()
		switch {
		case errors.Is(err, backend.ErrConnection) || errors.Is(err, backend.ErrAuth) || errors.Is(err, backend.ErrInvalidArgument):
		case ctx.Err() != nil: // puddle's wait for a connection ended with ctx
			err = failure.MarkUnsent(failure.DialEnded(addr, ctx.Err()))
		default:
			err = failure.ConnError(addr, err)
		}
		return nil, err
	}
	return n, nil
}

// Node is the Pool backend of one node.
type Node struct {
	cfg  backend.Config
	addr string
	opts Options
	p    *puddle.Pool[*pconn]

	closed atomic.Bool
	life   context.Context // the node's own: background dials run under it; Close cancels it
	cancel context.CancelFunc
	stop   chan struct{}
	gate   chan struct{} // one token per borrowed connection; see acquire
	wg     sync.WaitGroup

	// Every open connection, idle or borrowed, so that Close can close
	// the sockets of borrowed ones and fail their calls at once; and the
	// connections lent by Dedicated, which Close takes back rather than
	// wait for their sessions to end.
	connsMu sync.Mutex
	conns   map[*pconn]struct{}
	loans   map[*dedicated]struct{}

	dials, dialErrors, broken     atomic.Int64
	waits, waited, cancelledWaits atomic.Int64 // callers that waited for a token
}

// pconn is one pooled connection. Only its borrower touches it.
type pconn struct {
	nc          net.Conn
	r           *resp.Reader
	buf         []byte
	deadline    time.Time // the deadline currently set on nc
	fromTimeout bool      // deadline was set from ReadTimeout alone: see arm
}

func New(cfg backend.Config, addr string, opts Options) (*Node, error) {
	opts, err := opts.WithDefaults()
	if err != nil {
		return nil, err
	}
	if age := cfg.MaxConnAge; age > 0 && (opts.MaxLifetime == 0 || age < opts.MaxLifetime) {
		opts.MaxLifetime = age
	}
	n := &Node{cfg: cfg, addr: addr, opts: opts, stop: make(chan struct{}), gate: make(chan struct{}, opts.Size), conns: map[*pconn]struct{}{}, loans: map[*dedicated]struct{}{}}
	n.life, n.cancel = context.WithCancel(context.Background())
	n.p, err = puddle.NewPool(&puddle.Config[*pconn]{
		Constructor: n.construct,
		Destructor:  n.destruct,
		MaxSize:     int32(opts.Size),
	})
	if err != nil {
		n.cancel()
		return nil, fmt.Errorf("%w: %w", backend.ErrInvalidArgument, err)
	}
	n.wg.Add(1)
	go n.maintain()
	return n, nil
}

// construct dials a connection. puddle runs it detached from the
// acquirer's cancellation (the acquirer waits within its own context); the
// dial timeout bounds it, and Close aborts it.
func (n *Node) construct(ctx context.Context) (*pconn, error) {
	nc, err := dial.DialData(ctx, &n.cfg, n.addr)
	n.dials.Add(1)
	if err != nil {
		n.dialErrors.Add(1)
		return nil, err
	}
	c := &pconn{nc: nc, r: resp.NewReader(nc, 16<<10), buf: make([]byte, 0, 512)}
	n.connsMu.Lock()
	defer n.connsMu.Unlock()
	if n.closed.Load() {
		nc.Close()
		return nil, backend.ErrClosed
	}
	n.conns[c] = struct{}{}
	return c, nil
}

func (n *Node) destruct(c *pconn) {
	n.connsMu.Lock()
	delete(n.conns, c)
	n.connsMu.Unlock()
	c.nc.Close()
}

// acquire borrows a connection within ctx. A caller first takes a token
// of gate, a channel as deep as the pool: waiting there costs no
// allocation (a blocked channel send reuses the runtime's cached waiter),
// whereas puddle's semaphore allocates a waiter per blocked Acquire — three
// allocations per call once callers outnumber connections. Holding a token,
// puddle's Acquire never waits on its semaphore. The token is returned by
// done.
//
// A connection idle for peekIdle or longer is looked at before it is
// lent, and destroyed when the server has closed it meanwhile: another is
// taken instead.
//
// A caller whose context ends while every connection is lent gets an
// exhaustedError; one whose acquire fails to create a connection, an
// Unsent error.
func (n *Node) acquire(ctx context.Context) (*puddle.Resource[*pconn], error) {
	if err := ctx.Err(); err != nil {
		return nil, failure.CtxErr(n.addr, false, err)
	}
	if n.closed.Load() {
		return nil, backend.ErrClosed
	}
	select {
	case n.gate <- struct{}{}:
	default:
		start := time.Now()
		select {
		case n.gate <- struct{}{}:
			n.waits.Add(1)
			n.waited.Add(int64(time.Since(start)))
		case <-ctx.Done():
			n.cancelledWaits.Add(1)
			return nil, &exhaustedError{size: n.opts.Size, addr: n.addr, waited: time.Since(start), err: ctx.Err()}
		case <-n.stop:
			return nil, backend.ErrClosed
		}
	}
	res, err := n.p.Acquire(ctx)
	for err == nil && res.IdleDuration() >= peekIdle && res.Value().closedWhileIdle() {
		// Closed by the server while idle: never lend it (its call would
		// fail, after its request was sent), take another.
		res.Destroy()
		n.broken.Add(1)
		res, err = n.p.Acquire(ctx)
	}
	if err != nil {
		<-n.gate
		switch {
		case ctx.Err() != nil:
			return nil, failure.CtxErr(n.addr, false, ctx.Err())
		case errors.Is(err, puddle.ErrClosedPool), n.closed.Load():
			return nil, backend.ErrClosed
		case errors.Is(err, backend.ErrConnection), errors.Is(err, backend.ErrAuth), errors.Is(err, backend.ErrInvalidArgument):
			return nil, failure.MarkUnsent(err)
		}
		return nil, failure.MarkUnsent(failure.ConnError(n.addr, err))
	}
	return res, nil
}

// exhaustedError is the error of a caller whose context ended while it
// waited for one of a pool's connections, all lent: it wraps the
// context's error, and says so with the pool's size, its server and the
// wait, as in "redisx: pool of 2 connections to 127.0.0.1:7000 exhausted:
// waited 200ms: context deadline exceeded".
type exhaustedError struct {
	size   int
	addr   string
	waited time.Duration
	err    error // the context's
}

func (e *exhaustedError) Error() string {
	w := e.waited.Round(time.Millisecond)
	if w == 0 {
		w = e.waited.Round(time.Microsecond)
	}
	return fmt.Sprintf("redisx: pool of %d connections to %s exhausted: waited %v: %v", e.size, e.addr, w, e.err)
}

func (e *exhaustedError) Unwrap() error { return e.err }

// done gives back the token of a connection released or destroyed.
func (n *Node) done() { <-n.gate }

// Get implements Backend.
func (n *Node) Get(ctx context.Context, key string) ([]byte, error) {
	rp := wire.Reply{Kind: wire.ReplyBulk}
	if err := n.roundTrip(ctx, "get", 0, &rp, func(b []byte) []byte { return wire.AppendGet(b, key) }); err != nil {
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
	return n.roundTrip(ctx, "set", 0, &rp, func(b []byte) []byte { return wire.AppendSet(b, key, value, ttl) })
}

// Del implements Backend.
func (n *Node) Del(ctx context.Context, keys ...string) (int64, error) {
	if len(keys) == 0 {
		return 0, nil
	}
	rp := wire.Reply{Kind: wire.ReplyInt}
	err := n.roundTrip(ctx, "del", 0, &rp, func(b []byte) []byte { return wire.AppendKeys(b, "DEL", keys) })
	return rp.Num, err
}

// MGet implements MultiGetter.
func (n *Node) MGet(ctx context.Context, keys []string) ([][]byte, error) {
	if len(keys) == 0 {
		return [][]byte{}, nil
	}
	rp := wire.Reply{Kind: wire.ReplyBulks, Vals: make([][]byte, len(keys))}
	if err := n.roundTrip(ctx, "mget", 0, &rp, func(b []byte) []byte { return wire.AppendKeys(b, "MGET", keys) }); err != nil {
		return nil, err
	}
	return rp.Vals, nil
}

// MSet implements MultiSetter.
func (n *Node) MSet(ctx context.Context, kv map[string][]byte, ttl time.Duration) error {
	if len(kv) == 0 {
		return nil
	}
	rp := wire.Reply{Kind: wire.ReplyOK}
	return n.roundTrip(ctx, "mset", 0, &rp, func(b []byte) []byte {
		b, rp.N = wire.AppendMSet(b, kv, ttl)
		return b
	})
}

// Do implements Doer. Blocking commands are allowed: the connection is the
// caller's alone for the call, and the read deadline is extended by the
// command's own timeout.
func (n *Node) Do(ctx context.Context, args ...any) (any, error) {
	if _, err := command.CheckCommand(args); err != nil {
		return nil, err
	}
	rp := wire.Reply{Kind: wire.ReplyAny}
	if err := n.roundTrip(ctx, command.ArgName(args, 0), command.BlockTime(args), &rp, func(b []byte) []byte {
		b, _ = wire.AppendArgs(b, args) // cannot fail: command.CheckCommand refused what it cannot encode
		return b
	}); err != nil {
		return nil, err
	}
	return rp.Any, nil
}

// maintain is the health check: every HealthCheckPeriod it closes idle
// connections past MaxIdleTime or MaxLifetime, pings the rest, and tops
// the pool up to MinIdle.
func (n *Node) maintain() {
	defer n.wg.Done()
	t := time.NewTicker(n.opts.HealthCheckPeriod)
	defer t.Stop()
	n.topUp()
	for {
		select {
		case <-n.stop:
			return
		case <-t.C:
		}
		for _, res := range n.p.AcquireAllIdle() {
			expired := (n.opts.MaxIdleTime > 0 && res.IdleDuration() > n.opts.MaxIdleTime) ||
				(n.opts.MaxLifetime > 0 && time.Since(res.CreationTime()) > n.opts.MaxLifetime)
			if expired || !n.ping(res.Value()) {
				res.Destroy()
				continue
			}
			res.ReleaseUnused()
		}
		n.topUp()
	}
}

func (n *Node) ping(c *pconn) bool {
	c.deadline, c.fromTimeout = time.Now().Add(time.Second), false
	c.nc.SetDeadline(c.deadline)
	c.buf = append(c.buf[:0], "*1\r\n$4\r\nPING\r\n"...)
	if _, err := c.nc.Write(c.buf); err != nil {
		return false
	}
	return c.r.ReadOK() == nil
}

func (n *Node) topUp() {
	for i := int(n.p.Stat().IdleResources()); i < n.opts.MinIdle; i++ {
		ctx, cancel := context.WithTimeout(n.life, max(n.cfg.DialTimeout, time.Second))
		err := n.p.CreateResource(ctx)
		cancel()
		if err != nil {
			return
		}
	}
}

// Stats implements Statser.
func (n *Node) Stats() backend.Stats {
	st := n.p.Stat()
	nodes := 1
	if n.closed.Load() {
		nodes = 0
	}
	return backend.Stats{
		Strategy:        "pool",
		Nodes:           nodes,
		Conns:           int(st.TotalResources()),
		InUse:           int(st.AcquiredResources()),
		Idle:            int(st.IdleResources()),
		MaxConns:        int(st.MaxResources()),
		Acquires:        st.AcquireCount(),
		AcquireWait:     st.AcquireDuration() + time.Duration(n.waited.Load()),
		EmptyAcquires:   st.EmptyAcquireCount() + n.waits.Load(),
		CanceledAcquire: st.CanceledAcquireCount() + n.cancelledWaits.Load(),
		Dials:           n.dials.Load(),
		DialErrors:      n.dialErrors.Load(),
		BrokenConns:     n.broken.Load(),
	}
}

// Close implements Backend. It closes the sockets of borrowed connections
// too, so that their calls — a BLPOP with no timeout, say — fail at once
// with backend.ErrClosed, takes back the connections lent by Dedicated
// without waiting for their sessions (a transaction's callback) to end,
// and returns once every connection is gone.
func (n *Node) Close() error {
	if n.closed.Swap(true) {
		return nil
	}
	n.cancel()
	close(n.stop)
	n.connsMu.Lock() // construct and Dedicated, under it, refuse new connections and loans from now on
	for c := range n.conns {
		c.nc.Close()
	}
	loans := make([]*dedicated, 0, len(n.loans))
	for d := range n.loans {
		loans = append(loans, d)
	}
	n.loans = nil
	n.connsMu.Unlock()
	for _, d := range loans {
		d.revoke() // outside connsMu: Release takes d.mu, then connsMu
	}
	n.wg.Wait()
	n.p.Close() // destroys the idle connections, waits for the borrowed ones
	return nil
}

// Exec sends the commands encoded in buf in one write on a borrowed
// connection and decodes their replies into rps, in order. Only a
// connection or context failure is returned, or the refusal of a command
// that the server then closed the connection on (a *wire.CutError); each
// command's own error is in its reply.
func (n *Node) Exec(ctx context.Context, _ []string, buf []byte, rps []wire.Reply) error {
	x, err := n.begin(ctx, 0)
	if err != nil {
		return err
	}
	x.c.buf = append(x.c.buf, buf...)
	return x.end(ctx, "pipeline", x.pipe(ctx, rps))
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
