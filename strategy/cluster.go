package strategy

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/redisx-go/kit/internal/cluster"
)

// Cluster routing. A clusterBackend keeps one transport node per master
// and an immutable topology (slot → master) swapped atomically. MOVED
// patches the slot at once and refreshes the whole map in the background;
// ASK sends ASKING and the command together to the importing node;
// TRYAGAIN, CLUSTERDOWN, LOADING and MASTERDOWN are retried with backoff,
// and so are connection failures of cache operations, after a refresh —
// all within the caller's deadline and maxAttempts.
//
// The rest of the mechanism, by file: clusternodes.go, which nodes are
// held open and when one that left the map is closed; clusterrefresh.go,
// the reloads of the map; clusterops.go, the cache operations; clusterdo.go,
// where a generic command (Do) goes.

const (
	maxAttempts     = 8                      // tries of one command, redirects included
	refreshCooldown = 100 * time.Millisecond // between two map refreshes
	refreshPeriod   = 15 * time.Second       // background refresh without any trigger
	refreshTimeout  = 2 * time.Second        // one refresh attempt
)

type clusterBackend struct {
	cfg   Config
	t     transport
	name  string // the transport's Stats name, kept for Stats after Close
	state atomic.Pointer[topology]

	mu       sync.Mutex           // guards the fields below and every change of state
	nodes    map[string]*member   // the nodes held open, by address; nil once closed
	retiring map[*member]struct{} // nodes that left, closed when their last call ends
	gone     Stats                // the counters of the nodes closed so far

	refreshMu    sync.Mutex  // guards the fields below; see clusterrefresh.go
	refreshing   *dialWait   // the reload in progress, if any
	lastRefresh  time.Time   // when the last reload ended
	refreshAgain bool        // a trigger came during the reload in progress
	trailing     *time.Timer // the reload due at the end of the cooldown

	closed atomic.Bool
	stop   chan struct{}
	wg     sync.WaitGroup // refreshLoop, the reloads and the trailing timer
	// life is the context of the client's own work (refreshes), cancelled
	// by Close; callers' contexts never carry shared work.
	life    context.Context
	endLife context.CancelFunc

	redirects, refreshes, refreshErrors atomic.Int64
}

// topology is one immutable view of the slot map. Its masters are
// members of the cluster's nodes when it is installed; a member that
// leaves a later view is retired (see member).
type topology struct {
	owner   [cluster.Slots]uint16 // 0: unassigned; i+1: masters[i]
	masters []*member
}

// master returns the member serving slot, or nil.
func (t *topology) master(slot int) *member {
	if i := t.owner[slot]; i != 0 {
		return t.masters[i-1]
	}
	return nil
}

// serves reports whether the current map has n serve slot.
func (c *clusterBackend) serves(slot int, n node) bool {
	m := c.state.Load().master(slot)
	return m != nil && n != nil && m.n == n
}

func newCluster(cfg Config, t transport, seed node, shards []cluster.Shard) (*clusterBackend, error) {
	c := &clusterBackend{
		cfg:      cfg,
		t:        t,
		name:     seed.Stats().Strategy,
		retiring: map[*member]struct{}{},
		stop:     make(chan struct{}),
	}
	c.life, c.endLife = context.WithCancel(context.Background())
	c.nodes = map[string]*member{seed.address(): c.newMember(seed)}
	c.mu.Lock()
	top, err := c.build(shards)
	var gone []*member
	if err == nil {
		gone = c.install(top)
	}
	c.mu.Unlock()
	retireAll(gone) // the seed, unless it is a master
	if err != nil {
		c.Close()
		return nil, err
	}
	c.lastRefresh = time.Now()
	c.wg.Add(1)
	go c.refreshLoop()
	return c, nil
}

// build makes the topology of shards, creating (unconnected) the nodes of
// masters met for the first time. c.mu must be held.
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
			n, err := c.memberLocked(addr)
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
// rest of the map up to date. A master left without slots leaves the map.
func (c *clusterBackend) moved(slot int, addr string) {
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
	top := &topology{}
	index := map[*member]uint16{}
	for s := range cluster.Slots {
		m := owner(s)
		if m == nil {
			continue
		}
		i, ok := index[m]
		if !ok {
			top.masters = append(top.masters, m)
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

// route runs op on the master of slot, following redirects and retrying
// transient failures within ctx. ask runs the command on an importing node
// after ASKING. retry says when a connection failure is retried: reads
// always, writes only when the request provably never reached the server
// (Unsent), other commands never. The node is held (acquire) for the
// length of each call, so that it is not closed under it.
func (c *clusterBackend) route(ctx context.Context, slot int, retry connRetry, op, ask func(node) error) error {
	if c.closed.Load() {
		return ErrClosed
	}
	var err error
	backoff := 5 * time.Millisecond
	for attempt := 0; attempt < maxAttempts; attempt++ {
		m := c.state.Load().master(slot)
		switch {
		case m == nil:
			err = errSlotUnserved
		case !m.acquire():
			// Retired since we loaded the map: the new map is installed.
			err = errSlotUnserved
			continue
		default:
			err = op(m.n)
			m.release()
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
				if strings.HasPrefix(addr, ":") && m != nil {
					// An empty host means the host of the node that replied.
					host, _, _ := net.SplitHostPort(m.n.address())
					addr = net.JoinHostPort(host, addr[1:])
				}
				if !rd.Ask {
					c.moved(rd.Slot, addr)
					continue
				}
				target, e := c.acquireAddr(addr)
				if e != nil {
					return e
				}
				err = ask(target.n)
				target.release()
				if err == nil {
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
		case retry.allows(err):
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

// connRetry is when route retries a command after a connection failure.
type connRetry uint8

const (
	retryNever  connRetry = iota // the command may have run: Do
	retryUnsent                  // a write: only when it was never sent
	retryReads                   // a read: reading again changes nothing
)

func (r connRetry) allows(err error) bool {
	if !errors.Is(err, ErrConnection) || errors.Is(err, ErrClosed) {
		return false
	}
	return r == retryReads || r == retryUnsent && Unsent(err)
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
