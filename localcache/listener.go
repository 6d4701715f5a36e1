package localcache

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/redisx-go/kit/internal/cluster"
	"github.com/redisx-go/kit/strategy"
)

// invalidator keeps one invalidation connection (a listener) per master
// and tells the store whether all of them are subscribed. On a cluster it
// rediscovers the masters every rediscoverPeriod and when a listener is
// lost, and reconciles the listeners with them.
type invalidator struct {
	cfg      strategy.Config
	prefixes []string
	ping     time.Duration
	s        *store

	mu        sync.Mutex
	listeners map[string]*listener
	cluster   bool
	wake      chan struct{} // capacity 1: rediscover now

	stop chan struct{}
	wg   sync.WaitGroup
}

const rediscoverPeriod = time.Second

func startInvalidator(ctx context.Context, cfg strategy.Config, s *store, prefixes []string, ping time.Duration) (*invalidator, error) {
	inv := &invalidator{cfg: cfg, prefixes: prefixes, ping: ping, s: s,
		listeners: map[string]*listener{}, wake: make(chan struct{}, 1), stop: make(chan struct{})}
	masters, isCluster, err := inv.discover(ctx)
	if err != nil {
		return nil, err
	}
	inv.cluster = isCluster
	inv.reconcile(masters)
	// Serve nothing locally before every listener is subscribed.
	for !inv.allUp() {
		select {
		case <-ctx.Done():
			inv.close()
			return nil, fmt.Errorf("%w: invalidation connections not subscribed: %w", strategy.ErrConnection, ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
	if isCluster {
		inv.wg.Add(1)
		go inv.rediscoverLoop()
	}
	return inv, nil
}

// discover finds the masters: CLUSTER SHARDS (or SLOTS) on the first seed
// that answers, or the seed itself when cluster support is disabled.
func (inv *invalidator) discover(ctx context.Context) ([]string, bool, error) {
	var errs []error
	seeds := inv.cfg.Addrs
	inv.mu.Lock()
	for addr := range inv.listeners {
		seeds = append(seeds, addr)
	}
	inv.mu.Unlock()
	for _, addr := range seeds {
		c, err := dialRedigo(ctx, inv.cfg, addr)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		v, err := redis.DoContext(c, ctx, "CLUSTER", "SHARDS")
		var shards []cluster.Shard
		var re redis.Error
		switch {
		case errors.As(err, &re) && strings.Contains(strings.ToLower(string(re)), "cluster support disabled"):
			c.Close()
			return []string{addr}, false, nil
		case errors.As(err, &re) && strings.Contains(strings.ToLower(string(re)), "unknown"):
			if v, err = redis.DoContext(c, ctx, "CLUSTER", "SLOTS"); err == nil {
				shards, err = cluster.ParseSlots(v)
			}
		case err == nil:
			shards, err = cluster.ParseShards(v)
		}
		c.Close()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		return cluster.NewMap(shards).Masters(), true, nil
	}
	return nil, false, fmt.Errorf("%w: discover masters for invalidation: %w", strategy.ErrConnection, errors.Join(errs...))
}

// reconcile starts listeners for new masters and stops those of servers
// that are no longer masters.
func (inv *invalidator) reconcile(masters []string) {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	select {
	case <-inv.stop:
		return
	default:
	}
	changed := false
	for addr, l := range inv.listeners {
		if !slices.Contains(masters, addr) {
			l.close()
			delete(inv.listeners, addr)
			changed = true
		}
	}
	for _, addr := range masters {
		if _, ok := inv.listeners[addr]; !ok {
			l := &listener{addr: addr, inv: inv, done: make(chan struct{})}
			inv.listeners[addr] = l
			inv.wg.Add(1)
			go l.run()
			changed = true
		}
	}
	if changed {
		inv.updateLocked()
	}
}

func (inv *invalidator) allUp() bool {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	for _, l := range inv.listeners {
		if !l.isUp() {
			return false
		}
	}
	return len(inv.listeners) > 0
}

// update recomputes the store's health from the listeners.
func (inv *invalidator) update() {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	inv.updateLocked()
}

func (inv *invalidator) updateLocked() {
	up := len(inv.listeners) > 0
	for _, l := range inv.listeners {
		up = up && l.isUp()
	}
	inv.s.setHealthy(up)
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
		select {
		case <-inv.stop:
			return
		case <-t.C:
		case <-inv.wake:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		masters, _, err := inv.discover(ctx)
		cancel()
		if err == nil && len(masters) > 0 {
			inv.reconcile(masters)
		}
	}
}

func (inv *invalidator) close() {
	inv.mu.Lock()
	select {
	case <-inv.stop:
	default:
		close(inv.stop)
	}
	for _, l := range inv.listeners {
		l.close()
	}
	inv.mu.Unlock()
	inv.wg.Wait()
	inv.s.setHealthy(false)
}

// listener is one invalidation connection: tracking in BCAST mode
// redirected to itself, subscribed to __redis__:invalidate.
type listener struct {
	addr string
	inv  *invalidator

	mu     sync.Mutex
	up     bool
	conn   redis.Conn
	closed bool
	done   chan struct{}
}

func (l *listener) isUp() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.up
}

func (l *listener) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	l.closed = true
	close(l.done)
	if l.conn != nil {
		l.conn.Close()
	}
}

func (l *listener) run() {
	defer l.inv.wg.Done()
	const firstBackoff = 20 * time.Millisecond
	backoff := firstBackoff
	for {
		err := l.session()
		l.mu.Lock()
		if l.up {
			backoff = firstBackoff // it was subscribed: this is a new loss
		}
		l.up = false
		l.conn = nil
		closed := l.closed
		l.mu.Unlock()
		// Invalidations may be missed from now on: flush and serve nothing
		// locally until this listener is back.
		l.inv.update()
		if closed {
			return
		}
		if err != nil {
			l.inv.rediscover() // a failover may have moved the master
		}
		select {
		case <-l.done:
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, time.Second)
	}
}

// session connects, subscribes and reads invalidations until the
// connection fails or the listener is closed.
func (l *listener) session() error {
	ctx, cancel := context.WithTimeout(context.Background(), max(l.inv.cfg.DialTimeout, time.Second))
	c, err := dialRedigo(ctx, l.inv.cfg, l.addr)
	cancel()
	if err != nil {
		return err
	}
	defer c.Close()
	id, err := redis.Int64(c.Do("CLIENT", "ID"))
	if err != nil {
		return err
	}
	args := redis.Args{"TRACKING", "on", "REDIRECT", id, "BCAST"}
	for _, p := range l.inv.prefixes {
		args = args.Add("PREFIX", p)
	}
	if _, err := c.Do("CLIENT", args...); err != nil {
		return err
	}
	if err := c.Send("SUBSCRIBE", "__redis__:invalidate"); err != nil {
		return err
	}
	if err := c.Flush(); err != nil {
		return err
	}
	if _, err := redis.ReceiveWithTimeout(c, l.inv.ping*3); err != nil {
		return err
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.conn, l.up = c, true
	l.mu.Unlock()
	l.inv.update()

	// The pinger proves the connection alive even when nothing is written:
	// a silent loss shows up as a missed pong. redigo allows one sender
	// and one receiver concurrently.
	stopPing := make(chan struct{})
	defer close(stopPing)
	go func() {
		t := time.NewTicker(l.inv.ping)
		defer t.Stop()
		for {
			select {
			case <-stopPing:
				return
			case <-t.C:
				if c.Send("PING") != nil || c.Flush() != nil {
					return
				}
			}
		}
	}()
	// A receiver goroutine parses messages; this one applies them, folding
	// every message that queued up meanwhile into one invalidation, so a
	// burst of writes costs one wait on ristretto's buffer, not one each.
	msgs := make(chan invalidation, 256)
	recvErr := make(chan error, 1)
	go func() {
		defer close(msgs)
		for {
			v, err := redis.ReceiveWithTimeout(c, l.inv.ping*3)
			if err != nil {
				recvErr <- err
				return
			}
			if m, ok := parseInvalidation(v); ok {
				msgs <- m
			}
		}
	}()
	for m := range msgs {
		keys, flush := m.keys, m.flush
	drain:
		for {
			select {
			case more, ok := <-msgs:
				if !ok {
					break drain
				}
				keys, flush = append(keys, more.keys...), flush || more.flush
			default:
				break drain
			}
		}
		if flush {
			l.inv.s.flush()
		}
		if len(keys) > 0 {
			l.inv.s.invalidate(keys...)
		}
	}
	return <-recvErr
}

// invalidation is one message of __redis__:invalidate: keys, or a flush
// (FLUSHALL or FLUSHDB send a null message).
type invalidation struct {
	keys  []string
	flush bool
}

// parseInvalidation reads a pub/sub reply; pongs (["pong", ""]) and
// subscription notices are not invalidations.
func parseInvalidation(v any) (invalidation, bool) {
	msg, ok := v.([]any)
	if !ok || len(msg) < 3 {
		return invalidation{}, false
	}
	if kind, _ := redis.String(msg[0], nil); kind != "message" {
		return invalidation{}, false
	}
	switch keys := msg[2].(type) {
	case nil:
		return invalidation{flush: true}, true
	case []any:
		ks := make([]string, 0, len(keys))
		for _, k := range keys {
			if b, ok := k.([]byte); ok {
				ks = append(ks, string(b))
			}
		}
		return invalidation{keys: ks}, true
	}
	return invalidation{}, false
}

// dialRedigo opens a redigo connection with the shared settings.
func dialRedigo(ctx context.Context, cfg strategy.Config, addr string) (redis.Conn, error) {
	opts := []redis.DialOption{}
	if cfg.Password != "" {
		opts = append(opts, redis.DialPassword(cfg.Password))
		if cfg.Username != "" {
			opts = append(opts, redis.DialUsername(cfg.Username))
		}
	}
	if cfg.TLS != nil {
		opts = append(opts, redis.DialUseTLS(true), redis.DialTLSConfig(cfg.TLS))
	}
	if cfg.ClientName != "" {
		opts = append(opts, redis.DialClientName(cfg.ClientName+"-invalidation"))
	}
	c, err := redis.DialContext(ctx, "tcp", addr, opts...)
	if err != nil {
		return nil, fmt.Errorf("%w: invalidation connection to %s: %w", strategy.ErrConnection, addr, err)
	}
	return c, nil
}
