package localcache

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/redisx-go/kit/internal/topology"
	"github.com/redisx-go/kit/strategy"
)

// invalidator keeps one invalidation connection (a listener) per master
// and tells the store whether all of them are subscribed. On a cluster it
// rediscovers the masters every rediscoverPeriod and when a listener is
// lost, and reconciles the listeners with them; over Sentinel it does the
// same with the master the inner strategy follows, and at once when that
// changes. With TrackKeys the data connections' dials start the listener
// of their node too, if it has none yet (see track).
type invalidator struct {
	cfg      strategy.Config // Near's: without OnConnect
	mode     Tracking        // TrackKeys or TrackBroadcast
	follow   strategy.MasterFollower
	prefixes []string
	ping     time.Duration
	// s is the store, attached once everything else has opened (nil
	// before): what came before it named nothing cached.
	s atomic.Pointer[store]

	// ctx ends with close; every dial, handshake and discovery is bound to
	// it, so that close never waits for a server that stopped answering.
	ctx    context.Context
	cancel context.CancelFunc

	mu        sync.Mutex
	listeners map[string]*listener
	cluster   bool
	wake      chan struct{} // capacity 1: rediscover now

	// TrackKeys: opened is set once Open returns — from then on a data
	// connection whose tracking the server refuses is used untracked,
	// nothing being cached meanwhile, rather than failing its dial; hooked
	// counts the data connections track saw.
	opened atomic.Bool
	hooked atomic.Int64

	wg sync.WaitGroup
}

const rediscoverPeriod = time.Second

func newInvalidator(cfg strategy.Config, mode Tracking, prefixes []string, ping time.Duration) *invalidator {
	inv := &invalidator{cfg: cfg, mode: mode, prefixes: prefixes, ping: ping,
		listeners: map[string]*listener{}, wake: make(chan struct{}, 1)}
	inv.ctx, inv.cancel = context.WithCancel(context.Background())
	return inv
}

// start discovers the masters, starts their listeners and returns once
// every listener is subscribed (with TrackKeys, once every data
// connection dialled so far is tracked too). follow, over Sentinel, is
// the backend that reports the master.
func (inv *invalidator) start(ctx context.Context, follow strategy.MasterFollower) error {
	inv.follow = follow // before any goroutine that reads it
	masters, isCluster, err := inv.discover(ctx)
	if err != nil {
		return err
	}
	inv.mu.Lock()
	inv.cluster = isCluster
	inv.mu.Unlock()
	inv.reconcile(masters)
	// Serve nothing locally before every listener is subscribed. A
	// refusal (the user may not track or subscribe) is final: waiting for
	// the context's end would only hide it.
	for !inv.allUp() {
		if err := inv.refused(); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			why := "cancelled by the context"
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				why = "no answer before the context's deadline"
			}
			return fmt.Errorf("%w: invalidation of %s not set up (connection not subscribed, or data connections not tracked): %s (%w)", strategy.ErrConnection, strings.Join(inv.notUp(), ", "), why, ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
	if isCluster || follow != nil {
		inv.wg.Add(1)
		go inv.rediscoverLoop()
	}
	inv.opened.Store(true)
	return nil
}

// discover finds the masters: over Sentinel, the master the inner
// strategy follows; otherwise CLUSTER SHARDS (or SLOTS) on the first seed
// that answers, or the seed itself when cluster support is disabled.
func (inv *invalidator) discover(ctx context.Context) ([]string, bool, error) {
	if inv.follow != nil {
		return []string{inv.follow.Master()}, false, nil
	}
	var errs []error
	seeds := inv.cfg.Addrs
	inv.mu.Lock()
	for addr := range inv.listeners {
		seeds = append(seeds, addr)
	}
	inv.mu.Unlock()
	for _, addr := range seeds {
		c, err := dialRedigo(ctx, inv.cfg, addr, "invalidation")
		if err != nil {
			errs = append(errs, err)
			continue
		}
		do := func(ctx context.Context, args ...any) (any, error) {
			return redis.DoContext(c, ctx, args[0].(string), args[1:]...)
		}
		shards, err := topology.Discover(ctx, do, addr, inv.cfg.TLS != nil)
		c.Close()
		if errors.Is(err, topology.ErrNotCluster) {
			return []string{addr}, false, nil
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		return topology.NewMap(shards).Masters(), true, nil
	}
	return nil, false, fmt.Errorf("%w: discover masters for invalidation: %w", strategy.ErrConnection, errors.Join(errs...))
}

// reconcile starts listeners for new masters and stops those of servers
// that are no longer masters — on a cluster with TrackKeys, only once
// such a listener is down or no data connection is pointed to it: the
// router may reach a new master before this discovery does, and its
// connections there are tracked all the same (the new master's listener
// flushed the cache when it started). The data connections of a listener
// stopped are closed, and the cache flushed if any was tracked: nothing
// invalidates what was read through them any more.
func (inv *invalidator) reconcile(masters []string) {
	var stopped []*listener
	inv.mu.Lock()
	if inv.ctx.Err() != nil {
		inv.mu.Unlock()
		return // closed
	}
	changed := false
	for addr, l := range inv.listeners {
		if slices.Contains(masters, addr) {
			continue
		}
		if inv.mode == TrackKeys && inv.follow == nil && l.isUp() && l.pointed() {
			continue
		}
		l.close()
		delete(inv.listeners, addr)
		stopped = append(stopped, l)
		changed = true
	}
	for _, addr := range masters {
		if _, ok := inv.listeners[addr]; !ok {
			inv.addLocked(addr)
			changed = true
		}
	}
	if changed {
		inv.updateLocked()
	}
	inv.mu.Unlock()
	for _, l := range stopped {
		l.drop(func(int64, *dataConn) bool { return false })
	}
}

// addLocked starts the listener of addr (and, with TrackKeys, its
// checker); inv.mu is held.
func (inv *invalidator) addLocked(addr string) *listener {
	l := &listener{addr: addr, inv: inv, changed: make(chan struct{}), checkOK: true}
	l.ctx, l.cancel = context.WithCancel(inv.ctx)
	inv.listeners[addr] = l
	inv.wg.Add(1)
	go l.run()
	if inv.mode == TrackKeys {
		inv.wg.Add(1)
		go l.check()
	}
	return l
}

// listenerFor returns the listener of addr, starting it if there is none;
// nil once the invalidator is closed.
func (inv *invalidator) listenerFor(addr string) *listener {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	if inv.ctx.Err() != nil {
		return nil
	}
	if l, ok := inv.listeners[addr]; ok {
		return l
	}
	l := inv.addLocked(addr)
	inv.updateLocked()
	if inv.cluster {
		inv.rediscover() // a new master, perhaps: tell what discovery says
	}
	return l
}

// refused returns the refusal a listener met at its last connect, if any.
func (inv *invalidator) refused() error {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	for _, l := range inv.listeners {
		l.mu.Lock()
		err := l.refused
		l.mu.Unlock()
		if err != nil {
			return err
		}
	}
	return nil
}

func (inv *invalidator) allUp() bool {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	for _, l := range inv.listeners {
		if !l.healthy() {
			return false
		}
	}
	return len(inv.listeners) > 0
}

// notUp returns the addresses of the listeners not healthy, sorted.
func (inv *invalidator) notUp() []string {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	var down []string
	for addr, l := range inv.listeners {
		if !l.healthy() {
			down = append(down, addr)
		}
	}
	slices.Sort(down)
	return down
}

// update recomputes the store's health from the listeners.
func (inv *invalidator) update() {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	inv.updateLocked()
}

func (inv *invalidator) updateLocked() {
	if inv.ctx.Err() != nil {
		return // closed: the store serves nothing, and no flush is counted
	}
	s := inv.s.Load()
	if s == nil {
		return // not attached yet: attach sets its health
	}
	up := len(inv.listeners) > 0
	for _, l := range inv.listeners {
		up = up && l.healthy()
	}
	if up {
		s.up()
	} else {
		s.down()
	}
}

// attach makes s the store the invalidations apply to, healthy if every
// listener is. Until then there was nothing to invalidate or flush.
func (inv *invalidator) attach(s *store) {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	inv.s.Store(s)
	inv.updateLocked()
}

// flush flushes the store, if attached.
func (inv *invalidator) flush() {
	if s := inv.s.Load(); s != nil {
		s.flush()
	}
}

// invalidated applies the invalidation of keys, which the server sent,
// to the store, if attached.
func (inv *invalidator) invalidated(keys []string) {
	if s := inv.s.Load(); s != nil {
		s.received.Add(int64(len(keys)))
		s.invalidate(keys...)
	}
}

func (inv *invalidator) rediscover() {
	select {
	case inv.wake <- struct{}{}:
	default:
	}
}

func (inv *invalidator) rediscoverLoop() {
	defer inv.wg.Done()
	t := time.NewTicker(rediscoverPeriod)
	defer t.Stop()
	for {
		// Over Sentinel, a failover the inner strategy followed moves the
		// listener at once: the old one is closed, the local cache
		// flushed, and nothing is served locally until the new master's
		// listener is subscribed. (The channel is taken before discover
		// reads the master, so that no change falls between the two.)
		var changed <-chan struct{}
		if inv.follow != nil {
			changed = inv.follow.MasterChanged()
		}
		select {
		case <-inv.ctx.Done():
			return
		case <-t.C:
		case <-inv.wake:
		case <-changed:
		}
		ctx, cancel := context.WithTimeout(inv.ctx, 2*time.Second)
		masters, _, err := inv.discover(ctx)
		cancel()
		if err == nil && len(masters) > 0 {
			inv.reconcile(masters)
		}
	}
}

// close stops serving from the store, then ends every listener and the
// rediscovery — whatever step they are in: ending inv.ctx closes their
// connections — and waits for them.
func (inv *invalidator) close() {
	inv.mu.Lock()
	if s := inv.s.Load(); s != nil {
		s.stopServing()
	}
	inv.cancel()
	inv.mu.Unlock()
	inv.wg.Wait()
}

// dialRedigo opens a redigo connection with the shared settings, through
// strategy.Dial: the same credentials (Config.Credentials included), TLS
// and handshake as the strategy's own connections, and the same errors
// (ErrAuth for refused credentials). ctx bounds the whole dial. role is
// appended to Config.ClientName, when set.
func dialRedigo(ctx context.Context, cfg strategy.Config, addr, role string) (redis.Conn, error) {
	nc, err := strategy.Dial(ctx, roleConfig(cfg, role), addr)
	if err != nil {
		return nil, err
	}
	return redis.NewConn(nc, 0, 0), nil
}

// roleConfig is cfg for a connection of Near's own in role: role is
// appended to Config.ClientName, when set, and the database is 0.
func roleConfig(cfg strategy.Config, role string) strategy.Config {
	if cfg.ClientName != "" {
		cfg.ClientName += "-" + role
	}
	cfg.DB = 0 // tracking and invalidation messages know no database
	return cfg
}
