package pool

import (
	"context"
	"errors"
	"net"
	"sync"
	"time"

	"github.com/jackc/puddle/v2"
	"github.com/redisx-go/kit/backend"
	"github.com/redisx-go/kit/internal/command"
	"github.com/redisx-go/kit/internal/dial"
	"github.com/redisx-go/kit/internal/failure"
	"github.com/redisx-go/kit/internal/wire"
)

// Pipelines, dedicated connections and session dials on a Pool node.

// DoMulti implements MultiDoer: the commands in one write on one borrowed
// connection, their replies read in order. Blocking commands are allowed:
// the read deadline is extended by the sum of their block times.
func (n *Node) DoMulti(ctx context.Context, cmds ...[]any) []backend.Result {
	classes, _, res, ok := wire.CheckMulti(cmds)
	if !ok {
		return res
	}
	if len(cmds) == 0 {
		return []backend.Result{}
	}
	rps := wire.MultiReplies(len(cmds))
	if err := n.ExecBlocking(ctx, command.BlockTimeAll(cmds, classes), func(b []byte) []byte { return wire.AppendMulti(b, cmds) }, rps); err != nil {
		if cut, ok := err.(*wire.CutError); ok {
			// Refused and closed: the commands before the refused one
			// have their replies.
			return wire.CutResults(cmds, rps, cut)
		}
		return failure.FailAll(len(cmds), err)
	}
	return wire.Results(cmds, rps)
}

// ExecBlocking is Exec for a pipeline that may block the server's answer
// for block (see command.BlockTimeAll), encoded by enc into the connection's
// buffer.
func (n *Node) ExecBlocking(ctx context.Context, block time.Duration, enc func([]byte) []byte, rps []wire.Reply) error {
	x, err := n.begin(ctx, block)
	if err != nil {
		return err
	}
	x.c.buf = enc(x.c.buf)
	return x.end(ctx, "pipeline", x.pipe(ctx, rps))
}

// Dedicated implements Dedicator: one of the pool's connections, lent
// until Release. keys are not looked at: a node serves every key. Close
// does not wait for it: it takes the connection back (see revoke).
func (n *Node) Dedicated(ctx context.Context, _ []string) (backend.Dedicated, error) {
	res, err := n.acquire(ctx)
	if err != nil {
		return nil, err
	}
	d := &dedicated{n: n, res: res, c: res.Value()}
	n.connsMu.Lock()
	if n.closed.Load() { // Close has taken back the loans already
		n.connsMu.Unlock()
		res.Destroy()
		n.done()
		return nil, backend.ErrClosed
	}
	n.loans[d] = struct{}{}
	n.connsMu.Unlock()
	return d, nil
}

// dedicated is a connection of the pool lent for a session. Its borrower
// uses it from one goroutine at a time; Close, from another, may take it
// back meanwhile (revoke).
type dedicated struct {
	n      *Node
	res    *puddle.Resource[*pconn]
	c      *pconn
	broken bool // a stream error or a cancellation: in doubt; the borrower's
	// closes says a reply the server may close the connection after was
	// read (see wire.Closes): the session goes on, its connection is not
	// lent again.
	closes bool

	mu   sync.Mutex // guards done, and res from the moment done is set
	done bool       // released, or taken back by Close
}

// revoke takes the connection back from its borrower, for Close: the
// socket is closed already, the resource is destroyed, and the
// borrower's next calls return backend.ErrClosed; its Release does nothing.
// A session may last as long as its borrower wants (a transaction's
// callback), and Close must not wait for it.
func (d *dedicated) revoke() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.done {
		return
	}
	d.done = true
	d.res.Destroy()
	d.n.done()
}

func (d *dedicated) Slot() int { return -1 }

// DoMulti implements backend.Dedicated. A call whose context ends mid-way
// breaks the connection: its stream may hold late replies.
func (d *dedicated) DoMulti(ctx context.Context, cmds ...[]any) ([]backend.Result, error) {
	d.mu.Lock()
	done := d.done
	d.mu.Unlock()
	switch {
	case done:
		return nil, backend.ErrClosed
	case d.broken:
		return nil, failure.MarkUnsent(failure.ConnError(d.n.addr, errBroken))
	}
	if err := ctx.Err(); err != nil {
		return nil, failure.CtxErr(d.n.addr, false, err)
	}
	if d.n.closed.Load() {
		return nil, backend.ErrClosed
	}
	for _, args := range cmds {
		if err := command.CheckArgs(args); err != nil {
			return nil, failure.MarkUnsent(err)
		}
	}
	c := d.c
	block := command.BlockTimeAll(cmds, nil)
	c.arm(ctx, d.n.cfg.ReadTimeout, block)
	var stop func() bool
	if ctx.Done() != nil {
		stop = context.AfterFunc(ctx, func() { c.nc.SetDeadline(aLongTimeAgo) })
	}
	c.buf = wire.AppendMulti(c.buf[:0], cmds)
	n, err := c.request(ctx, &d.n.cfg, block)
	unsent := err != nil && n == 0
	rps := wire.MultiReplies(len(cmds))
	if err == nil || c.listen(ctx, n, err) {
		k, rerr := wire.ReadSome(c.r, rps)
		var last error
		if k > 0 {
			last = rps[k-1].Err
		}
		d.closes = d.closes || wire.Closing(rps[:k])
		err = wire.Cut(err, rerr, last, k)
	}
	if stop != nil && !stop() {
		d.broken = true
		c.deadline = time.Time{}
		return nil, failure.CtxErr(d.n.addr, !unsent, ctx.Err())
	}
	if err != nil {
		d.broken = true
		if e := contextError(ctx, err); e != nil {
			return nil, failure.CtxErr(d.n.addr, !unsent, e)
		}
		if d.n.closed.Load() {
			return nil, backend.ErrClosed
		}
		if cut, ok := err.(*wire.CutError); ok {
			// The session's call fails with the refusal: a transaction's
			// EXEC, after it, never ran.
			return nil, d.n.refused(command.ArgName(cmds[cut.N-1], 0), cut)
		}
		err = failure.ConnError(d.n.addr, err)
		if unsent {
			err = failure.MarkUnsent(err)
		}
		return nil, err
	}
	if cap(c.buf) > 1<<20 {
		c.buf = make([]byte, 0, 512)
	}
	return wire.Results(cmds, rps), nil
}

// Release implements backend.Dedicated.
func (d *dedicated) Release(reuse bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.done {
		return
	}
	d.done = true
	d.n.connsMu.Lock()
	delete(d.n.loans, d)
	d.n.connsMu.Unlock()
	if d.broken || d.closes || !reuse || d.n.closed.Load() {
		if d.broken {
			d.n.broken.Add(1)
		}
		d.res.Destroy()
	} else if lt := d.n.opts.MaxLifetime; lt > 0 && time.Since(d.res.CreationTime()) > lt {
		d.res.Destroy()
	} else {
		d.res.Release()
	}
	d.n.done()
}

// DialSession implements SessionDialer: a new connection to the node,
// not one of the pool's.
func (n *Node) DialSession(ctx context.Context, _ int, hello func(net.Conn) error) (net.Conn, error) {
	if n.closed.Load() {
		return nil, backend.ErrClosed
	}
	return dial.Session(ctx, &n.cfg, n.addr, hello)
}

// errBroken is the failure of a dedicated connection used again after it
// broke.
var errBroken = errors.New("connection in doubt after an earlier failure")
