package strategy

import (
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/redisx-go/kit/internal/cluster"
)

// Cluster routing. A clusterBackend keeps one transport node per server
// and an immutable topology (slot → master) swapped atomically. MOVED
// patches the slot at once and refreshes the whole map in the background;
// ASK sends ASKING and the command together to the importing node;
// TRYAGAIN, CLUSTERDOWN, LOADING and MASTERDOWN are retried with backoff,
// and so are connection failures of cache operations, after a refresh —
// all within the caller's deadline and maxAttempts.

const (
	maxAttempts     = 8                      // tries of one command, redirects included
	refreshCooldown = 100 * time.Millisecond // between two map refreshes
	refreshPeriod   = 15 * time.Second       // background refresh without any trigger
	refreshTimeout  = 2 * time.Second        // one refresh attempt
)

type clusterBackend struct {
	cfg   Config
	t     transport
	state atomic.Pointer[topology]

	mu    sync.Mutex
	nodes map[string]node // every node routed to so far, by address

	refreshMu   sync.Mutex
	refreshing  *dialWait
	lastRefresh time.Time

	closed atomic.Bool
	stop   chan struct{}
	wg     sync.WaitGroup

	redirects, refreshes, refreshErrors atomic.Int64
}

// topology is one immutable view of the slot map.
type topology struct {
	owner   [cluster.Slots]uint16 // 0: unassigned; i+1: masters[i]
	masters []node
}

func (t *topology) master(slot int) node {
	if i := t.owner[slot]; i != 0 {
		return t.masters[i-1]
	}
	return nil
}

func newCluster(cfg Config, t transport, seed node, shards []cluster.Shard) (*clusterBackend, error) {
	c := &clusterBackend{cfg: cfg, t: t, nodes: map[string]node{seed.address(): seed}, stop: make(chan struct{})}
	top, err := c.build(shards)
	if err != nil {
		c.Close()
		return nil, err
	}
	c.state.Store(top)
	c.lastRefresh = time.Now()
	c.wg.Add(1)
	go c.refreshLoop()
	return c, nil
}

// node returns the node of addr, creating it (unconnected) on first use.
func (c *clusterBackend) node(addr string) (node, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n, ok := c.nodes[addr]; ok {
		return n, nil
	}
	if c.closed.Load() {
		return nil, ErrClosed
	}
	n, err := c.t.newNode(c.cfg, addr)
	if err != nil {
		return nil, err
	}
	c.nodes[addr] = n
	return n, nil
}

func (c *clusterBackend) build(shards []cluster.Shard) (*topology, error) {
	m := cluster.NewMap(shards)
	top := &topology{}
	index := map[string]uint16{}
	for slot := 0; slot < cluster.Slots; slot++ {
		addr := m.Master(slot)
		if addr == "" {
			continue
		}
		i, ok := index[addr]
		if !ok {
			n, err := c.node(addr)
			if err != nil {
				return nil, err
			}
			top.masters = append(top.masters, n)
			i = uint16(len(top.masters))
			index[addr] = i
		}
		top.owner[slot] = i
	}
	return top, nil
}

// moved points slot at addr at once; the background refresh brings the
// rest of the map up to date.
func (c *clusterBackend) moved(slot int, addr string) {
	n, err := c.node(addr)
	if err != nil {
		return
	}
	old := c.state.Load()
	top := &topology{owner: old.owner, masters: old.masters}
	i := 0
	for j, m := range top.masters {
		if m == n {
			i = j + 1
		}
	}
	if i == 0 {
		top.masters = append(append([]node(nil), old.masters...), n)
		i = len(top.masters)
	}
	top.owner[slot] = uint16(i)
	c.state.CompareAndSwap(old, top)
	c.triggerRefresh()
}

// triggerRefresh refreshes the map in the background unless one runs or
// ran within the cooldown.
func (c *clusterBackend) triggerRefresh() {
	c.refreshMu.Lock()
	busy := c.refreshing != nil || time.Since(c.lastRefresh) < refreshCooldown || c.closed.Load()
	if !busy {
		c.wg.Add(1)
	}
	c.refreshMu.Unlock()
	if !busy {
		go func() {
			defer c.wg.Done()
			c.refresh(context.Background())
		}()
	}
}

// refresh reloads the slot map, single-flighted: concurrent callers share
// one reload, and none runs within refreshCooldown of the last.
func (c *clusterBackend) refresh(ctx context.Context) error {
	c.refreshMu.Lock()
	if w := c.refreshing; w != nil {
		c.refreshMu.Unlock()
		select {
		case <-w.done:
			return w.err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if time.Since(c.lastRefresh) < refreshCooldown {
		c.refreshMu.Unlock()
		return nil
	}
	w := &dialWait{done: make(chan struct{})}
	c.refreshing = w
	c.refreshMu.Unlock()

	err := c.reload()
	c.refreshes.Add(1)
	if err != nil {
		c.refreshErrors.Add(1)
	}
	c.refreshMu.Lock()
	c.refreshing = nil
	c.lastRefresh = time.Now()
	w.err = err
	close(w.done)
	c.refreshMu.Unlock()
	return err
}

// reload asks the current masters (in random order), then the seeds, for
// the shards, and installs the first answer.
func (c *clusterBackend) reload() error {
	var addrs []string
	for _, m := range c.state.Load().masters {
		addrs = append(addrs, m.address())
	}
	rand.Shuffle(len(addrs), func(i, j int) { addrs[i], addrs[j] = addrs[j], addrs[i] })
	addrs = append(addrs, c.cfg.Addrs...)
	var err error
	for _, addr := range addrs {
		if c.closed.Load() {
			return ErrClosed
		}
		var n node
		if n, err = c.node(addr); err != nil {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), refreshTimeout)
		var shards []cluster.Shard
		shards, err = discover(ctx, n)
		cancel()
		if err != nil {
			continue
		}
		var top *topology
		if top, err = c.build(shards); err != nil {
			continue
		}
		c.state.Store(top)
		return nil
	}
	return err
}

func (c *clusterBackend) refreshLoop() {
	defer c.wg.Done()
	t := time.NewTicker(refreshPeriod)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
			c.refresh(context.Background())
		}
	}
}

// route runs op on the master of slot, following redirects and retrying
// transient failures within ctx. ask runs the command on an importing node
// after ASKING. retryConn allows a retry after a connection failure, for
// commands that are safe to repeat.
func (c *clusterBackend) route(ctx context.Context, slot int, retryConn bool, op, ask func(node) error) error {
	if c.closed.Load() {
		return ErrClosed
	}
	var err error
	backoff := 5 * time.Millisecond
	for attempt := 0; attempt < maxAttempts; attempt++ {
		n := c.state.Load().master(slot)
		if n == nil {
			err = errSlotUnserved
		} else {
			err = op(n)
		}
		if err == nil {
			return nil
		}
		var re redis.Error
		switch {
		case errors.As(err, &re):
			if rd, ok := cluster.ParseRedirect(string(re)); ok {
				c.redirects.Add(1)
				addr := rd.Addr
				if strings.HasPrefix(addr, ":") && n != nil {
					// An empty host means the host of the node that replied.
					host, _, _ := net.SplitHostPort(n.address())
					addr = net.JoinHostPort(host, addr[1:])
				}
				if !rd.Ask {
					c.moved(rd.Slot, addr)
					continue
				}
				target, e := c.node(addr)
				if e != nil {
					return e
				}
				if err = ask(target); err == nil {
					return nil
				}
				if errors.As(err, &re) {
					if _, ok := cluster.ParseRedirect(string(re)); ok {
						continue // the slot moved on meanwhile
					}
				}
				if !retryable(err) {
					return err
				}
			} else if !retryable(err) {
				return err
			}
		case errors.Is(err, errSlotUnserved):
		case retryConn && errors.Is(err, ErrConnection) && !errors.Is(err, ErrClosed):
		default:
			if errors.Is(err, ErrConnection) && !errors.Is(err, ErrClosed) {
				// Not retried (the command may have run), but a refused or
				// broken master is a reason to look at the map again.
				c.triggerRefresh()
			}
			return err
		}
		// Transient: the map may be stale (a master died or a slot is being
		// moved). Refresh and back off, within the caller's deadline.
		c.triggerRefresh()
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-c.stop:
			t.Stop()
			return ErrClosed
		case <-t.C:
		}
		backoff = min(2*backoff, 200*time.Millisecond)
	}
	return err
}

var errSlotUnserved = errors.New("redisx: slot served by no master (cluster down or topology changing)")

// retryable reports server replies that mean "not now" rather than "no":
// the command was not executed and may be sent again.
func retryable(err error) bool {
	var re redis.Error
	if !errors.As(err, &re) {
		return false
	}
	for _, p := range []string{"TRYAGAIN", "CLUSTERDOWN", "LOADING", "MASTERDOWN"} {
		if strings.HasPrefix(string(re), p) {
			return true
		}
	}
	return false
}

// Close implements Backend.
func (c *clusterBackend) Close() error {
	if c.closed.Swap(true) {
		return nil
	}
	close(c.stop)
	c.wg.Wait()
	c.mu.Lock()
	nodes := c.nodes
	c.nodes = nil
	c.mu.Unlock()
	for _, n := range nodes {
		n.Close()
	}
	return nil
}

// Stats implements Statser: the nodes' figures summed.
func (c *clusterBackend) Stats() Stats {
	c.mu.Lock()
	nodes := make([]node, 0, len(c.nodes))
	for _, n := range c.nodes {
		nodes = append(nodes, n)
	}
	c.mu.Unlock()
	var s Stats
	for _, n := range nodes {
		ns := n.Stats()
		s.Strategy = ns.Strategy
		s.Conns += ns.Conns
		s.Pending += ns.Pending
		s.Flushes += ns.Flushes
		s.Commands += ns.Commands
		s.InUse += ns.InUse
		s.Idle += ns.Idle
		s.MaxConns += ns.MaxConns
		s.Acquires += ns.Acquires
		s.AcquireWait += ns.AcquireWait
		s.EmptyAcquires += ns.EmptyAcquires
		s.CanceledAcquire += ns.CanceledAcquire
		s.Dials += ns.Dials
		s.DialErrors += ns.DialErrors
		s.BrokenConns += ns.BrokenConns
	}
	s.Nodes = len(nodes)
	s.Masters = len(c.state.Load().masters)
	s.Redirects = c.redirects.Load()
	s.TopologyRefreshes = c.refreshes.Load()
	return s
}
