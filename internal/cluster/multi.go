package cluster

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"

	"github.com/redisx-go/kit/backend"
	"github.com/redisx-go/kit/internal/command"
	"github.com/redisx-go/kit/internal/dial"
	"github.com/redisx-go/kit/internal/failure"
	"github.com/redisx-go/kit/internal/topology"
	"github.com/redisx-go/kit/internal/transport"
	"github.com/redisx-go/kit/internal/wire"
)

// Pipelines, transactions' connections and Pub/Sub dials on a cluster.
//
// DoMulti routes each command of a batch as Do would — by the slot of its
// keys, which must share one (the batch is refused otherwise, before
// anything is sent) — groups the commands by master, in the batch's
// order, and sends every master's group as one pipeline, all masters at
// once (runPipelines, as SlotGrouped's MGET). The commands a master
// redirects (MOVED, ASK) are sent again, by master, in a next round —
// MOVED ones through the patched map, ASK ones to the importing node,
// each after ASKING — at most maxRedirects rounds. Commands without keys
// that any master answers (TIME, ECHO, EVAL with no key) join the
// pipeline of one master picked at random for the batch; those that go
// to every master (DBSIZE, FLUSHALL, PING…) and commands the table does
// not know run alone, with Do, after the pipelines. A batch holding a
// blocking command is sent by each master's node DoMulti instead (its
// blocking pool, on Multiplexed), redirects then followed one command at
// a time.

// aloneSlot marks a command of a batch that runs alone, with Do.
const aloneSlot = -1

// planMulti returns the slot of each command of cmds (aloneSlot for those
// that run alone) and its keys; a command whose keys span slots refuses
// the batch (bad is its index).
func planMulti(cmds [][]any) (slots []int, keys [][]string, bad int, err error) {
	slots = make([]int, len(cmds))
	keys = make([][]string, len(cmds))
	anySlot := -1 // the slot of one master for the batch's keyless commands
	var buf [8]int
	for i, args := range cmds {
		spec := command.Lookup(args)
		if spec == nil {
			slots[i] = aloneSlot
			continue
		}
		if s, ok := publishSlot(spec, args); ok {
			slots[i] = s
			continue
		}
		pos, ok := spec.AppendKeys(buf[:0], args)
		if !ok || len(pos) == 0 {
			switch spec.Request {
			case command.AllShards, command.AllNodes, command.SpecialRequest:
				slots[i] = aloneSlot
			default:
				if anySlot < 0 {
					anySlot = rand.IntN(topology.Slots)
				}
				slots[i] = anySlot
			}
			continue
		}
		ks := make([]string, len(pos))
		for j, p := range pos {
			ks[j] = command.Arg(args, p)
		}
		s, err := oneSlot(commandName(args, spec), ks, pos, spec.Request == command.MultiShard)
		if err != nil {
			return nil, nil, i, err
		}
		slots[i], keys[i] = s, ks
	}
	return slots, keys, -1, nil
}

// multiGroup is the part of a batch one node gets in a round: the
// indexes of its commands, and which of them follow an ASK redirect.
type multiGroup struct {
	m    *member
	cmds []int
	ask  []bool
}

// DoMulti implements MultiDoer; see above.
func (c *Router) DoMulti(ctx context.Context, cmds ...[]any) []backend.Result {
	_, blocking, res, ok := wire.CheckMulti(cmds)
	switch {
	case !ok:
		return res
	case len(cmds) == 0:
		return []backend.Result{}
	case c.closed.Load():
		return failure.FailAll(len(cmds), backend.ErrClosed)
	}
	slots, keys, bad, err := planMulti(cmds)
	if err != nil {
		return failure.Refused(len(cmds), bad, err)
	}
	res = make([]backend.Result, len(cmds))
	var pending, alone []int
	for i, s := range slots {
		if s == aloneSlot {
			alone = append(alone, i)
		} else {
			pending = append(pending, i)
		}
	}
	asks := map[int]string{} // a command redirected by ASK → the importing node
	for round := 0; len(pending) > 0 && ctx.Err() == nil; round++ {
		groups := c.groupMulti(pending, slots, asks, res)
		if blocking {
			c.sendBlocking(ctx, groups, cmds, res)
		} else {
			c.sendPipelines(ctx, groups, cmds, keys, res)
		}
		for _, g := range groups {
			g.m.Release()
		}
		if blocking {
			// Redirected commands one at a time, through the routing of
			// Do, which follows redirects.
			for _, i := range pending {
				if _, ok := redirectOf(res[i].Err); ok || res[i].Err == errRetired {
					res[i].Value, res[i].Err = c.doSlot(ctx, slots[i], keys[i], cmds[i])
				}
			}
			break
		}
		pending, asks = c.redirected(pending, groups, res, round == maxRedirects)
	}
	if err := ctx.Err(); err != nil {
		// The context ended before these were sent, or sent again after a
		// redirect: each gets its error, none is left without a result.
		top := c.state.Load()
		for _, i := range pending {
			res[i] = backend.Result{Err: failure.CtxErr(top.master(slots[i]).address(), false, err)}
		}
	}
	for _, i := range alone {
		res[i].Value, res[i].Err = c.Do(ctx, cmds[i]...)
	}
	return res
}

// groupMulti groups the commands of pending by the node that gets them
// this round, in the batch's order, each node acquired (the caller
// releases them): the importing node of an ASK, otherwise the slot's
// master. A command whose slot no master serves fails with
// errSlotUnserved.
func (c *Router) groupMulti(pending, slots []int, asks map[int]string, res []backend.Result) []*multiGroup {
	top := c.state.Load()
	var groups []*multiGroup
	index := map[*member]*multiGroup{}
	for _, i := range pending {
		var m *member
		addr, ask := asks[i]
		if ask {
			var err error
			if m, err = c.acquireAddr(addr); err != nil {
				res[i] = backend.Result{Err: err}
				continue
			}
		} else if m = top.master(slots[i]); m == nil {
			c.triggerRefresh()
			res[i] = backend.Result{Err: errSlotUnserved}
			continue
		}
		g := index[m]
		switch {
		case g != nil:
			if ask {
				m.Release() // held once for the group
			}
		case ask || m.Acquire():
			g = &multiGroup{m: m}
			index[m] = g
			groups = append(groups, g)
		default:
			// Retired since the map was loaded: the next round routes it
			// through the new map.
			res[i] = backend.Result{Err: errRetired}
			continue
		}
		g.cmds = append(g.cmds, i)
		g.ask = append(g.ask, ask)
	}
	return groups
}

// errRetired marks a command of a batch whose node left the map before it
// was sent: it is routed again, through the new map.
var errRetired = failure.MarkUnsent(fmt.Errorf("%w: node left the slot map before the command was sent", backend.ErrConnection))

// sendPipelines sends every group as one pipeline, all at once, and
// stores each command's result.
func (c *Router) sendPipelines(ctx context.Context, groups []*multiGroup, cmds [][]any, keys [][]string, res []backend.Result) {
	nodes := make([]transport.Node, len(groups))
	nodeKeys := make([][]string, len(groups))
	bufs := make([][]byte, len(groups))
	rps := make([][]wire.Reply, len(groups))
	for j, g := range groups {
		nodes[j] = g.m.n
		var buf []byte
		var ks []string
		rp := make([]wire.Reply, 0, len(g.cmds))
		for k, i := range g.cmds {
			if g.ask[k] {
				buf = append(buf, askingCmd...)
				rp = append(rp, wire.Reply{Kind: wire.ReplyOK})
			}
			buf, _ = wire.AppendArgs(buf, cmds[i]) // checked by DoMulti
			rp = append(rp, wire.Reply{Kind: wire.ReplyAny})
			ks = append(ks, keys[i]...)
		}
		bufs[j], rps[j], nodeKeys[j] = buf, rp, ks
	}
	errs := runPipelines(ctx, nodes, nodeKeys, bufs, rps)
	for j, g := range groups {
		r := 0
		for k, i := range g.cmds {
			if errs[j] != nil {
				res[i] = backend.Result{Err: errs[j]}
				continue
			}
			if g.ask[k] {
				if e := rps[j][r].Err; e != nil {
					res[i] = backend.Result{Err: failure.ReplyError("asking", e)}
					r += 2
					continue
				}
				r++
			}
			rp := &rps[j][r]
			r++
			if rp.Err != nil {
				res[i] = backend.Result{Err: failure.ReplyError(command.ArgName(cmds[i], 0), rp.Err)}
				continue
			}
			res[i] = backend.Result{Value: rp.Any}
		}
		if errs[j] != nil {
			c.refreshAfter(errs[j])
		}
	}
}

// sendBlocking sends each group with its node's DoMulti, all at once. A
// node whose commands failed for want of a connection has the map
// reloaded, as sendPipelines does.
func (c *Router) sendBlocking(ctx context.Context, groups []*multiGroup, cmds [][]any, res []backend.Result) {
	fanOut(len(groups), func(j int) {
		g := groups[j]
		sub := make([][]any, len(g.cmds))
		for k, i := range g.cmds {
			sub[k] = cmds[i]
		}
		var failed error
		for k, r := range g.m.n.DoMulti(ctx, sub...) {
			res[g.cmds[k]] = r
			if failed == nil && errors.Is(r.Err, backend.ErrConnection) {
				failed = r.Err
			}
		}
		if failed != nil {
			c.refreshAfter(failed)
		}
	})
}

// redirected returns the commands of pending to send again in the next
// round, and the importing nodes of those redirected by ASK: MOVED
// patches the map (once per slot), a command whose node was retired goes
// through the new map. On the last round, redirects are left as the
// commands' errors.
func (c *Router) redirected(pending []int, groups []*multiGroup, res []backend.Result, last bool) ([]int, map[int]string) {
	if last {
		return nil, nil
	}
	from := map[int]string{} // command → the node that replied
	for _, g := range groups {
		for _, i := range g.cmds {
			from[i] = g.m.n.Address()
		}
	}
	var again []int
	asks := map[int]string{}
	patched := map[int]bool{}
	for _, i := range pending {
		if res[i].Err == errRetired {
			again = append(again, i)
			continue
		}
		rd, ok := redirectOf(res[i].Err)
		if !ok {
			continue
		}
		c.redirects.Add(1)
		addr := topology.FullAddr(rd.Addr, from[i])
		if rd.Ask {
			asks[i] = addr
		} else if !patched[rd.Slot] {
			patched[rd.Slot] = true
			c.moved(rd.Slot, addr)
		}
		again = append(again, i)
	}
	return again, asks
}

// Dedicated implements Dedicator: a connection of its own on the master
// of keys' slot (any master without keys), which it serves.
func (c *Router) Dedicated(ctx context.Context, keys []string) (backend.Dedicated, error) {
	if c.closed.Load() {
		return nil, backend.ErrClosed
	}
	slot := rand.IntN(topology.Slots)
	if len(keys) > 0 {
		slot = topology.Slot(keys[0])
		for _, k := range keys[1:] {
			if s := topology.Slot(k); s != slot {
				return nil, failure.CrossSlot("a transaction's keys span slots %d and %d; on a cluster every key of a transaction must share a slot: give them a common {hash tag}", slot, s)
			}
		}
	}
	for {
		m := c.state.Load().master(slot)
		switch {
		case m == nil:
			c.triggerRefresh()
			return nil, errSlotUnserved
		case !m.Acquire():
			continue // retired since the map was loaded: the new one is installed
		}
		d, err := m.n.Dedicated(ctx, keys)
		if err != nil {
			m.Release()
			c.refreshAfter(err)
			return nil, err
		}
		return &routedDedicated{d: d, m: m, c: c, slot: slot}, nil
	}
}

// routedDedicated is a node's dedicated connection held for a slot: its
// node stays open until Release, and the MOVED replies it gets patch the
// slot map, so that the next transaction goes to the slot's new master.
type routedDedicated struct {
	d    backend.Dedicated
	m    *member
	c    *Router
	slot int
}

func (r *routedDedicated) Slot() int { return r.slot }

func (r *routedDedicated) DoMulti(ctx context.Context, cmds ...[]any) ([]backend.Result, error) {
	res, err := r.d.DoMulti(ctx, cmds...)
	if err != nil {
		r.c.refreshAfter(err)
		return res, err
	}
	for _, x := range res {
		if rd, ok := redirectOf(x.Err); ok && !rd.Ask {
			r.c.redirects.Add(1)
			r.c.moved(rd.Slot, topology.FullAddr(rd.Addr, r.m.n.Address()))
			break
		}
	}
	return res, nil
}

func (r *routedDedicated) Release(reuse bool) {
	r.d.Release(reuse)
	r.m.Release()
}

// DialSession implements SessionDialer: the master of slot (any master for
// a negative slot) is dialled and hello run there, MOVED and ASK
// followed as any command's.
func (c *Router) DialSession(ctx context.Context, slot int, hello func(net.Conn) error) (net.Conn, error) {
	if slot < 0 {
		slot = rand.IntN(topology.Slots)
	}
	var nc net.Conn
	err := c.route(ctx, slot,
		func(n transport.Node) (err error) { nc, err = n.DialSession(ctx, slot, hello); return err },
		func(n transport.Node) (err error) {
			nc, err = n.DialSession(ctx, slot, func(s net.Conn) error {
				if err := dial.Asking(s); err != nil {
					return err
				}
				return hello(s)
			})
			return err
		})
	if err != nil {
		return nil, err
	}
	return nc, nil
}

// DoMulti implements MultiDoer: the inner backend's, which groups the
// commands by node on a cluster.
func (g *Grouped) DoMulti(ctx context.Context, cmds ...[]any) []backend.Result {
	return g.inner.DoMulti(ctx, cmds...)
}

// Dedicated implements Dedicator: the inner backend's.
func (g *Grouped) Dedicated(ctx context.Context, keys []string) (backend.Dedicated, error) {
	return g.inner.Dedicated(ctx, keys)
}

// DialSession implements SessionDialer: the inner backend's.
func (g *Grouped) DialSession(ctx context.Context, slot int, hello func(net.Conn) error) (net.Conn, error) {
	return g.inner.DialSession(ctx, slot, hello)
}
