package pool

import (
	"context"
	"errors"
	"net"
	"time"

	"github.com/jackc/puddle/v2"
	"github.com/redisx-go/kit/backend"
	"github.com/redisx-go/kit/internal/command"
	"github.com/redisx-go/kit/internal/failure"
	"github.com/redisx-go/kit/internal/resp"
	"github.com/redisx-go/kit/internal/wire"
)

// exchange is one borrowed round trip: it arms the deadline and the
// context's cancellation, writes c.buf, lets read decode the reply, then
// releases the connection — or destroys it after a stream error or a
// cancellation, since its stream may hold a late reply.
type exchange struct {
	n      *Node
	res    *puddle.Resource[*pconn]
	c      *pconn
	stop   func() bool
	block  time.Duration // the command's block time (see command.BlockTime)
	unsent bool          // the write failed with nothing written
	cut    bool          // the peer cut the write part way: the replies are read anyway (see listen)
	closes bool          // a reply the server may close the connection after (see wire.Closes)
}

// begin borrows a connection for a command that may block the server's
// answer for block (see command.BlockTime).
func (n *Node) begin(ctx context.Context, block time.Duration) (exchange, error) {
	res, err := n.acquire(ctx)
	if err != nil {
		return exchange{}, err
	}
	c := res.Value()
	x := exchange{n: n, res: res, c: c, block: block}
	c.arm(ctx, n.cfg.ReadTimeout, block)
	if ctx.Done() != nil {
		// Cancellation without a deadline: unblock the socket at once.
		x.stop = context.AfterFunc(ctx, func() { c.nc.SetDeadline(aLongTimeAgo) })
	}
	c.buf = c.buf[:0]
	return x, nil
}

// arm sets the socket deadline of a call starting now, by the rule of
// Config.ReadTimeout: the context's deadline when it has one; otherwise
// timeout plus the command's block time, and none at all for a command
// that blocks forever or when timeout is not positive.
//
// A deadline set from timeout alone is kept for the next calls while it is
// still at least timeout away, which saves a timer update per call: it is
// set a quarter of timeout further than needed, so such a call gets
// between timeout and 1.25 × timeout, never less. A deadline that came
// from a context or a block time is never reused.
func (c *pconn) arm(ctx context.Context, timeout, block time.Duration) {
	deadline, ok := ctx.Deadline()
	fromTimeout := false
	switch {
	case ok:
	case timeout <= 0 || block == command.BlockForever:
		deadline = time.Time{}
	case block > 0:
		deadline = time.Now().Add(timeout + block)
	default:
		now := time.Now()
		if c.fromTimeout && c.deadline.Sub(now) >= timeout {
			return
		}
		deadline, fromTimeout = now.Add(timeout+timeout/4), true
	}
	c.fromTimeout = fromTimeout
	if !deadline.Equal(c.deadline) {
		c.nc.SetDeadline(deadline)
		c.deadline = deadline
	}
}

// aLongTimeAgo is a deadline in the past: it unblocks a socket at once.
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

// send writes the encoded request and returns once it is sent (see
// pconn.request). A write that failed before its first byte left sets
// x.unsent: the request provably never reached the server. One that the
// peer cut part way sets x.cut: the server may have refused the request
// and closed, and its replies are read all the same (see listen).
func (x *exchange) send(ctx context.Context) error {
	n, err := x.c.request(ctx, &x.n.cfg, x.block)
	x.unsent = err != nil && n == 0
	x.cut = err != nil && x.c.listen(ctx, n, err)
	return err
}

// end releases or destroys the connection and turns err into the error to
// return: a context error when the context ended, backend.ErrClosed when Close
// closed the socket, the server's refusal of a request it then closed
// (a *wire.CutError, see refused), backend.ErrConnection for other stream
// errors, reply errors wrapped with cmd.
func (x *exchange) end(ctx context.Context, cmd string, err error) error {
	cancelled := x.stop != nil && !x.stop()
	if cancelled || resp.Fatal(err) {
		x.res.Destroy()
		x.n.done()
		if err := contextError(ctx, err); err != nil {
			x.n.broken.Add(1)
			return failure.CtxErr(x.n.addr, !x.unsent, err)
		}
		if x.n.closed.Load() {
			return backend.ErrClosed
		}
		x.n.broken.Add(1)
		if cut, ok := err.(*wire.CutError); ok {
			return x.n.refused(cmd, cut)
		}
		if x.unsent {
			return failure.MarkUnsent(failure.ConnError(x.n.addr, err))
		}
		return failure.ConnError(x.n.addr, err)
	}
	if cap(x.c.buf) > 1<<20 {
		x.c.buf = make([]byte, 0, 512)
	}
	if lt := x.n.opts.MaxLifetime; x.closes || lt > 0 && time.Since(x.res.CreationTime()) > lt {
		// Past its age, after its call: never during one. Or after a
		// reply the server may have closed it after: lent again, it
		// would fail its next borrower's call.
		x.res.Destroy()
	} else {
		x.res.Release()
	}
	x.n.done()
	return failure.ReplyError(cmd, err)
}

// roundTrip is one command on a borrowed connection: enc encodes it, rp
// (whose kind, and for a run of SETs n, say what to expect) receives its
// reply. block is the command's own block time (see command.BlockTime). It returns
// the context's error, the connection's failure, or rp's reply error
// wrapped with cmd.
func (n *Node) roundTrip(ctx context.Context, cmd string, block time.Duration, rp *wire.Reply, enc func([]byte) []byte) error {
	x, err := n.begin(ctx, block)
	if err != nil {
		return err
	}
	x.c.buf = enc(x.c.buf)
	if err = x.send(ctx); err == nil || x.cut {
		if rerr := rp.Read(x.c.r); err == nil && rerr == nil {
			err = rp.Err
			x.closes = wire.Closes(err)
		} else {
			err = wire.Cut(err, rerr, rp.Err, 1)
		}
	}
	return x.end(ctx, cmd, err)
}

// pipe writes the pipeline in x.c.buf and reads its replies into rps, in
// order. It returns nil when all were read (each command's own error is
// in its reply), a *wire.CutError when the server refused one of the
// commands and closed, or the stream's failure.
func (x *exchange) pipe(ctx context.Context, rps []wire.Reply) error {
	err := x.send(ctx)
	if err != nil && !x.cut {
		return err
	}
	n, rerr := wire.ReadSome(x.c.r, rps)
	var last error
	if n > 0 {
		last = rps[n-1].Err
	}
	x.closes = wire.Closing(rps[:n])
	return wire.Cut(err, rerr, last, n)
}

// refused words cut, a request's refusal as wire.Cut returns it, raw: the
// refusal wrapped with cmd, the refused command's name (or "pipeline"),
// and the failure of the connection, which the server closed, for the
// commands after it.
func (n *Node) refused(cmd string, cut *wire.CutError) error {
	return &wire.CutError{N: cut.N, Refusal: failure.ReplyError(cmd, cut.Refusal), Err: failure.ConnError(n.addr, cut.Err)}
}
