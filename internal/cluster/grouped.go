package cluster

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redisx-go/kit/backend"
	"github.com/redisx-go/kit/internal/failure"
	"github.com/redisx-go/kit/internal/topology"
	"github.com/redisx-go/kit/internal/transport"
	"github.com/redisx-go/kit/internal/wire"
)

// NewGrouped returns a Grouped over b, a Router or a transport's Node,
// whose commands hold at most maxBatch keys.
func NewGrouped(b transport.Backend, maxBatch int) (*Grouped, error) {
	g := &Grouped{inner: b, batch: maxBatch}
	switch in := b.(type) {
	case *Router:
		g.cluster = in
	case transport.Node:
		g.single = in
		g.one = &member{n: in} // never retired
	default:
		return nil, fmt.Errorf("%w: SlotGrouped over %T", backend.ErrUnsupported, b)
	}
	return g, nil
}

// Grouped runs multi-key calls the SlotGrouped way (see strategy.SlotGrouped).
type Grouped struct {
	inner   transport.Backend
	cluster *Router // one of cluster and single is set
	single  transport.Node
	one     *member // single, as plan returns it
	batch   int
}

func (g *Grouped) Get(ctx context.Context, key string) ([]byte, error) {
	return g.inner.Get(ctx, key)
}

func (g *Grouped) Set(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	return g.inner.Set(ctx, key, value, ttl)
}

func (g *Grouped) Do(ctx context.Context, args ...any) (any, error) {
	return g.inner.Do(ctx, args...)
}

func (g *Grouped) Stats() backend.Stats {
	s := g.inner.Stats()
	s.Strategy = "slot-grouped/" + s.Strategy
	return s
}

func (g *Grouped) Close() error { return g.inner.Close() }

// batchGroup is one command of a pipeline: the keys of one slot (or one
// chunk of them), and where each key sits in the caller's list.
type batchGroup struct {
	slot int
	keys []string
	pos  []int
}

// plan groups keys by slot, chunks long groups, and assigns each group to
// the node serving its slot (nil when none does). Keys are sorted by
// (node, slot) once, so every group and every node's run of groups is a
// contiguous slice of a few shared arrays: a handful of allocations
// whatever the number of keys.
func (g *Grouped) plan(keys []string) ([]*member, [][]batchGroup) {
	n := len(keys)
	sorted := make([]string, n)
	pos := make([]int, n)
	if g.cluster == nil {
		copy(sorted, keys)
		for i := range pos {
			pos[i] = i
		}
		groups := make([]batchGroup, 0, (n+g.batch-1)/g.batch)
		for off := 0; off < n; off += g.batch {
			end := min(off+g.batch, n)
			groups = append(groups, batchGroup{keys: sorted[off:end:end], pos: pos[off:end:end]})
		}
		return []*member{g.one}, [][]batchGroup{groups}
	}
	top := g.cluster.state.Load()
	type sortKey struct {
		k uint32 // owner<<14 | slot
		i int32
	}
	order := make([]sortKey, n)
	for i, k := range keys {
		s := topology.Slot(k)
		order[i] = sortKey{uint32(top.owner[s])<<14 | uint32(s), int32(i)}
	}
	// Stable: keys of one slot keep the caller's order.
	slices.SortStableFunc(order, func(a, b sortKey) int { return cmp.Compare(a.k, b.k) })
	for j, o := range order {
		sorted[j], pos[j] = keys[o.i], int(o.i)
	}
	groups := make([]batchGroup, 0, 64)
	var nodes []*member
	var perNode [][]batchGroup
	first := 0 // first group of the current node
	for start, j := 0, 1; j <= n; j++ {
		if j < n && order[j].k == order[start].k && j-start < g.batch {
			continue
		}
		slot := int(order[start].k & (topology.Slots - 1))
		if len(groups) > first && order[start].k>>14 != uint32(top.owner[groups[first].slot]) {
			perNode = append(perNode, groups[first:len(groups):len(groups)])
			first = len(groups)
		}
		if len(groups) == first {
			nodes = append(nodes, top.master(slot))
		}
		groups = append(groups, batchGroup{slot: slot, keys: sorted[start:j:j], pos: pos[start:j:j]})
		start = j
	}
	perNode = append(perNode, groups[first:len(groups):len(groups)])
	return nodes, perNode
}

// sender is a node that can have pipelines in flight on several nodes
// from one goroutine: Multiplexed's (mux.Node.Send).
type sender interface {
	Send(ctx context.Context, keys []string, buf []byte, rps []wire.Reply) (transport.Pending, error)
}

// runPipelines sends bufs[i], commands on keys[i], to nodes[i], decoding
// into rps[i], all nodes at once: pipelines on senders are queued from
// this goroutine,
// the last one sent and awaited at once (so that this caller may read its
// reply itself), then the others awaited; other nodes get a goroutine
// each. errs[i] is node i's connection or context failure; a nil node
// fails with errSlotUnserved.
func runPipelines(ctx context.Context, nodes []transport.Node, keys [][]string, bufs [][]byte, rps [][]wire.Reply) []error {
	errs := make([]error, len(nodes))
	calls := make([]transport.Pending, len(nodes))
	var blocking []int
	last := -1 // the last multiplexed node: its pipeline is sent last, and awaited first
	for i, n := range nodes {
		switch n.(type) {
		case nil:
			errs[i] = errSlotUnserved
		case sender:
			last = i
		default:
			blocking = append(blocking, i)
		}
	}
	for i, n := range nodes {
		if n, ok := n.(sender); ok && i != last {
			calls[i], errs[i] = n.Send(ctx, keys[i], bufs[i], rps[i])
		}
	}
	fanOut(len(blocking), func(j int) {
		i := blocking[j]
		errs[i] = nodes[i].Exec(ctx, keys[i], bufs[i], rps[i])
	})
	if last >= 0 {
		// Awaited at once, it may lead: its caller reads the reply itself,
		// as a lone caller does, with no hand-off.
		errs[last] = nodes[last].Exec(ctx, keys[last], bufs[last], rps[last])
	}
	for i, cl := range calls {
		if cl != nil {
			errs[i] = cl.Await(ctx)
		}
	}
	return errs
}

// failures collects, per node, the keys whose part of a call failed.
type failures struct {
	mu   sync.Mutex
	errs []*backend.NodeError
}

// add records keys as failed on addr; the first error of a node stands for
// all its keys.
func (f *failures) add(addr string, keys []string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, ne := range f.errs {
		if ne.Node == addr {
			ne.Keys = append(ne.Keys, keys...)
			return
		}
	}
	f.errs = append(f.errs, &backend.NodeError{Node: addr, Keys: append([]string(nil), keys...), Err: err})
}

func (f *failures) err() error {
	errs := make([]error, len(f.errs))
	for i, ne := range f.errs {
		errs[i] = ne
	}
	return errors.Join(errs...)
}

// grouped runs a multi-key command the SlotGrouped way: keys planned into
// per-slot groups, each node's groups encoded by enc into one pipeline,
// all nodes at once (runPipelines). Then ok receives each group that
// succeeded, and retry runs each that failed, per node in parallel, one
// slot at a time through the cluster's redirect handling (see
// nodeFailure). The error joins one *NodeError per node with keys that
// still failed.
func (g *Grouped) grouped(ctx context.Context, keys []string, cmd string,
	enc func(buf []byte, bg batchGroup) ([]byte, wire.Reply),
	ok func(bg batchGroup, rp *wire.Reply),
	retry func(bg batchGroup) error) error {
	members, perNode := g.plan(keys)
	// Each node is held for its pipeline; one retired since the plan was
	// made counts as serving no slot, so its groups are retried through
	// the new map.
	nodes := make([]transport.Node, len(members))
	for i, m := range members {
		if m != nil && m.Acquire() {
			nodes[i] = m.n
		}
	}
	err := g.run(ctx, nodes, perNode, keys, cmd, enc, ok, retry)
	for i, m := range members {
		if nodes[i] != nil {
			m.Release()
		}
	}
	return err
}

// run is grouped once its nodes are held.
func (g *Grouped) run(ctx context.Context, nodes []transport.Node, perNode [][]batchGroup, keys []string, cmd string,
	enc func(buf []byte, bg batchGroup) ([]byte, wire.Reply),
	ok func(bg batchGroup, rp *wire.Reply),
	retry func(bg batchGroup) error) error {
	nodeKeys := make([][]string, len(nodes))
	bufs := make([][]byte, len(nodes))
	rps := make([][]wire.Reply, len(nodes))
	all := make([]wire.Reply, 0, len(keys))
	for i, groups := range perNode {
		size, count := 0, 0
		for _, bg := range groups {
			count += len(bg.keys)
			size += 16 + 8*len(bg.keys)
			for _, k := range bg.keys {
				size += len(k)
			}
		}
		buf := make([]byte, 0, size)
		start := len(all)
		nk := make([]string, 0, count)
		for _, bg := range groups {
			nk = append(nk, bg.keys...)
			var rp wire.Reply
			buf, rp = enc(buf, bg)
			all = append(all, rp)
		}
		bufs[i], rps[i], nodeKeys[i] = buf, all[start:len(all):len(all)], nk
	}
	errs := runPipelines(ctx, nodes, nodeKeys, bufs, rps)
	// Most often every group succeeded, and handing the replies over needs
	// no goroutine; the nodes with a failed group retry in parallel, since
	// each retry is a round trip or a wait for the cluster.
	var retrying []int
	for i, groups := range perNode {
		if errs[i] != nil || slices.ContainsFunc(rps[i], func(rp wire.Reply) bool { return rp.Err != nil }) {
			retrying = append(retrying, i)
			continue
		}
		for j, bg := range groups {
			ok(bg, &rps[i][j])
		}
	}
	var fail failures
	fanOut(len(retrying), func(k int) {
		i := retrying[k]
		f := nodeFailure{g: g, n: nodes[i]}
		var cut *wire.CutError
		errors.As(errs[i], &cut)
		for j, bg := range perNode[i] {
			e := errs[i]
			switch {
			case cut != nil && j < cut.N:
				e = nil // answered: the refusal, if it is this group's, is its reply's error
			case cut != nil:
				e = cut.Err // never run: the server closed the connection before it
			}
			if e == nil {
				e = rps[i][j].Err
			}
			if e == nil {
				ok(bg, &rps[i][j])
				continue
			}
			f.retry(ctx, bg, e, func() error { return retry(bg) })
		}
		f.report(&fail, cmd)
	})
	err := fail.err()
	if err != nil && ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// MGet implements MultiGetter. On a partial failure the values read from
// the healthy nodes are returned with the error.
func (g *Grouped) MGet(ctx context.Context, keys []string) ([][]byte, error) {
	if len(keys) == 0 {
		return [][]byte{}, nil
	}
	if g.cluster == nil && len(keys) <= g.batch {
		return g.single.MGet(ctx, keys)
	}
	vs := make([][]byte, len(keys))
	flat := make([][]byte, len(keys)) // every group's replies, in plan order
	off := 0
	err := g.grouped(ctx, keys, "mget",
		func(buf []byte, bg batchGroup) ([]byte, wire.Reply) {
			n := len(bg.keys)
			rp := wire.Reply{Kind: wire.ReplyBulks, Vals: flat[off : off+n : off+n]}
			off += n
			return wire.AppendKeys(buf, "MGET", bg.keys), rp
		},
		func(bg batchGroup, rp *wire.Reply) {
			for k, p := range bg.pos {
				vs[p] = rp.Vals[k]
			}
		},
		func(bg batchGroup) error { return g.cluster.mgetSlot(ctx, slotGroup(bg), vs) })
	if err != nil && ctx.Err() != nil {
		return nil, err
	}
	return vs, err
}

func nodeAddr(n transport.Node) string {
	if n == nil {
		return "(no master)"
	}
	return n.Address()
}

// MSet implements MultiSetter: per node, one MSET per slot (or one SET … PX
// per key with a ttl) in one pipeline.
func (g *Grouped) MSet(ctx context.Context, kv map[string][]byte, ttl time.Duration) error {
	if len(kv) == 0 {
		return nil
	}
	keys := make([]string, 0, len(kv))
	for k := range kv {
		keys = append(keys, k)
	}
	return g.grouped(ctx, keys, "mset",
		func(buf []byte, bg batchGroup) ([]byte, wire.Reply) {
			if ttl <= 0 {
				buf = wire.AppendArrayHeader(buf, 2*len(bg.keys)+1, "MSET")
				for _, k := range bg.keys {
					buf = wire.AppendPair(buf, k, kv[k])
				}
				return buf, wire.Reply{Kind: wire.ReplyOK, N: 1}
			}
			for _, k := range bg.keys {
				buf = wire.AppendSet(buf, k, kv[k], ttl)
			}
			return buf, wire.Reply{Kind: wire.ReplyOK, N: len(bg.keys)}
		},
		func(batchGroup, *wire.Reply) {},
		func(bg batchGroup) error {
			sub := make(map[string][]byte, len(bg.keys))
			for _, k := range bg.keys {
				sub[k] = kv[k]
			}
			return g.cluster.msetSlot(ctx, bg.slot, sub, ttl)
		})
}

// Del implements Backend: per node, one DEL per slot in one pipeline.
func (g *Grouped) Del(ctx context.Context, keys ...string) (int64, error) {
	if len(keys) == 0 {
		return 0, nil
	}
	if g.cluster == nil && len(keys) <= g.batch {
		return g.single.Del(ctx, keys...)
	}
	var total atomic.Int64
	err := g.grouped(ctx, keys, "del",
		func(buf []byte, bg batchGroup) ([]byte, wire.Reply) {
			return wire.AppendKeys(buf, "DEL", bg.keys), wire.Reply{Kind: wire.ReplyInt}
		},
		func(_ batchGroup, rp *wire.Reply) { total.Add(rp.Num) },
		func(bg batchGroup) error {
			// Through the router, which follows redirects a bounded
			// number of times; g.Del here recursed without end on a
			// failure that keeps coming back (a closed backend's).
			n, err := g.cluster.Del(ctx, bg.keys...)
			total.Add(n)
			return err
		})
	return total.Load(), err
}

// nodeFailure gathers the groups of one node whose commands failed. A
// group whose slot the plan had wrong — a MOVED or ASK reply, a node
// retired meanwhile — is sent again alone through the cluster's routing,
// which follows redirects: that is routing, not a retry. Any other
// failure stands: retrying is the caller's, by one policy (redisx.Retry
// retries the keys of a *NodeError whose failure is Temporary).
type nodeFailure struct {
	g    *Grouped
	n    transport.Node
	keys []string
	err  error
}

func (f *nodeFailure) retry(ctx context.Context, bg batchGroup, err error, reroute func() error) {
	if _, redirected := redirectOf(err); f.g.cluster != nil && ctx.Err() == nil && (redirected || errors.Is(err, errSlotUnserved)) {
		e := reroute()
		if e == nil {
			return
		}
		err = e
	}
	f.keys = append(f.keys, bg.keys...)
	if f.err == nil {
		f.err = err
	}
}

// report adds the node's failed keys, if any, to fail, and has the slot
// map reloaded when the failure shows it may be stale (see
// Router.refreshAfter): a master refused or broke the connection, and the
// caller's next attempt must find its successor, not the same node again.
func (f *nodeFailure) report(fail *failures, cmd string) {
	if len(f.keys) > 0 {
		fail.add(nodeAddr(f.n), f.keys, failure.ReplyError(cmd, f.err))
		f.g.refreshAfter(f.err)
	}
}

// refreshAfter is the cluster's Router.refreshAfter; nothing on a single
// node.
func (g *Grouped) refreshAfter(err error) {
	if g.cluster != nil {
		g.cluster.refreshAfter(err)
	}
}

// fanOut runs fn for every index, all but one on their own goroutine.
func fanOut(n int, fn func(i int)) {
	var wg sync.WaitGroup
	for i := 1; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(i)
		}()
	}
	if n > 0 {
		fn(0)
	}
	wg.Wait()
}
