package strategy

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redisx-go/kit/internal/cluster"
)

// SlotGrouped runs multi-key calls the way the Codis proxy does: keys are
// grouped by slot, slots by node, and each node receives one pipelined
// round trip holding one MGET (MSET, DEL) per slot; all nodes are asked in
// parallel and the results come back in the caller's key order. A 50-key
// MGET over 50 slots on 3 masters costs 3 parallel round trips instead of
// 50 sequential ones.
//
// Single-key calls and Do go straight to the transport. On a standalone
// server SlotGrouped still helps very large key lists: they are split into
// MaxBatch-key commands sent as one pipeline.
//
// When a node fails, the keys it held are retried one slot at a time
// through the cluster's redirect and failover handling; keys that still
// fail are reported in a *NodeError per node (joined with errors.Join),
// and the values read from the other nodes are returned alongside.
type SlotGrouped struct {
	// Transport carries the commands: Multiplexed or Pool. Zero:
	// Multiplexed{}.
	Transport Strategy
	// MaxBatch is the most keys in one command; longer slot groups are
	// split. Zero: 1000.
	MaxBatch int
}

// Open implements Strategy.
func (s SlotGrouped) Open(ctx context.Context, cfg Config) (Backend, error) {
	tr := s.Transport
	if tr == nil {
		tr = Multiplexed{}
	}
	if _, ok := tr.(transport); !ok {
		return nil, fmt.Errorf("%w: SlotGrouped.Transport must be strategy.Multiplexed or strategy.Pool, not %T", ErrInvalidArgument, tr)
	}
	if s.MaxBatch < 0 {
		return nil, fmt.Errorf("%w: SlotGrouped.MaxBatch %d is negative", ErrInvalidArgument, s.MaxBatch)
	}
	if s.MaxBatch == 0 {
		s.MaxBatch = 1000
	}
	b, err := tr.Open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	g := &slotGrouped{inner: b, batch: s.MaxBatch}
	switch in := b.(type) {
	case *clusterBackend:
		g.cluster = in
	case node:
		g.single = in
	default:
		b.Close()
		return nil, fmt.Errorf("%w: SlotGrouped over %T", ErrUnsupported, b)
	}
	return g, nil
}

// NodeError reports the keys of a multi-key call that failed on one node.
// Other nodes' results are returned alongside it.
type NodeError struct {
	Node string   // host:port
	Keys []string // the keys whose part failed
	Err  error
}

func (e *NodeError) Error() string {
	return fmt.Sprintf("redisx: %d keys on %s: %v", len(e.Keys), e.Node, e.Err)
}

// Unwrap returns the node's error.
func (e *NodeError) Unwrap() error { return e.Err }

type slotGrouped struct {
	inner   Backend
	cluster *clusterBackend // one of cluster and single is set
	single  node
	batch   int
}

func (g *slotGrouped) Get(ctx context.Context, key string) ([]byte, error) {
	return g.inner.Get(ctx, key)
}

func (g *slotGrouped) Set(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	return g.inner.Set(ctx, key, value, ttl)
}

func (g *slotGrouped) Do(ctx context.Context, args ...any) (any, error) {
	return g.inner.(Doer).Do(ctx, args...)
}

func (g *slotGrouped) Stats() Stats {
	s := g.inner.(Statser).Stats()
	s.Strategy = "slot-grouped/" + s.Strategy
	return s
}

func (g *slotGrouped) Unwrap() Backend { return g.inner }

func (g *slotGrouped) Close() error { return g.inner.Close() }

// batchGroup is one command of a pipeline: the keys of one slot (or one
// chunk of them), and where each key sits in the caller's list.
type batchGroup struct {
	slot int
	keys []string
	pos  []int
}

// plan groups keys by slot, chunks long groups, and assigns each group to
// the node serving its slot (nil when none does).
func (g *slotGrouped) plan(keys []string) ([]node, [][]batchGroup) {
	var groups []batchGroup
	if g.cluster == nil {
		for off := 0; off < len(keys); off += g.batch {
			end := min(off+g.batch, len(keys))
			pos := make([]int, end-off)
			for i := range pos {
				pos[i] = off + i
			}
			groups = append(groups, batchGroup{keys: keys[off:end], pos: pos})
		}
		return []node{g.single}, [][]batchGroup{groups}
	}
	index := make(map[int]int, len(keys))
	for i, k := range keys {
		s := cluster.Slot(k)
		j, ok := index[s]
		if !ok || len(groups[j].keys) == g.batch {
			j = len(groups)
			index[s] = j
			groups = append(groups, batchGroup{slot: s})
		}
		groups[j].keys = append(groups[j].keys, k)
		groups[j].pos = append(groups[j].pos, i)
	}
	top := g.cluster.state.Load()
	var nodes []node
	var perNode [][]batchGroup
	for _, bg := range groups {
		n := top.master(bg.slot)
		i := 0
		for ; i < len(nodes); i++ {
			if nodes[i] == n {
				break
			}
		}
		if i == len(nodes) {
			nodes = append(nodes, n)
			perNode = append(perNode, nil)
		}
		perNode[i] = append(perNode[i], bg)
	}
	return nodes, perNode
}

// fanOut runs fn for every node index, all but one on their own goroutine.
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

// failures collects NodeErrors from concurrent node runs.
type failures struct {
	mu   sync.Mutex
	errs []error
}

func (f *failures) add(addr string, keys []string, err error) {
	f.mu.Lock()
	f.errs = append(f.errs, &NodeError{Node: addr, Keys: keys, Err: err})
	f.mu.Unlock()
}

func (f *failures) err() error { return errors.Join(f.errs...) }

// nodeFailure gathers the failed groups of one node's pipeline: each is
// retried through the cluster's redirect and failover handling, and the
// keys that still fail are reported in one NodeError for the node. Once a
// retry has failed on a connection error, the node's other groups still
// mapped to it are not retried: each retry would spend the cluster's whole
// retry budget on the same unreachable node, one slot after another.
type nodeFailure struct {
	g    *slotGrouped
	n    node
	down error // a retry's connection failure
	keys []string
	err  error
}

// retry handles group bg, whose attempt failed with e: retry re-runs it
// one slot through the cluster.
func (f *nodeFailure) retry(ctx context.Context, bg batchGroup, e error, retry func() error) {
	if f.g.cluster != nil && ctx.Err() == nil {
		if f.down != nil && f.g.cluster.state.Load().master(bg.slot) == f.n {
			e = f.down
		} else if e = retry(); e == nil {
			return
		} else if errors.Is(e, ErrConnection) {
			f.down = e
		}
	}
	f.keys = append(f.keys, bg.keys...)
	if f.err == nil {
		f.err = e
	}
}

// report adds the node's failed keys, if any, to fail.
func (f *nodeFailure) report(fail *failures, cmd string) {
	if len(f.keys) > 0 {
		fail.add(nodeAddr(f.n), f.keys, replyError(cmd, f.err))
	}
}

// MGet implements MultiGetter.
func (g *slotGrouped) MGet(ctx context.Context, keys []string) ([][]byte, error) {
	if len(keys) == 0 {
		return [][]byte{}, nil
	}
	if g.cluster == nil && len(keys) <= g.batch {
		return g.single.MGet(ctx, keys)
	}
	vs := make([][]byte, len(keys))
	nodes, perNode := g.plan(keys)
	var fail failures
	fanOut(len(nodes), func(i int) {
		groups := perNode[i]
		var buf []byte
		rps := make([]reply, len(groups))
		for j, bg := range groups {
			buf = appendKeys(buf, "MGET", bg.keys)
			rps[j] = reply{kind: replyBulks, vals: make([][]byte, len(bg.keys))}
		}
		var err error
		if n := nodes[i]; n != nil {
			err = n.exec(ctx, groups[0].keys[0], buf, rps)
		} else {
			err = errSlotUnserved
		}
		f := nodeFailure{g: g, n: nodes[i]}
		for j, bg := range groups {
			e := err
			if e == nil {
				e = rps[j].err
			}
			if e == nil {
				for k, p := range bg.pos {
					vs[p] = rps[j].vals[k]
				}
				continue
			}
			// Moved, failing over or unreachable: one slot at a time
			// through the cluster's redirect and retry handling.
			f.retry(ctx, bg, e, func() error {
				return g.cluster.mgetSlot(ctx, slotGroup{slot: bg.slot, keys: bg.keys, pos: bg.pos}, vs)
			})
		}
		f.report(&fail, "mget")
	})
	if err := fail.err(); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return vs, err
	}
	return vs, nil
}

func nodeAddr(n node) string {
	if n == nil {
		return "(no master)"
	}
	return n.address()
}

// MSet implements MultiSetter: per node, one MSET per slot (or one SET … PX
// per key with a ttl) in one pipeline.
func (g *slotGrouped) MSet(ctx context.Context, kv map[string][]byte, ttl time.Duration) error {
	if len(kv) == 0 {
		return nil
	}
	keys := make([]string, 0, len(kv))
	for k := range kv {
		keys = append(keys, k)
	}
	nodes, perNode := g.plan(keys)
	var fail failures
	fanOut(len(nodes), func(i int) {
		groups := perNode[i]
		var buf []byte
		rps := make([]reply, len(groups))
		for j, bg := range groups {
			rps[j] = reply{kind: replyOK, n: 1}
			if ttl <= 0 {
				buf = appendArrayHeader(buf, 2*len(bg.keys)+1, "MSET")
				for _, k := range bg.keys {
					buf = appendPair(buf, k, kv[k])
				}
				continue
			}
			for _, k := range bg.keys {
				buf = appendSet(buf, k, kv[k], ttl)
			}
			rps[j].n = len(bg.keys)
		}
		var err error
		if n := nodes[i]; n != nil {
			err = n.exec(ctx, groups[0].keys[0], buf, rps)
		} else {
			err = errSlotUnserved
		}
		f := nodeFailure{g: g, n: nodes[i]}
		for j, bg := range groups {
			e := err
			if e == nil {
				e = rps[j].err
			}
			if e == nil {
				continue
			}
			f.retry(ctx, bg, e, func() error {
				sub := make(map[string][]byte, len(bg.keys))
				for _, k := range bg.keys {
					sub[k] = kv[k]
				}
				return g.cluster.msetSlot(ctx, bg.slot, sub, ttl)
			})
		}
		f.report(&fail, "mset")
	})
	if err := fail.err(); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return err
	}
	return nil
}

// Del implements Backend: per node, one DEL per slot in one pipeline.
func (g *slotGrouped) Del(ctx context.Context, keys ...string) (int64, error) {
	if len(keys) == 0 {
		return 0, nil
	}
	if g.cluster == nil && len(keys) <= g.batch {
		return g.single.Del(ctx, keys...)
	}
	nodes, perNode := g.plan(keys)
	var fail failures
	var mu sync.Mutex
	var total int64
	fanOut(len(nodes), func(i int) {
		groups := perNode[i]
		var buf []byte
		rps := make([]reply, len(groups))
		for j, bg := range groups {
			buf = appendKeys(buf, "DEL", bg.keys)
			rps[j] = reply{kind: replyInt}
		}
		var err error
		if n := nodes[i]; n != nil {
			err = n.exec(ctx, groups[0].keys[0], buf, rps)
		} else {
			err = errSlotUnserved
		}
		var sum int64
		f := nodeFailure{g: g, n: nodes[i]}
		for j, bg := range groups {
			e := err
			if e == nil {
				e = rps[j].err
			}
			if e == nil {
				sum += rps[j].num
				continue
			}
			f.retry(ctx, bg, e, func() error {
				n, err := g.cluster.Del(ctx, bg.keys...)
				if err == nil {
					sum += n
				}
				return err
			})
		}
		f.report(&fail, "del")
		mu.Lock()
		total += sum
		mu.Unlock()
	})
	if err := fail.err(); err != nil {
		if ctx.Err() != nil {
			return total, ctx.Err()
		}
		return total, err
	}
	return total, nil
}

var _ interface {
	Backend
	MultiGetter
	MultiSetter
	Doer
	Statser
	Unwrapper
} = (*slotGrouped)(nil)
