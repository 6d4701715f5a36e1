package cluster

import (
	"sync/atomic"

	"github.com/redisx-go/kit/backend"
	"github.com/redisx-go/kit/internal/transport"
)

// The cluster's nodes and their lifetime. The cluster holds a node open
// while the slot map lists it as a master, or while it is used for
// something else (asked for the map as a seed, sent an ASK). A node that
// leaves the map — a demoted or replaced master, a seed that is no master,
// an importing node once the migration is over — is retired at the next
// change of the map: taken out of c.nodes, so that no call finds it any
// more, and closed when the last call in flight on it ends. Without this
// the set of nodes only grows where addresses change (Kubernetes, managed
// Redis), each keeping its connections and goroutines.

// member is a node of the cluster, held by the calls using it (see
// Held): a master that leaves the slot map is closed when its last call
// ends.
type member struct {
	transport.Held
	n transport.Node // the node; use it between Acquire and Release
	c *Router

	// Reads from replicas (replicas.go): until when a replica is skipped
	// after a failed read (Unix nanoseconds), and the moving average of
	// its reads' round trips (nanoseconds; 0: none measured yet).
	skipUntil atomic.Int64
	rtt       atomic.Int64
}

// address returns m's address, or a placeholder for a nil m (no master).
func (m *member) address() string {
	if m == nil {
		return nodeAddr(nil)
	}
	return m.n.Address()
}

func (c *Router) newMember(n transport.Node) *member {
	m := &member{n: n, c: c}
	m.Init(func() {
		// Its counters move to the cluster's.
		n.Close()
		c.mu.Lock()
		transport.AddCounters(&c.gone, n.Stats())
		delete(c.retiring, m)
		c.mu.Unlock()
	})
	return m
}

// memberLocked returns the node of addr, creating it (unconnected) on
// first use. c.mu must be held.
func (c *Router) memberLocked(addr string) (*member, error) {
	if c.nodes == nil {
		return nil, backend.ErrClosed
	}
	if m, ok := c.nodes[addr]; ok {
		return m, nil
	}
	n, err := c.t.NewNode(c.cfg, addr)
	if err != nil {
		return nil, err
	}
	m := c.newMember(n)
	c.nodes[addr] = m
	return m, nil
}

// acquireAddr returns the node of addr, created on first use, acquired:
// the caller must release it. A node that is not a master is retired at
// the next change of the map (see prune).
func (c *Router) acquireAddr(addr string) (*member, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m, err := c.memberLocked(addr)
	if err != nil {
		return nil, err
	}
	// A node in c.nodes is not retired (prune takes it out first, under
	// c.mu), so the count alone is enough — and acquire's release path,
	// which may take c.mu, is never needed here.
	m.Hold()
	return m, nil
}

// acquireMasters returns every master of the current map, acquired: the
// caller must release them.
func (c *Router) acquireMasters() []*member {
	for {
		masters := c.state.Load().masters
		held := make([]*member, 0, len(masters))
		for _, m := range masters {
			if !m.Acquire() {
				break // retired since we loaded the map: load the new one
			}
			held = append(held, m)
		}
		if len(held) == len(masters) {
			return held
		}
		for _, m := range held {
			m.Release()
		}
	}
}

// install makes top the slot map and takes the nodes it no longer needs
// out of c.nodes (see prune). c.mu must be held.
func (c *Router) install(top *table) []*member {
	c.state.Store(top)
	return c.prune()
}

// prune takes every node the current map does not list as a master (or a
// replica read from) out of
// c.nodes, so that no new call finds it, and returns them: the caller
// retires them once it has released c.mu (retire may close, which takes
// c.mu). Calls holding them meanwhile keep them open. c.mu must be held.
func (c *Router) prune() []*member {
	if c.nodes == nil {
		return nil
	}
	live := make(map[*member]bool, len(c.nodes))
	top := c.state.Load()
	for _, m := range top.masters {
		live[m] = true
	}
	for _, rs := range top.replicas {
		for _, m := range rs {
			live[m] = true
		}
	}
	var out []*member
	for addr, m := range c.nodes {
		if !live[m] {
			delete(c.nodes, addr)
			c.retiring[m] = struct{}{}
			out = append(out, m)
		}
	}
	return out
}

// retireAll retires the members prune returned. c.mu must not be held.
func retireAll(ms []*member) {
	for _, m := range ms {
		m.Retire()
	}
}

// Close implements Backend. Calls still in flight fail with ErrClosed.
func (c *Router) Close() error {
	c.refreshMu.Lock() // see startLocked
	wasClosed := c.closed.Swap(true)
	c.stopRefreshesLocked()
	c.refreshMu.Unlock()
	if wasClosed {
		return nil
	}
	close(c.stop)
	c.endLife()
	c.wg.Wait()
	c.mu.Lock()
	all := make([]*member, 0, len(c.nodes)+len(c.retiring))
	for _, m := range c.nodes {
		all = append(all, m)
	}
	for m := range c.retiring {
		all = append(all, m)
	}
	c.nodes = nil
	c.mu.Unlock()
	for _, m := range all {
		m.Shut()
	}
	return nil
}

// Stats implements Statser: the figures of the nodes held open, and the
// counters of those closed since, summed.
func (c *Router) Stats() backend.Stats {
	s := backend.Stats{Strategy: c.name}
	c.mu.Lock()
	transport.AddCounters(&s, c.gone)
	for _, m := range c.nodes {
		transport.AddNode(&s, m.n.Stats())
	}
	for m := range c.retiring {
		transport.AddNode(&s, m.n.Stats())
	}
	s.Nodes = len(c.nodes) + len(c.retiring)
	open := c.nodes != nil
	c.mu.Unlock()
	if open {
		s.Masters = len(c.state.Load().masters)
	}
	s.Redirects = c.redirects.Load()
	s.TopologyRefreshes = c.refreshes.Load()
	return s
}
