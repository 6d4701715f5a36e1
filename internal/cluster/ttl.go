package cluster

import (
	"context"
	"errors"
	"time"

	"github.com/redisx-go/kit/backend"
	"github.com/redisx-go/kit/internal/topology"
	"github.com/redisx-go/kit/internal/transport"
	"github.com/redisx-go/kit/internal/wire"
)

// GetWithTTL implements TTLGetter. Under ASK (a slot being migrated) the
// TTL is reported unknown.
func (c *Router) GetWithTTL(ctx context.Context, key string) ([]byte, time.Duration, error) {
	var v []byte
	var ttl time.Duration
	err := c.route(ctx, topology.Slot(key),
		func(n transport.Node) (err error) { v, ttl, err = transport.GetWithTTL(ctx, n, key); return err },
		func(n transport.Node) error {
			rp := wire.Reply{Kind: wire.ReplyBulk}
			err := askExec(ctx, n, []string{key}, &rp, func(b []byte) []byte { return wire.AppendGet(b, key) })
			if err == nil && rp.Val == nil {
				err = backend.ErrNotFound
			}
			v, ttl = rp.Val, backend.UnknownTTL
			return err
		})
	if err != nil {
		return nil, 0, err
	}
	return v, ttl, nil
}

// MGetWithTTL implements TTLGetter: one MGET and its PTTLs per slot, one
// slot after another.
func (c *Router) MGetWithTTL(ctx context.Context, keys []string) ([][]byte, []time.Duration, error) {
	vs := make([][]byte, len(keys))
	ttls := make([]time.Duration, len(keys))
	for _, g := range groupBySlot(keys) {
		var gv [][]byte
		var gt []time.Duration
		err := c.route(ctx, g.slot,
			func(n transport.Node) (err error) { gv, gt, err = transport.MGetWithTTL(ctx, n, g.keys); return err },
			func(n transport.Node) error {
				rp := wire.Reply{Kind: wire.ReplyBulks, Vals: make([][]byte, len(g.keys))}
				err := askExec(ctx, n, g.keys, &rp, func(b []byte) []byte { return wire.AppendKeys(b, "MGET", g.keys) })
				gv, gt = rp.Vals, make([]time.Duration, len(g.keys))
				for i := range gt {
					gt[i] = backend.UnknownTTL
				}
				return err
			})
		if err != nil {
			return nil, nil, err
		}
		for i, p := range g.pos {
			vs[p], ttls[p] = gv[i], gt[i]
		}
	}
	return vs, ttls, nil
}

// GetWithTTL implements TTLGetter.
func (g *Grouped) GetWithTTL(ctx context.Context, key string) ([]byte, time.Duration, error) {
	return g.inner.GetWithTTL(ctx, key)
}

// MGetWithTTL implements TTLGetter: per node, one pipeline of an MGET and
// its PTTLs per slot, nodes in parallel; groups whose slot the plan had
// wrong are sent again one slot at a time through the cluster's routing.
func (g *Grouped) MGetWithTTL(ctx context.Context, keys []string) ([][]byte, []time.Duration, error) {
	if g.cluster == nil {
		return transport.MGetWithTTL(ctx, g.single, keys)
	}
	vs := make([][]byte, len(keys))
	ttls := make([]time.Duration, len(keys))
	nodes, perNode := g.plan(keys)
	var fail failures
	fanOut(len(nodes), func(i int) {
		for _, bg := range perNode[i] {
			var gv [][]byte
			var gt []time.Duration
			var err error
			if m := nodes[i]; m != nil && m.Acquire() {
				gv, gt, err = transport.MGetWithTTL(ctx, m.n, bg.keys)
				m.Release()
			} else {
				err = errSlotUnserved
			}
			if _, redirected := redirectOf(err); ctx.Err() == nil && (redirected || errors.Is(err, errSlotUnserved)) {
				// The plan had the slot wrong: routing, not a retry (see
				// nodeFailure).
				gv, gt, err = g.MGetWithTTL(ctx, bg.keys)
			}
			if err != nil {
				fail.add(nodes[i].address(), bg.keys, err)
				g.refreshAfter(err)
				continue
			}
			for k, p := range bg.pos {
				vs[p], ttls[p] = gv[k], gt[k]
			}
		}
	})
	if err := fail.err(); err != nil {
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		return vs, ttls, err
	}
	return vs, ttls, nil
}
