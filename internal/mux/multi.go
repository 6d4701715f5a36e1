package mux

import (
	"context"
	"net"

	"github.com/redisx-go/kit/backend"
	"github.com/redisx-go/kit/internal/dial"
	"github.com/redisx-go/kit/internal/failure"
	"github.com/redisx-go/kit/internal/wire"
)

// Pipelines, dedicated connections and session dials on a Multiplexed
// node.

// DoMulti implements MultiDoer. The batch joins the shared pipeline as one
// call: its commands are encoded back to back into the write buffer of
// one connection — the one the ordering rule of route.go gives every key
// of every command, found by the server's key specifications — and their
// replies read in order; callers' commands before and after it on that
// connection go in the same writes. A batch holding a blocking command
// (BLPOP, XREAD BLOCK…) goes whole to a dedicated connection of the
// blocking pool instead, as Do sends such a command, so that it cannot
// stall the shared connection.
func (n *Node) DoMulti(ctx context.Context, cmds ...[]any) []backend.Result {
	_, blocking, res, ok := wire.CheckMulti(cmds)
	switch {
	case !ok:
		return res
	case len(cmds) == 0:
		return []backend.Result{}
	case blocking:
		side, err := n.sidePool()
		if err != nil {
			return failure.FailAll(len(cmds), err)
		}
		return side.DoMulti(ctx, cmds...)
	}
	size := 0
	if len(cmds) > 64 {
		size = wire.SizeOf(cmds)
	}
	rps := wire.MultiReplies(len(cmds))
	if err := n.pipeline(ctx, cmds, size, rps, func(b []byte) []byte { return wire.AppendMulti(b, cmds) }); err != nil {
		if cut, ok := err.(*wire.CutError); ok {
			// Refused and closed: the commands before the refused one
			// have their replies.
			return wire.CutResults(cmds, rps, cut)
		}
		return failure.FailAll(len(cmds), err)
	}
	return wire.Results(cmds, rps)
}

// pipeline is Exec with the commands cmds encoded by enc straight into
// the connection's write buffer (size: their size when big, else 0): one
// call awaiting len(rps) replies.
func (n *Node) pipeline(ctx context.Context, cmds [][]any, size int, rps []wire.Reply, enc func([]byte) []byte) error {
	if n.adaptive {
		n.routing.callers.Add(1)
		defer n.routing.callers.Add(-1)
	}
	cl := n.calls.get(ctx)
	cl.cmds = cmds
	c, err := n.enqueue(ctx, cl, false)
	if err != nil {
		return err
	}
	if size > chunkSize {
		c.fit(size)
	}
	c.out.cur = enc(c.out.cur)
	cl.Kind, cl.pipe, cl.lead = wire.ReplyPipe, rps, true
	leads := c.push(cl, int64(len(rps)), true)
	if err := c.await(ctx, cl, leads); err != nil {
		return n.callError("pipeline", err)
	}
	n.calls.put(cl)
	return nil
}

// Dedicated implements Dedicator: a connection of the node's pool for
// blocking commands (Options.Blocking of them), never a shared one.
func (n *Node) Dedicated(ctx context.Context, keys []string) (backend.Dedicated, error) {
	side, err := n.sidePool()
	if err != nil {
		return nil, err
	}
	return side.Dedicated(ctx, keys)
}

// DialSession implements SessionDialer: a new connection to the node,
// neither shared nor pooled.
func (n *Node) DialSession(ctx context.Context, _ int, hello func(net.Conn) error) (net.Conn, error) {
	if n.closed.Load() {
		return nil, backend.ErrClosed
	}
	return dial.Session(ctx, &n.cfg, n.addr, hello)
}
