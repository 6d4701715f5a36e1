package strategy

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redisx-go/kit/internal/cluster"
)

// TTLGetter is an optional interface that may be implemented by a Backend:
// reads that also return each key's remaining time to live, in the same
// round trip (GET or MGET pipelined with PTTL). A near-cache uses it so
// that no entry outlives its key. A TTL of NoTTL means the key has no
// expiry; UnknownTTL that it could not be read. Without it localcache.Near
// bounds entries by its own TTL only.
type TTLGetter interface {
	GetWithTTL(ctx context.Context, key string) ([]byte, time.Duration, error)
	MGetWithTTL(ctx context.Context, keys []string) ([][]byte, []time.Duration, error)
}

// Sentinel TTLs of TTLGetter.
const (
	NoTTL      time.Duration = -1
	UnknownTTL time.Duration = -3
)

// pttl turns a PTTL reply into a TTL: -1 no expiry, -2 (gone) and errors
// unknown.
func pttl(rp *reply) time.Duration {
	switch {
	case rp.err != nil || rp.num == -2:
		return UnknownTTL
	case rp.num == -1:
		return NoTTL
	}
	return time.Duration(rp.num) * time.Millisecond
}

// ttlPipeline encodes MGET (or GET for one key) followed by one PTTL per
// key, and the replies to decode them into.
func ttlPipeline(keys []string, single bool) ([]byte, []reply) {
	var buf []byte
	rps := make([]reply, 1+len(keys))
	if single {
		buf = appendGet(buf, keys[0])
		rps[0] = reply{kind: replyBulk}
	} else {
		buf = appendKeys(buf, "MGET", keys)
		rps[0] = reply{kind: replyBulks, vals: make([][]byte, len(keys))}
	}
	for i, k := range keys {
		buf = appendKeys(buf, "PTTL", []string{k})
		rps[1+i] = reply{kind: replyInt}
	}
	return buf, rps
}

func nodeGetWithTTL(ctx context.Context, n node, key string) ([]byte, time.Duration, error) {
	keys := []string{key}
	buf, rps := ttlPipeline(keys, true)
	if err := n.exec(ctx, keys, buf, rps); err != nil {
		return nil, 0, err
	}
	if rps[0].err != nil {
		return nil, 0, replyError("get", rps[0].err)
	}
	if rps[0].val == nil {
		return nil, 0, ErrNotFound
	}
	return rps[0].val, pttl(&rps[1]), nil
}

func nodeMGetWithTTL(ctx context.Context, n node, keys []string) ([][]byte, []time.Duration, error) {
	if len(keys) == 0 {
		return [][]byte{}, []time.Duration{}, nil
	}
	buf, rps := ttlPipeline(keys, false)
	if err := n.exec(ctx, keys, buf, rps); err != nil {
		return nil, nil, err
	}
	if rps[0].err != nil {
		return nil, nil, replyError("mget", rps[0].err)
	}
	ttls := make([]time.Duration, len(keys))
	for i := range keys {
		ttls[i] = pttl(&rps[1+i])
	}
	return rps[0].vals, ttls, nil
}

// GetWithTTL implements TTLGetter.
func (n *muxNode) GetWithTTL(ctx context.Context, key string) ([]byte, time.Duration, error) {
	return nodeGetWithTTL(ctx, n, key)
}

// MGetWithTTL implements TTLGetter.
func (n *muxNode) MGetWithTTL(ctx context.Context, keys []string) ([][]byte, []time.Duration, error) {
	return nodeMGetWithTTL(ctx, n, keys)
}

// GetWithTTL implements TTLGetter.
func (n *poolNode) GetWithTTL(ctx context.Context, key string) ([]byte, time.Duration, error) {
	return nodeGetWithTTL(ctx, n, key)
}

// MGetWithTTL implements TTLGetter.
func (n *poolNode) MGetWithTTL(ctx context.Context, keys []string) ([][]byte, []time.Duration, error) {
	return nodeMGetWithTTL(ctx, n, keys)
}

// GetWithTTL implements TTLGetter. Under ASK (a slot being migrated) the
// TTL is reported unknown.
func (c *clusterBackend) GetWithTTL(ctx context.Context, key string) ([]byte, time.Duration, error) {
	var v []byte
	var ttl time.Duration
	err := c.route(ctx, cluster.Slot(key),
		func(n node) (err error) { v, ttl, err = nodeGetWithTTL(ctx, n, key); return err },
		func(n node) error {
			rp := reply{kind: replyBulk}
			err := askExec(ctx, n, []string{key}, &rp, func(b []byte) []byte { return appendGet(b, key) })
			if err == nil && rp.val == nil {
				err = ErrNotFound
			}
			v, ttl = rp.val, UnknownTTL
			return err
		})
	if err != nil {
		return nil, 0, err
	}
	return v, ttl, nil
}

// MGetWithTTL implements TTLGetter: one MGET and its PTTLs per slot, one
// slot after another.
func (c *clusterBackend) MGetWithTTL(ctx context.Context, keys []string) ([][]byte, []time.Duration, error) {
	vs := make([][]byte, len(keys))
	ttls := make([]time.Duration, len(keys))
	for _, g := range groupBySlot(keys) {
		var gv [][]byte
		var gt []time.Duration
		err := c.route(ctx, g.slot,
			func(n node) (err error) { gv, gt, err = nodeMGetWithTTL(ctx, n, g.keys); return err },
			func(n node) error {
				rp := reply{kind: replyBulks, vals: make([][]byte, len(g.keys))}
				err := askExec(ctx, n, g.keys, &rp, func(b []byte) []byte { return appendKeys(b, "MGET", g.keys) })
				gv, gt = rp.vals, make([]time.Duration, len(g.keys))
				for i := range gt {
					gt[i] = UnknownTTL
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
func (g *slotGrouped) GetWithTTL(ctx context.Context, key string) ([]byte, time.Duration, error) {
	return g.inner.(TTLGetter).GetWithTTL(ctx, key)
}

// MGetWithTTL implements TTLGetter: per node, one pipeline of an MGET and
// its PTTLs per slot, nodes in parallel; groups whose slot the plan had
// wrong are sent again one slot at a time through the cluster's routing.
func (g *slotGrouped) MGetWithTTL(ctx context.Context, keys []string) ([][]byte, []time.Duration, error) {
	if g.cluster == nil {
		return nodeMGetWithTTL(ctx, g.single, keys)
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
			if m := nodes[i]; m != nil && m.acquire() {
				gv, gt, err = nodeMGetWithTTL(ctx, m.n, bg.keys)
				m.release()
			} else {
				err = errSlotUnserved
			}
			if _, redirected := redirectOf(err); ctx.Err() == nil && (redirected || errors.Is(err, errSlotUnserved)) {
				// The plan had the slot wrong: routing, not a retry (see
				// nodeFailure).
				gv, gt, err = g.cluster.MGetWithTTL(ctx, bg.keys)
			}
			if err != nil {
				fail.add(nodes[i].address(), bg.keys, err)
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

// GetWithTTL implements TTLGetter with a pipelined GET and PTTL. The
// GET's own reply decides: a value (with UnknownTTL should the PTTL
// fail), ErrNotFound, or its error.
func (g *goRedisBackend) GetWithTTL(ctx context.Context, key string) ([]byte, time.Duration, error) {
	if err := g.check(ctx); err != nil {
		return nil, 0, err
	}
	p := g.rdb.Pipeline()
	get := p.Get(ctx, key)
	ttl := p.PTTL(ctx, key)
	_, _ = p.Exec(ctx) // errors are read per command below
	v, err := get.Bytes()
	switch {
	case errors.Is(err, redis.Nil):
		return nil, 0, ErrNotFound
	case err != nil:
		return nil, 0, goRedisReadError(ctx, "get", err)
	}
	return v, goRedisTTL(ttl), nil
}

// MGetWithTTL implements TTLGetter with pipelined GETs and PTTLs (per key,
// so that a cluster client splits the pipeline by node itself). Any GET
// that fails — a connection error, or a server error such as WRONGTYPE
// for a key that holds a list — fails the whole call: a failed read is
// never reported as a missing key. go-redis's own Exec error is not
// enough to tell: it is the first command's error, redis.Nil for a
// missing key even when a later command failed.
func (g *goRedisBackend) MGetWithTTL(ctx context.Context, keys []string) ([][]byte, []time.Duration, error) {
	if err := g.check(ctx); err != nil {
		return nil, nil, err
	}
	if len(keys) == 0 {
		return [][]byte{}, []time.Duration{}, nil
	}
	p := g.rdb.Pipeline()
	gets := make([]*redis.StringCmd, len(keys))
	ttls := make([]*redis.DurationCmd, len(keys))
	for i, k := range keys {
		gets[i] = p.Get(ctx, k)
		ttls[i] = p.PTTL(ctx, k)
	}
	_, _ = p.Exec(ctx) // errors are read per command below
	vs := make([][]byte, len(keys))
	ds := make([]time.Duration, len(keys))
	for i := range keys {
		v, err := gets[i].Bytes()
		switch {
		case errors.Is(err, redis.Nil):
		case err != nil:
			return nil, nil, goRedisReadError(ctx, "mget", err)
		default:
			vs[i] = v
		}
		ds[i] = goRedisTTL(ttls[i])
	}
	return vs, ds, nil
}

// goRedisReadError is goRedisError for one command of a pipeline: when
// ctx is done its error is the call's, as it is for a single command —
// a deadline that passes mid-read reaches the pipeline's commands as the
// socket's i/o timeout.
func goRedisReadError(ctx context.Context, cmd string, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return goRedisError(cmd, err)
}

func goRedisTTL(c *redis.DurationCmd) time.Duration {
	d, err := c.Result()
	switch {
	case err != nil || d == -2:
		return UnknownTTL
	case d == -1:
		return NoTTL
	}
	return d
}
