package sentinel

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/redisx-go/kit/backend"
	"github.com/redisx-go/kit/internal/cluster"
	"github.com/redisx-go/kit/internal/command"
	"github.com/redisx-go/kit/internal/dial"
	"github.com/redisx-go/kit/internal/failure"
	"github.com/redisx-go/kit/internal/transport"
)

// Backend is a transport's node for the master the sentinels name, moved
// to the new master on a failover. It implements transport.Backend.
//
// The master's node is a member held by reference counts, as a cluster's
// nodes are (internal/cluster/nodes.go): a call acquires the current
// member and releases it when it returns. A switch installs a node for
// the new address and retires the old one, which no new call finds and
// which is closed when the last call still on it returns. Its calls fail
// by themselves: a master that crashed fails its connections, and one the
// sentinels demote ends them as it becomes a replica (they send CLIENT
// KILL TYPE normal with the REPLICAOF), so a call in flight on it fails
// with ErrConnection within its deadline rather than being answered by a
// replica. Every new connection checks with ROLE that it reached a master
// (dial.Dial with Config.Sentinel set).
//
// What moves a backend: a +switch-master message on the sentinel watched
// (watch.go), or a discovery (Discover) that names another master. A
// discovery runs when the watch subscribes (a switch may have been
// missed), and after a failure that a failover may explain: a call failed
// with ErrConnection, a write was refused as READONLY, or the master's
// ROLE, asked every second, says it is not one. The last two also replace
// the node even if the sentinels still name its address, so that the
// replica's connections serve nothing more.
type Backend struct {
	cfg  backend.Config // the master's nodes' settings: Sentinel set
	t    transport.Transport
	name string // the transport's Stats name, kept after Close

	cur atomic.Pointer[member] // nil once closed

	mu       sync.Mutex
	closed   bool
	retiring map[*member]struct{} // left, closed when their last call ends
	gone     backend.Stats        // counters of the members closed
	changed  chan struct{}        // closed when the master's address changes

	switches atomic.Int64

	// Reads from replicas (replicas.go), with Config.ReadFrom.
	replicas  atomic.Pointer[replicaSet]
	next      atomic.Uint64 // ReadReplicaPreferred's turn
	masterRTT atomic.Int64  // a moving average of the master's ROLE checks, in nanoseconds
	relist    atomic.Bool   // list the replicas at the next check

	wake chan struct{} // capacity 1: discover now
	// life is the context of the backend's own work (the watch, the
	// discoveries), cancelled by Close.
	life   context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

var _ transport.Backend = (*Backend)(nil)

// OpenBackend opens transport t's backend for cfg: over the master the
// sentinels of cfg.Sentinel name (Open), or by cluster.Open — a
// standalone server or a cluster. A ReadFrom out of range is refused.
func OpenBackend(ctx context.Context, cfg backend.Config, t transport.Transport) (transport.Backend, error) {
	if cfg.ReadFrom > backend.ReadNearest {
		return nil, fmt.Errorf("%w: ReadFrom %d is not ReadPrimary, ReadReplicaPreferred nor ReadNearest", backend.ErrInvalidArgument, cfg.ReadFrom)
	}
	if cfg.Sentinel == nil {
		return cluster.Open(ctx, cfg, t)
	}
	b, err := Open(ctx, cfg, t)
	if err != nil {
		return nil, err
	}
	return b, nil
}

// Open asks the sentinels of cfg.Sentinel for the master, opens t's node
// for it, and starts watching the sentinels. A master in cluster mode is
// refused: a Redis Cluster fails over by itself.
func Open(ctx context.Context, cfg backend.Config, t transport.Transport) (*Backend, error) {
	if err := Validate(cfg.Sentinel); err != nil {
		return nil, err
	}
	s := *cfg.Sentinel
	s.Addrs = append([]string(nil), s.Addrs...)
	cfg.Sentinel = &s
	addr, err := Discover(ctx, &cfg)
	if err != nil {
		return nil, err
	}
	n, err := t.OpenNode(ctx, cfg, addr)
	if err != nil {
		return nil, err
	}
	info, err := redis.String(n.Do(ctx, "INFO", "cluster"))
	if err != nil {
		n.Close()
		return nil, err
	}
	if strings.Contains(info, "cluster_enabled:1") {
		n.Close()
		return nil, fmt.Errorf("%w: the master %s that the sentinels name is a Redis Cluster node: use Addrs without Sentinel", backend.ErrInvalidArgument, addr)
	}
	b := &Backend{cfg: cfg, t: t, name: n.Stats().Strategy, retiring: map[*member]struct{}{},
		changed: make(chan struct{}), wake: make(chan struct{}, 1)}
	b.cur.Store(b.newMember(n))
	b.life, b.cancel = context.WithCancel(context.Background())
	if cfg.ReadFrom != backend.ReadPrimary {
		// Reads go to the replicas from the first one on; a failure here
		// leaves them on the master until the next check.
		b.tendReplicas(ctx, 0)
	}
	b.wg.Add(2)
	go b.watch()
	go b.follow()
	if cfg.ReadFrom != backend.ReadPrimary {
		b.wg.Add(1)
		go b.tend()
	}
	return b, nil
}

// Master returns the address of the master the backend sends to.
func (b *Backend) Master() string {
	if m := b.cur.Load(); m != nil {
		return m.n.Address()
	}
	return ""
}

// MasterChanged returns a channel closed when the master's address
// changes (or the backend is closed): ask Master then, and call
// MasterChanged again for the next change.
func (b *Backend) MasterChanged() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.changed
}

// Switches returns how many times the backend moved to a new master.
func (b *Backend) Switches() int64 { return b.switches.Load() }

// switchTo makes addr the master, unless it is already.
func (b *Backend) switchTo(addr string) {
	b.mu.Lock()
	old := b.cur.Load()
	if b.closed || old == nil || old.n.Address() == addr {
		b.mu.Unlock()
		return
	}
	ok := b.installLocked(addr, old)
	var promoted *member
	if ok {
		b.switches.Add(1)
		close(b.changed)
		b.changed = make(chan struct{})
		promoted = b.dropReplicaLocked(addr)
		b.relist.Store(true)
	}
	b.mu.Unlock()
	if ok {
		old.Retire()
	}
	if promoted != nil {
		promoted.Retire()
	}
}

// demoted replaces m, found answering as a replica, by a new node for
// the same address, whose connections will each check the role, and asks
// for a discovery.
func (b *Backend) demoted(m *member, _ error) {
	b.rediscover()
	b.mu.Lock()
	ok := !b.closed && b.cur.Load() == m && b.installLocked(m.n.Address(), m)
	b.mu.Unlock()
	if ok {
		m.Retire()
	}
}

// installLocked makes a node for addr the current member in place of old,
// which the caller retires once b.mu is released. b.mu must be held.
func (b *Backend) installLocked(addr string, old *member) bool {
	n, err := b.t.NewNode(b.cfg, addr)
	if err != nil {
		return false // the transport's options were checked at Open: not met
	}
	b.cur.Store(b.newMember(n))
	b.retiring[old] = struct{}{}
	return true
}

// acquire returns the current member, acquired: release it after the call.
func (b *Backend) acquire() (*member, error) {
	for {
		m := b.cur.Load()
		if m == nil {
			return nil, backend.ErrClosed
		}
		if m.Acquire() {
			return m, nil
		}
	}
}

// check looks at the error of a call on m for a sign of a failover, and
// returns the error the caller gets: a READONLY reply, which only a
// replica gives, becomes an Unsent ErrConnection (the write was not
// applied; the facade may send it again, to the new master).
func (b *Backend) check(m *member, err error) error {
	if err == nil {
		return nil
	}
	var re redis.Error
	switch {
	case errors.As(err, &re) && strings.HasPrefix(string(re), "READONLY"):
		err = failure.MarkUnsent(fmt.Errorf("%w: %s refused a write as a replica (READONLY): %w", backend.ErrConnection, m.n.Address(), dial.ErrNotMaster))
		b.demoted(m, err)
	case errors.Is(err, backend.ErrClosed), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
	case errors.Is(err, backend.ErrConnection) && b.cur.Load() == m:
		b.rediscover() // not for a node already left: its failure is expected
	}
	return err
}

// Close implements transport.Backend: the watch ends, and every node is
// closed; calls in flight fail with ErrClosed.
func (b *Backend) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	b.mu.Unlock()
	b.cancel()
	b.wg.Wait()
	b.mu.Lock()
	all := []*member{b.cur.Swap(nil)}
	for m := range b.retiring {
		all = append(all, m)
	}
	if rs := b.replicas.Swap(nil); rs != nil {
		for _, r := range *rs {
			all = append(all, r.m)
		}
	}
	close(b.changed)
	b.changed = make(chan struct{})
	b.mu.Unlock()
	for _, m := range all {
		m.Shut()
	}
	return nil
}

// Stats implements transport.Backend: the current node's figures, with the
// counters of the nodes closed since Open.
func (b *Backend) Stats() backend.Stats {
	s := backend.Stats{Strategy: b.name}
	b.mu.Lock()
	transport.AddCounters(&s, b.gone)
	if m := b.cur.Load(); m != nil {
		transport.AddNode(&s, m.n.Stats())
	}
	for m := range b.retiring {
		transport.AddNode(&s, m.n.Stats())
	}
	if rs := b.replicas.Load(); rs != nil {
		for _, r := range *rs {
			transport.AddNode(&s, r.m.n.Stats())
		}
	}
	b.mu.Unlock()
	return s
}

// Get implements transport.Backend.
func (b *Backend) Get(ctx context.Context, key string) ([]byte, error) {
	m, r, err := b.acquireRead()
	if err != nil {
		return nil, err
	}
	v, err := m.n.Get(ctx, key)
	m.Release()
	return v, b.afterRead(m, r, err)
}

// Set implements transport.Backend.
func (b *Backend) Set(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	m, err := b.acquire()
	if err != nil {
		return err
	}
	err = m.n.Set(ctx, key, value, ttl)
	m.Release()
	return b.check(m, err)
}

// Del implements transport.Backend.
func (b *Backend) Del(ctx context.Context, keys ...string) (int64, error) {
	m, err := b.acquire()
	if err != nil {
		return 0, err
	}
	n, err := m.n.Del(ctx, keys...)
	m.Release()
	return n, b.check(m, err)
}

// MGet implements transport.Backend.
func (b *Backend) MGet(ctx context.Context, keys []string) ([][]byte, error) {
	m, r, err := b.acquireRead()
	if err != nil {
		return nil, err
	}
	vs, err := m.n.MGet(ctx, keys)
	m.Release()
	return vs, b.afterRead(m, r, err)
}

// MSet implements transport.Backend.
func (b *Backend) MSet(ctx context.Context, kv map[string][]byte, ttl time.Duration) error {
	m, err := b.acquire()
	if err != nil {
		return err
	}
	err = m.n.MSet(ctx, kv, ttl)
	m.Release()
	return b.check(m, err)
}

// Do implements transport.Backend.
func (b *Backend) Do(ctx context.Context, args ...any) (any, error) {
	var m *member
	var r *replica
	var err error
	if b.cfg.ReadFrom != backend.ReadPrimary && command.ReplicaRead(args) {
		m, r, err = b.acquireRead()
	} else {
		m, err = b.acquire()
	}
	if err != nil {
		return nil, err
	}
	v, err := m.n.Do(ctx, args...)
	m.Release()
	return v, b.afterRead(m, r, err)
}

// GetWithTTL implements transport.Backend.
func (b *Backend) GetWithTTL(ctx context.Context, key string) ([]byte, time.Duration, error) {
	m, r, err := b.acquireRead()
	if err != nil {
		return nil, 0, err
	}
	v, ttl, err := m.n.GetWithTTL(ctx, key)
	m.Release()
	return v, ttl, b.afterRead(m, r, err)
}

// MGetWithTTL implements transport.Backend.
func (b *Backend) MGetWithTTL(ctx context.Context, keys []string) ([][]byte, []time.Duration, error) {
	m, r, err := b.acquireRead()
	if err != nil {
		return nil, nil, err
	}
	vs, ttls, err := m.n.MGetWithTTL(ctx, keys)
	m.Release()
	return vs, ttls, b.afterRead(m, r, err)
}

// member is a master's or a replica's node, held by the calls using it
// (transport.Held): a node that is replaced is closed when its last call
// ends.
type member struct {
	transport.Held
	n transport.Node
}

// newMember returns the member of n, whose close moves its counters to
// b's.
func (b *Backend) newMember(n transport.Node) *member {
	m := &member{n: n}
	m.Init(func() {
		n.Close()
		b.mu.Lock()
		transport.AddCounters(&b.gone, n.Stats())
		delete(b.retiring, m)
		b.mu.Unlock()
	})
	return m
}
