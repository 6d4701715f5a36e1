// Package cluster routes calls over a Redis Cluster. The Router keeps one
// transport node per master and an immutable table (slot → master) swapped
// atomically. MOVED patches the slot at once and refreshes the whole map in
// the background; ASK sends ASKING and the command together to the
// importing node; every other failure is returned, the map refreshed when
// it may be stale (see route): retries are redisx.Client's, by one policy.
// Open tells a cluster from a standalone server, whose node it returns as
// it is.
//
// The rest of the mechanism, by file: nodes.go, which nodes are held open
// and when one that left the map is closed; refresh.go, the reloads of the
// map (topology.Discover); replicas.go, reads from replicas; ops.go, the
// cache operations; do.go, where a generic command (Do) goes; multi.go,
// pipelines, transactions and sessions. grouped.go is SlotGrouped's
// Grouped, which plans multi-key calls over the Router's table.
package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/redisx-go/kit/backend"
	"github.com/redisx-go/kit/internal/failure"
	"github.com/redisx-go/kit/internal/topology"
	"github.com/redisx-go/kit/internal/transport"
)

var (
	_ transport.Backend = (*Router)(nil)
	_ transport.Backend = (*Grouped)(nil)
)

const (
	maxRedirects    = 8                      // MOVED and ASK redirects followed by one command
	refreshCooldown = 100 * time.Millisecond // between two map refreshes
	refreshPeriod   = 15 * time.Second       // background refresh without any trigger
	refreshTimeout  = 2 * time.Second        // one refresh attempt
)

// Router is a transport.Backend over a Redis Cluster (see the package
// doc).
type Router struct {
	cfg   backend.Config
	t     transport.Transport
	name  string // the transport's Stats name, kept for Stats after Close
	state atomic.Pointer[table]

	mu       sync.Mutex           // guards the fields below and every change of state
	nodes    map[string]*member   // the nodes held open, by address; nil once closed
	retiring map[*member]struct{} // nodes that left, closed when their last call ends
	gone     backend.Stats        // the counters of the nodes closed so far

	refreshMu    sync.Mutex  // guards the fields below; see clusterrefresh.go
	refreshing   *dialWait   // the reload in progress, if any
	lastRefresh  time.Time   // when the last reload ended
	refreshAgain bool        // a trigger came during the reload in progress
	trailing     *time.Timer // the reload due at the end of the cooldown, or a doubt's next
	trailingAt   time.Time   // when trailing fires
	doubtUntil   time.Time   // until when a reload that changes nothing is followed by another
	doubtWait    time.Duration

	closed atomic.Bool
	stop   chan struct{}
	wg     sync.WaitGroup // refreshLoop, the reloads and the trailing timer
	// life is the context of the client's own work (refreshes), cancelled
	// by Close; callers' contexts never carry shared work.
	life    context.Context
	endLife context.CancelFunc

	redirects, refreshes, refreshErrors atomic.Int64
	turn                                atomic.Uint64 // the replica a read takes in turn (replicas.go)
}

// dialWait is one shared piece of work (a slot-map refresh) that callers
// wait for within their own context.
type dialWait struct {
	done chan struct{}
	err  error
}

// table is one immutable view of the slot map. Its masters are
// members of the cluster's nodes when it is installed; a member that
// leaves a later view is retired (see member).
type table struct {
	owner   [topology.Slots]uint16 // 0: unassigned; i+1: masters[i]
	masters []*member
	// replicas are, by master, its online replicas: with ReadFrom other
	// than ReadPrimary only (replicas.go).
	replicas [][]*member
}

// same reports whether t and o map every slot to the same node, with the
// same replicas.
func (t *table) same(o *table) bool {
	return t.owner == o.owner && slices.Equal(t.masters, o.masters) &&
		slices.EqualFunc(t.replicas, o.replicas, slices.Equal)
}

// master returns the member serving slot, or nil.
func (t *table) master(slot int) *member {
	if i := t.owner[slot]; i != 0 {
		return t.masters[i-1]
	}
	return nil
}

func newRouter(cfg backend.Config, t transport.Transport, seed transport.Node, shards []topology.Shard) (*Router, error) {
	c := &Router{
		cfg:      cfg,
		t:        t,
		name:     seed.Stats().Strategy,
		retiring: map[*member]struct{}{},
		stop:     make(chan struct{}),
	}
	c.life, c.endLife = context.WithCancel(context.Background())
	c.nodes = map[string]*member{seed.Address(): c.newMember(seed)}
	if err := c.installShards(shards); err != nil { // the seed is retired unless it is a master
		c.Close()
		return nil, err
	}
	c.lastRefresh = time.Now()
	c.wg.Add(1)
	go c.refreshLoop()
	return c, nil
}

// build makes the table of shards, creating (unconnected) the nodes of
// masters met for the first time. c.mu must be held.
func (c *Router) build(shards []topology.Shard) (*table, error) {
	m := topology.NewMap(shards)
	top := &table{}
	index := map[string]uint16{}
	for slot := 0; slot < topology.Slots; slot++ {
		addr := m.Master(slot)
		if addr == "" {
			continue
		}
		i, ok := index[addr]
		if !ok {
			n, err := c.memberLocked(addr)
			if err != nil {
				return nil, err
			}
			top.masters = append(top.masters, n)
			i = uint16(len(top.masters))
			index[addr] = i
			rs, err := c.replicaMembers(m, slot)
			if err != nil {
				return nil, err
			}
			top.replicas = append(top.replicas, rs)
		}
		top.owner[slot] = i
	}
	return top, nil
}

// moved points slot at addr at once; the background refresh brings the
// rest of the map up to date. A master left without slots leaves the map.
func (c *Router) moved(slot int, addr string) {
	c.mu.Lock()
	n, err := c.memberLocked(addr)
	if err != nil {
		c.mu.Unlock()
		return
	}
	old := c.state.Load()
	if old.master(slot) == n { // concurrent redirects of one slot: patched already
		c.mu.Unlock()
		c.triggerRefresh()
		return
	}
	owner := func(s int) *member {
		if s == slot {
			return n
		}
		return old.master(s)
	}
	top := &table{}
	index := map[*member]uint16{}
	for s := range topology.Slots {
		m := owner(s)
		if m == nil {
			continue
		}
		i, ok := index[m]
		if !ok {
			top.masters = append(top.masters, m)
			top.replicas = append(top.replicas, old.replicasOf(m)) // none for a new master until the refresh
			i = uint16(len(top.masters))
			index[m] = i
		}
		top.owner[s] = i
	}
	gone := c.install(top)
	c.mu.Unlock()
	retireAll(gone)
	c.triggerRefresh()
}

// route runs op on the master of slot, following MOVED and ASK redirects
// (at most maxRedirects of them: a redirect is routing, not a retry). ask
// runs the command on an importing node after ASKING. Every other failure
// is returned as it is, after a refresh of the slot map when it shows
// the map may be stale (a refused or broken master, a slot no master
// serves, CLUSTERDOWN…): retrying is the caller's, by one policy
// (redisx.Retry, which Temporary and Unsent inform). The node is held
// (acquire) for the length of each call, so that it is not closed under
// it.
func (c *Router) route(ctx context.Context, slot int, op, ask func(transport.Node) error) error {
	if c.closed.Load() {
		return backend.ErrClosed
	}
	var err error
	for redirects := 0; ; redirects++ {
		if redirects > maxRedirects {
			return err
		}
		m := c.state.Load().master(slot)
		switch {
		case m == nil:
			c.triggerRefresh()
			return errSlotUnserved
		case !m.Acquire():
			// Retired since we loaded the map: the new map is installed.
			err = errSlotUnserved
			continue
		}
		err = op(m.n)
		m.Release()
		if err == nil {
			return nil
		}
		rd, ok := redirectOf(err)
		if !ok {
			c.refreshAfter(err)
			return err
		}
		c.redirects.Add(1)
		addr := topology.FullAddr(rd.Addr, m.n.Address())
		if !rd.Ask {
			c.moved(rd.Slot, addr)
			continue
		}
		target, e := c.acquireAddr(addr)
		if e != nil {
			return e
		}
		err = ask(target.n)
		target.Release()
		if err == nil {
			return nil
		}
		if _, ok := redirectOf(err); ok {
			continue // the slot moved on meanwhile
		}
		c.refreshAfter(err)
		return err
	}
}

// redirectOf returns the MOVED or ASK redirect err holds, if any.
func redirectOf(err error) (topology.Redirect, bool) {
	var re redis.Error
	if !errors.As(err, &re) {
		return topology.Redirect{}, false
	}
	return topology.ParseRedirect(string(re))
}

// refreshAfter triggers a reload of the slot map when err, a failed
// call's, shows the map may be stale: a reply such as CLUSTERDOWN or
// TRYAGAIN, or a node that refused, broke or timed out a connection —
// then reloads go on until the map changes (see refresh.go). Every path
// that reaches a node calls it with the node's failure.
func (c *Router) refreshAfter(err error) {
	switch {
	case errors.Is(err, backend.ErrClosed) || !failure.Temporary(err):
	case errors.Is(err, backend.ErrConnection):
		c.doubtRefresh()
	default:
		c.triggerRefresh()
	}
}

// errSlotUnserved is the failure of a call on a slot that no master of
// the current map serves: the cluster is down or its topology is
// changing. The map is reloaded meanwhile, so a later attempt may
// succeed; nothing was sent.
var errSlotUnserved = failure.MarkUnsent(fmt.Errorf("%w: slot served by no master (cluster down or topology changing)", backend.ErrConnection))

// InstallShards makes shards the slot map, as if a refresh had read them:
// the nodes the map no longer lists are retired, and the next refresh may
// start at once. Tests force a map change with it — a master leaving, a
// stale map — without waiting for the cluster to make one.
func (c *Router) InstallShards(shards []topology.Shard) error {
	c.refreshMu.Lock()
	c.lastRefresh = time.Time{}
	c.refreshMu.Unlock()
	return c.installShards(shards)
}

// installShards makes shards the slot map and retires the nodes it no
// longer lists.
func (c *Router) installShards(shards []topology.Shard) error {
	c.mu.Lock()
	top, err := c.build(shards)
	var gone []*member
	if err == nil {
		gone = c.install(top)
	}
	c.mu.Unlock()
	retireAll(gone)
	return err
}

// Refresh reloads the slot map and waits for the outcome within ctx, as
// any caller of the shared refresh does.
func (c *Router) Refresh(ctx context.Context) error { return c.refresh(ctx) }

// Inner is the backend a Grouped runs over.
func (g *Grouped) Inner() transport.Backend { return g.inner }
