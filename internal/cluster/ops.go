package cluster

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/redisx-go/kit/backend"
	"github.com/redisx-go/kit/internal/failure"
	"github.com/redisx-go/kit/internal/topology"
	"github.com/redisx-go/kit/internal/transport"
	"github.com/redisx-go/kit/internal/wire"
)

// The cache operations on a cluster. Single-key calls go to the slot's
// master through the node's own fast path. Multi-key calls are split by
// slot and run one slot after another — the plain baseline; SlotGrouped
// pipelines them per node instead.

const askingCmd = "*1\r\n$6\r\nASKING\r\n"

// askExec runs the command appended by enc, on keys, on n right after
// ASKING, in one round trip, decoding its reply into rp.
func askExec(ctx context.Context, n transport.Node, keys []string, rp *wire.Reply, enc func([]byte) []byte) error {
	buf := enc(append(make([]byte, 0, 64), askingCmd...))
	rps := []wire.Reply{{Kind: wire.ReplyOK}, *rp}
	if err := n.Exec(ctx, keys, buf, rps); err != nil {
		return err
	}
	*rp = rps[1]
	if rps[0].Err != nil {
		return failure.ReplyError("asking", rps[0].Err)
	}
	return failure.ReplyError("ask", rp.Err)
}

// Get implements Backend.
func (c *Router) Get(ctx context.Context, key string) ([]byte, error) {
	var v []byte
	err := c.routeRead(ctx, topology.Slot(key),
		func(n transport.Node) (err error) { v, err = n.Get(ctx, key); return err },
		func(n transport.Node) error {
			rp := wire.Reply{Kind: wire.ReplyBulk}
			err := askExec(ctx, n, []string{key}, &rp, func(b []byte) []byte { return wire.AppendGet(b, key) })
			if err == nil && rp.Val == nil {
				err = backend.ErrNotFound
			}
			v = rp.Val
			return err
		})
	if err != nil {
		return nil, err
	}
	return v, nil
}

// Set implements Backend.
func (c *Router) Set(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	return c.route(ctx, topology.Slot(key),
		func(n transport.Node) error { return n.Set(ctx, key, value, ttl) },
		func(n transport.Node) error {
			rp := wire.Reply{Kind: wire.ReplyOK}
			return askExec(ctx, n, []string{key}, &rp, func(b []byte) []byte { return wire.AppendSet(b, key, value, ttl) })
		})
}

// bySlot groups keys by slot, in order of first appearance, keeping each
// key's position in the caller's list.
type slotGroup struct {
	slot int
	keys []string
	pos  []int
}

func groupBySlot(keys []string) []slotGroup {
	var groups []slotGroup
	index := map[int]int{}
	for i, k := range keys {
		s := topology.Slot(k)
		g, ok := index[s]
		if !ok {
			g = len(groups)
			index[s] = g
			groups = append(groups, slotGroup{slot: s})
		}
		groups[g].keys = append(groups[g].keys, k)
		groups[g].pos = append(groups[g].pos, i)
	}
	return groups
}

// Del implements Backend: one DEL per slot, one after another.
func (c *Router) Del(ctx context.Context, keys ...string) (int64, error) {
	var total int64
	for i, g := range groupBySlot(keys) {
		var n64 int64
		err := c.route(ctx, g.slot,
			func(n transport.Node) (err error) { n64, err = n.Del(ctx, g.keys...); return err },
			func(n transport.Node) error {
				rp := wire.Reply{Kind: wire.ReplyInt}
				err := askExec(ctx, n, g.keys, &rp, func(b []byte) []byte { return wire.AppendKeys(b, "DEL", g.keys) })
				n64 = rp.Num
				return err
			})
		if err != nil {
			if i > 0 {
				return total, failure.Partial(err) // the slots before were deleted
			}
			return total, err
		}
		total += n64
	}
	return total, nil
}

// mgetSlot reads one slot's keys into vs at their positions.
func (c *Router) mgetSlot(ctx context.Context, g slotGroup, vs [][]byte) error {
	var got [][]byte
	err := c.routeRead(ctx, g.slot,
		func(n transport.Node) (err error) { got, err = n.MGet(ctx, g.keys); return err },
		func(n transport.Node) error {
			rp := wire.Reply{Kind: wire.ReplyBulks, Vals: make([][]byte, len(g.keys))}
			err := askExec(ctx, n, g.keys, &rp, func(b []byte) []byte { return wire.AppendKeys(b, "MGET", g.keys) })
			got = rp.Vals
			return err
		})
	if err != nil {
		return err
	}
	for i, p := range g.pos {
		vs[p] = got[i]
	}
	return nil
}

// MGet implements MultiGetter: one MGET per slot, one after another.
func (c *Router) MGet(ctx context.Context, keys []string) ([][]byte, error) {
	vs := make([][]byte, len(keys))
	for _, g := range groupBySlot(keys) {
		if err := c.mgetSlot(ctx, g, vs); err != nil {
			return nil, err
		}
	}
	return vs, nil
}

// msetSlot stores one slot's pairs.
func (c *Router) msetSlot(ctx context.Context, slot int, kv map[string][]byte, ttl time.Duration) error {
	keys := slices.Collect(maps.Keys(kv))
	return c.route(ctx, slot,
		func(n transport.Node) error { return n.MSet(ctx, kv, ttl) },
		func(n transport.Node) error {
			rp := wire.Reply{Kind: wire.ReplyOK}
			return askExec(ctx, n, keys, &rp, func(b []byte) []byte {
				b, rp.N = wire.AppendMSet(b, kv, ttl)
				return b
			})
		})
}

// MSet implements MultiSetter: one MSET (or run of SETs with a ttl) per
// slot, one after another.
func (c *Router) MSet(ctx context.Context, kv map[string][]byte, ttl time.Duration) error {
	bySlot := map[int]map[string][]byte{}
	var order []int
	for k, v := range kv {
		s := topology.Slot(k)
		m, ok := bySlot[s]
		if !ok {
			m = map[string][]byte{}
			bySlot[s] = m
			order = append(order, s)
		}
		m[k] = v
	}
	for i, s := range order {
		if err := c.msetSlot(ctx, s, bySlot[s], ttl); err != nil {
			if i > 0 {
				return failure.Partial(err) // the slots before were written
			}
			return err
		}
	}
	return nil
}
