package strategy

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
	"github.com/redisx-go/kit/internal/resp"
)

// Pool lends each call a connection of its own from a jackc/puddle pool,
// the model of Jedis: acquire within the caller's context, a blocking
// write and read on the caller's goroutine, release. A connection that saw
// a network or protocol error, or whose call was cancelled mid-flight, is
// destroyed rather than returned, so no late reply can reach the next
// borrower.
//
// The zero value is a pool of 10 connections per GOMAXPROCS per node,
// opened on demand, each checked when idle and closed after 30 minutes
// idle.
type Pool struct {
	// Size is the most connections per node. Zero: 10 × GOMAXPROCS (the
	// go-redis default). Callers beyond it wait within their context.
	Size int
	// MinIdle connections per node are kept open and ready. Zero: none.
	MinIdle int
	// MaxIdleTime closes a connection idle for longer. Zero: 30 minutes;
	// negative: never.
	MaxIdleTime time.Duration
	// MaxLifetime closes a connection this long after it was opened, at
	// its next release or health check. Zero: never.
	MaxLifetime time.Duration
	// HealthCheckPeriod is how often idle connections are pinged, expired
	// ones closed and MinIdle restored. Zero: 1 minute.
	HealthCheckPeriod time.Duration
}

// Open implements Strategy. It opens one connection (or MinIdle) to the
// first seed that answers before it returns; on a cluster, the other
// nodes' connections are opened on first use.
func (p Pool) Open(ctx context.Context, cfg Config) (Backend, error) {
	if _, err := p.withDefaults(); err != nil {
		return nil, err
	}
	return openDeployment(ctx, cfg, p)
}

func (p Pool) newNode(cfg Config, addr string) (node, error) {
	n, err := newPoolNode(cfg, addr, p)
	if err != nil {
		return nil, err
	}
	return n, nil
}

func (p Pool) openNode(ctx context.Context, cfg Config, addr string) (node, error) {
	n, err := newPoolNode(cfg, addr, p)
	if err != nil {
		return nil, err
	}
	if err := n.p.CreateResource(ctx); err != nil {
		n.Close()
		if ctx.Err() == nil && !errors.Is(err, ErrConnection) {
			err = connError(addr, err)
		}
		return nil, err
	}
	return n, nil
}

func (p Pool) withDefaults() (Pool, error) {
	switch {
	case p.Size < 0:
		return p, fmt.Errorf("%w: Pool.Size %d is negative", ErrInvalidArgument, p.Size)
	case p.MinIdle < 0:
		return p, fmt.Errorf("%w: Pool.MinIdle %d is negative", ErrInvalidArgument, p.MinIdle)
	case p.MaxLifetime < 0:
		return p, fmt.Errorf("%w: Pool.MaxLifetime %v is negative", ErrInvalidArgument, p.MaxLifetime)
	case p.HealthCheckPeriod < 0:
		return p, fmt.Errorf("%w: Pool.HealthCheckPeriod %v is negative", ErrInvalidArgument, p.HealthCheckPeriod)
	}
	if p.Size == 0 {
		p.Size = 10 * runtime.GOMAXPROCS(0)
	}
	if p.MinIdle > p.Size {
		return p, fmt.Errorf("%w: Pool.MinIdle %d over Size %d", ErrInvalidArgument, p.MinIdle, p.Size)
	}
	if p.MaxIdleTime == 0 {
		p.MaxIdleTime = 30 * time.Minute
	}
	if p.HealthCheckPeriod == 0 {
		p.HealthCheckPeriod = time.Minute
	}
	return p, nil
}

// poolNode is the Pool backend of one node.
type poolNode struct {
	cfg  Config
	addr string
	opts Pool
	p    *puddle.Pool[*pconn]

	closed atomic.Bool
	stop   chan struct{}
	gate   chan struct{} // one token per borrowed connection; see acquire
	wg     sync.WaitGroup

	dials, dialErrors, broken     atomic.Int64
	waits, waited, cancelledWaits atomic.Int64 // callers that waited for a token
}

// pconn is one pooled connection. Only its borrower touches it.
type pconn struct {
	nc       net.Conn
	r        *resp.Reader
	buf      []byte
	deadline time.Time // the deadline currently set on nc
}

func newPoolNode(cfg Config, addr string, opts Pool) (*poolNode, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	n := &poolNode{cfg: cfg, addr: addr, opts: opts, stop: make(chan struct{}), gate: make(chan struct{}, opts.Size)}
	n.p, err = puddle.NewPool(&puddle.Config[*pconn]{
		Constructor: n.construct,
		Destructor:  func(c *pconn) { c.nc.Close() },
		MaxSize:     int32(opts.Size),
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidArgument, err)
	}
	n.wg.Add(1)
	go n.maintain()
	return n, nil
}

// construct dials a connection. puddle runs it detached from the
// acquirer's cancellation; the dial timeout bounds it.
func (n *poolNode) construct(ctx context.Context) (*pconn, error) {
	nc, err := dial(ctx, &n.cfg, n.addr)
	n.dials.Add(1)
	if err != nil {
		n.dialErrors.Add(1)
		return nil, err
	}
	return &pconn{nc: nc, r: resp.NewReader(nc, 16<<10), buf: make([]byte, 0, 512)}, nil
}

// acquire borrows a connection within ctx. A caller first takes a token
// of gate, a channel as deep as the pool: waiting there costs no
// allocation (a blocked channel send reuses the runtime's cached waiter),
// whereas puddle's semaphore allocates a waiter per blocked Acquire — three
// allocations per call once callers outnumber connections. Holding a token,
// puddle's Acquire never waits on its semaphore. The token is returned by
// done.
func (n *poolNode) acquire(ctx context.Context) (*puddle.Resource[*pconn], error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if n.closed.Load() {
		return nil, ErrClosed
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
			return nil, ctx.Err()
		case <-n.stop:
			return nil, ErrClosed
		}
	}
	res, err := n.p.Acquire(ctx)
	if err != nil {
		<-n.gate
		switch {
		case errors.Is(err, puddle.ErrClosedPool):
			return nil, ErrClosed
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case errors.Is(err, ErrConnection):
			return nil, err
		}
		return nil, connError(n.addr, err)
	}
	return res, nil
}

// done gives back the token of a connection released or destroyed.
func (n *poolNode) done() { <-n.gate }

// exchange is one borrowed round trip: it arms the deadline and the
// context's cancellation, writes c.buf, lets read decode the reply, then
// releases the connection — or destroys it after a stream error or a
// cancellation, since its stream may hold a late reply.
type exchange struct {
	n    *poolNode
	res  *puddle.Resource[*pconn]
	c    *pconn
	stop func() bool
}

func (n *poolNode) begin(ctx context.Context) (exchange, error) {
	res, err := n.acquire(ctx)
	if err != nil {
		return exchange{}, err
	}
	c := res.Value()
	x := exchange{n: n, res: res, c: c}
	deadline, ok := ctx.Deadline()
	if !ok && n.cfg.ReadTimeout > 0 {
		// Without a context deadline the read timeout bounds the call.
		// Extending the socket deadline only when half of it is used
		// saves a timer update per call; the bound is then between half
		// and all of ReadTimeout.
		now := time.Now()
		if c.deadline.Sub(now) > n.cfg.ReadTimeout/2 {
			deadline = c.deadline
		} else {
			deadline = now.Add(n.cfg.ReadTimeout)
		}
	}
	if !deadline.Equal(c.deadline) {
		c.nc.SetDeadline(deadline)
		c.deadline = deadline
	}
	if ctx.Done() != nil {
		// Cancellation without a deadline: unblock the socket at once.
		x.stop = context.AfterFunc(ctx, func() { c.nc.SetDeadline(aLongTimeAgo) })
	}
	c.buf = c.buf[:0]
	return x, nil
}

var aLongTimeAgo = time.Unix(1, 0)

// contextError returns the context's error when ctx ended or when err is
// the socket deadline that mirrors the context's deadline (the socket's
// timer may fire a moment before the context's own).
func contextError(ctx context.Context, err error) error {
	if e := ctx.Err(); e != nil {
		return e
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		if d, ok := ctx.Deadline(); ok && !time.Now().Before(d.Add(-time.Millisecond)) {
			return context.DeadlineExceeded
		}
	}
	return nil
}

// send writes the encoded request.
func (x *exchange) send() error {
	_, err := x.c.nc.Write(x.c.buf)
	return err
}

// end releases or destroys the connection and turns err into the error to
// return: a context error when the context ended, ErrConnection for
// stream errors, reply errors wrapped with cmd.
func (x *exchange) end(ctx context.Context, cmd string, err error) error {
	cancelled := x.stop != nil && !x.stop()
	if cancelled || resp.Fatal(err) {
		x.c.deadline = time.Time{}
		x.res.Destroy()
		x.n.done()
		x.n.broken.Add(1)
		if err := contextError(ctx, err); err != nil {
			return err
		}
		return connError(x.n.addr, err)
	}
	if cap(x.c.buf) > 1<<20 {
		x.c.buf = make([]byte, 0, 512)
	}
	if lt := x.n.opts.MaxLifetime; lt > 0 && time.Since(x.res.CreationTime()) > lt {
		x.res.Destroy()
	} else {
		x.res.Release()
	}
	x.n.done()
	return replyError(cmd, err)
}

// Get implements Backend.
func (n *poolNode) Get(ctx context.Context, key string) ([]byte, error) {
	x, err := n.begin(ctx)
	if err != nil {
		return nil, err
	}
	x.c.buf = appendGet(x.c.buf, key)
	var v []byte
	if err = x.send(); err == nil {
		v, err = x.c.r.ReadBulk()
	}
	if err = x.end(ctx, "get", err); err != nil {
		return nil, err
	}
	if v == nil {
		return nil, ErrNotFound
	}
	return v, nil
}

// Set implements Backend.
func (n *poolNode) Set(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	x, err := n.begin(ctx)
	if err != nil {
		return err
	}
	x.c.buf = appendSet(x.c.buf, key, value, ttl)
	if err = x.send(); err == nil {
		err = x.c.r.ReadOK()
	}
	return x.end(ctx, "set", err)
}

// Del implements Backend.
func (n *poolNode) Del(ctx context.Context, keys ...string) (int64, error) {
	if len(keys) == 0 {
		return 0, nil
	}
	x, err := n.begin(ctx)
	if err != nil {
		return 0, err
	}
	x.c.buf = appendKeys(x.c.buf, "DEL", keys)
	var v int64
	if err = x.send(); err == nil {
		v, err = x.c.r.ReadInt()
	}
	return v, x.end(ctx, "del", err)
}

// MGet implements MultiGetter.
func (n *poolNode) MGet(ctx context.Context, keys []string) ([][]byte, error) {
	if len(keys) == 0 {
		return [][]byte{}, nil
	}
	x, err := n.begin(ctx)
	if err != nil {
		return nil, err
	}
	x.c.buf = appendKeys(x.c.buf, "MGET", keys)
	vs := make([][]byte, len(keys))
	if err = x.send(); err == nil {
		err = x.c.r.ReadBulks(vs)
	}
	if err = x.end(ctx, "mget", err); err != nil {
		return nil, err
	}
	return vs, nil
}

// MSet implements MultiSetter.
func (n *poolNode) MSet(ctx context.Context, kv map[string][]byte, ttl time.Duration) error {
	if len(kv) == 0 {
		return nil
	}
	x, err := n.begin(ctx)
	if err != nil {
		return err
	}
	rp := reply{kind: replyOK}
	x.c.buf, rp.n = appendMSet(x.c.buf, kv, ttl)
	if err = x.send(); err == nil {
		if err = rp.read(x.c.r); err == nil {
			err = rp.err
		}
	}
	return x.end(ctx, "mset", err)
}

// Do implements Doer. Blocking commands are allowed: the connection is the
// caller's alone for the call.
func (n *poolNode) Do(ctx context.Context, args ...any) (any, error) {
	if _, err := checkCommand(args); err != nil {
		return nil, err
	}
	x, err := n.begin(ctx)
	if err != nil {
		return nil, err
	}
	x.c.buf, _ = appendArgs(x.c.buf, args)
	var v any
	if err = x.send(); err == nil {
		v, err = x.c.r.ReadAny()
	}
	if err = x.end(ctx, argName(args, 0), err); err != nil {
		return nil, err
	}
	return v, nil
}

// maintain is the health check: every HealthCheckPeriod it closes idle
// connections past MaxIdleTime or MaxLifetime, pings the rest, and tops
// the pool up to MinIdle.
func (n *poolNode) maintain() {
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

func (n *poolNode) ping(c *pconn) bool {
	c.deadline = time.Now().Add(time.Second)
	c.nc.SetDeadline(c.deadline)
	c.buf = append(c.buf[:0], "*1\r\n$4\r\nPING\r\n"...)
	if _, err := c.nc.Write(c.buf); err != nil {
		return false
	}
	return c.r.ReadOK() == nil
}

func (n *poolNode) topUp() {
	for i := int(n.p.Stat().IdleResources()); i < n.opts.MinIdle; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), max(n.cfg.DialTimeout, time.Second))
		err := n.p.CreateResource(ctx)
		cancel()
		if err != nil {
			return
		}
	}
}

// Stats implements Statser.
func (n *poolNode) Stats() Stats {
	st := n.p.Stat()
	return Stats{
		Strategy:        "pool",
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

// Close implements Backend. It waits for borrowed connections to come
// back, as puddle's Close does.
func (n *poolNode) Close() error {
	if n.closed.Swap(true) {
		return nil
	}
	close(n.stop)
	n.wg.Wait()
	n.p.Close()
	return nil
}

// exec sends the commands encoded in buf in one write on a borrowed
// connection and decodes their replies into rps, in order. Only a
// connection or context failure is returned; each command's own error is
// in its reply.
func (n *poolNode) exec(ctx context.Context, _ string, buf []byte, rps []reply) error {
	x, err := n.begin(ctx)
	if err != nil {
		return err
	}
	x.c.buf = append(x.c.buf, buf...)
	if err = x.send(); err == nil {
		err = readAll(x.c.r, rps)
	}
	return x.end(ctx, "pipeline", err)
}

func (n *poolNode) address() string { return n.addr }
