package localcache

import (
	"context"
	"errors"
	"fmt"
	"net"
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

	// ctx ends with close; every dial, handshake and discovery is bound to
	// it, so that close never waits for a server that stopped answering.
	ctx    context.Context
	cancel context.CancelFunc

	mu        sync.Mutex
	listeners map[string]*listener
	cluster   bool
	wake      chan struct{} // capacity 1: rediscover now

	wg sync.WaitGroup
}

const rediscoverPeriod = time.Second

func startInvalidator(ctx context.Context, cfg strategy.Config, s *store, prefixes []string, ping time.Duration) (*invalidator, error) {
	inv := &invalidator{cfg: cfg, prefixes: prefixes, ping: ping, s: s,
		listeners: map[string]*listener{}, wake: make(chan struct{}, 1)}
	inv.ctx, inv.cancel = context.WithCancel(context.Background())
	masters, isCluster, err := inv.discover(ctx)
	if err != nil {
		inv.cancel()
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
	if inv.ctx.Err() != nil {
		return // closed
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
			l := &listener{addr: addr, inv: inv}
			l.ctx, l.cancel = context.WithCancel(inv.ctx)
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
	if inv.ctx.Err() != nil {
		return // closed: the store serves nothing, and no flush is counted
	}
	up := len(inv.listeners) > 0
	for _, l := range inv.listeners {
		up = up && l.isUp()
	}
	if up {
		inv.s.up()
	} else {
		inv.s.down()
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
		select {
		case <-inv.ctx.Done():
			return
		case <-t.C:
		case <-inv.wake:
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
	inv.s.stopServing()
	inv.cancel()
	inv.mu.Unlock()
	inv.wg.Wait()
}

// listener is one invalidation connection: tracking in BCAST mode
// redirected to itself, subscribed to __redis__:invalidate.
type listener struct {
	addr string
	inv  *invalidator

	// ctx ends when the listener is closed (or the invalidator is), and
	// its end closes the listener's connection, from the dial on.
	ctx    context.Context
	cancel context.CancelFunc

	mu sync.Mutex
	up bool
}

func (l *listener) isUp() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.up
}

func (l *listener) close() { l.cancel() }

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
		l.mu.Unlock()
		// Invalidations may be missed from now on: flush and serve nothing
		// locally until this listener is back.
		l.inv.update()
		if l.ctx.Err() != nil {
			return
		}
		if err != nil {
			l.inv.rediscover() // a failover may have moved the master
		}
		select {
		case <-l.ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, time.Second)
	}
}

// session connects, subscribes and reads invalidations until the
// connection fails or the listener is closed.
func (l *listener) session() error {
	// The handshake — dial, CLIENT ID, CLIENT TRACKING, SUBSCRIBE — ends by
	// a deadline: a server that accepts but does not answer must not hold
	// the listener until TCP keepalive gives up. Its end, or the
	// listener's, closes the connection whatever step it is in.
	hctx, cancel := context.WithTimeout(l.ctx, max(l.inv.cfg.DialTimeout, time.Second))
	defer cancel()
	c, err := dialRedigo(hctx, l.inv.cfg, l.addr)
	if err != nil {
		return err
	}
	defer c.Close()
	handshaking := context.AfterFunc(hctx, func() { c.Close() })
	err = l.subscribe(c)
	if !handshaking() {
		return fmt.Errorf("%w: invalidation connection to %s: %w", strategy.ErrConnection, l.addr, hctx.Err())
	}
	if err != nil {
		return fmt.Errorf("%w: invalidation connection to %s: %w", strategy.ErrConnection, l.addr, err)
	}
	// From here the listener's end closes the connection; a silent server
	// is noticed by the receiver's timeout below.
	defer context.AfterFunc(l.ctx, func() { c.Close() })()
	l.mu.Lock()
	l.up = true
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
	// every message that queued up meanwhile into one invalidation.
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

// subscribe turns c into an invalidation connection: broadcast tracking
// redirected to itself, subscribed to __redis__:invalidate. It returns
// once the subscription is confirmed.
func (l *listener) subscribe(c redis.Conn) error {
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
	_, err = c.Receive()
	return err
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
	// redigo bounds AUTH and CLIENT SETNAME by ctx but the TLS handshake by
	// a timer of its own: the end of ctx closes the connection under the
	// whole dial instead.
	var d net.Dialer
	var dialing func() bool
	opts = append(opts, redis.DialContextFunc(func(ctx context.Context, network, addr string) (net.Conn, error) {
		nc, err := d.DialContext(ctx, network, addr)
		if err == nil {
			dialing = context.AfterFunc(ctx, func() { nc.Close() })
		}
		return nc, err
	}))
	c, err := redis.DialContext(ctx, "tcp", addr, opts...)
	if dialing != nil && !dialing() && err == nil {
		c.Close() // ctx ended just as the dial succeeded
		err = ctx.Err()
	}
	if err != nil {
		return nil, fmt.Errorf("%w: invalidation connection to %s: %w", strategy.ErrConnection, addr, err)
	}
	return c, nil
}
