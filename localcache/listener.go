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
	"github.com/redisx-go/kit/internal/topology"
	"github.com/redisx-go/kit/strategy"
)

// invalidator keeps one invalidation connection (a listener) per master
// and tells the store whether all of them are subscribed. On a cluster it
// rediscovers the masters every rediscoverPeriod and when a listener is
// lost, and reconciles the listeners with them; over Sentinel it does the
// same with the master the inner strategy follows, and at once when that
// changes.
type invalidator struct {
	cfg      strategy.Config
	follow   strategy.MasterFollower // over Sentinel: the master the inner strategy sends to
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

func startInvalidator(ctx context.Context, cfg strategy.Config, follow strategy.MasterFollower, s *store, prefixes []string, ping time.Duration) (*invalidator, error) {
	inv := &invalidator{cfg: cfg, follow: follow, prefixes: prefixes, ping: ping, s: s,
		listeners: map[string]*listener{}, wake: make(chan struct{}, 1)}
	inv.ctx, inv.cancel = context.WithCancel(context.Background())
	masters, isCluster, err := inv.discover(ctx)
	if err != nil {
		inv.cancel()
		return nil, err
	}
	inv.cluster = isCluster
	inv.reconcile(masters)
	// Serve nothing locally before every listener is subscribed. A
	// refusal (the user may not track or subscribe) is final: waiting for
	// the context's end would only hide it.
	for !inv.allUp() {
		if err := inv.refused(); err != nil {
			inv.close()
			return nil, err
		}
		select {
		case <-ctx.Done():
			down := inv.notUp()
			inv.close()
			why := "cancelled by the context"
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				why = "no answer before the context's deadline"
			}
			return nil, fmt.Errorf("%w: invalidation connection to %s not subscribed: %s (%w)", strategy.ErrConnection, strings.Join(down, ", "), why, ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
	if isCluster || follow != nil {
		inv.wg.Add(1)
		go inv.rediscoverLoop()
	}
	return inv, nil
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
		c, err := dialRedigo(ctx, inv.cfg, addr)
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
		if !l.isUp() {
			return false
		}
	}
	return len(inv.listeners) > 0
}

// notUp returns the addresses of the listeners not subscribed, sorted.
func (inv *invalidator) notUp() []string {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	var down []string
	for addr, l := range inv.listeners {
		if !l.isUp() {
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

	mu      sync.Mutex
	up      bool
	refused error // the last connect's failure, when the server refused it (ErrAuth)
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
	var next redis.Conn // the subscribed successor a session handed over
	for {
		c, err := next, error(nil)
		if c == nil {
			c, err = l.connect()
			l.mu.Lock()
			l.refused = nil
			if errors.Is(err, strategy.ErrAuth) {
				// Tried again all the same, at the backoff's pace: an
				// operator may grant the permission; meanwhile nothing is
				// served locally.
				l.refused = err
			}
			l.mu.Unlock()
		}
		if err == nil {
			if next, err = l.session(c); next != nil {
				continue // no invalidation was missed: still up
			}
		}
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

// connect dials an invalidation connection and subscribes it.
func (l *listener) connect() (redis.Conn, error) {
	// The handshake — dial, CLIENT ID, CLIENT TRACKING, SUBSCRIBE — ends by
	// a deadline: a server that accepts but does not answer must not hold
	// the listener until TCP keepalive gives up. Its end, or the
	// listener's, closes the connection whatever step it is in.
	hctx, cancel := context.WithTimeout(l.ctx, max(l.inv.cfg.DialTimeout, time.Second))
	defer cancel()
	c, err := dialRedigo(hctx, l.inv.cfg, l.addr)
	if err != nil {
		return nil, err
	}
	handshaking := context.AfterFunc(hctx, func() { c.Close() })
	err = l.subscribe(c)
	if !handshaking() {
		c.Close()
		return nil, fmt.Errorf("%w: invalidation connection to %s: %w", strategy.ErrConnection, l.addr, hctx.Err())
	}
	if err != nil {
		c.Close()
		kind := strategy.ErrConnection
		var re redis.Error
		if errors.As(err, &re) && strings.HasPrefix(string(re), "NOPERM") {
			kind = strategy.ErrAuth // the user may not track, or subscribe to the channel
		}
		return nil, fmt.Errorf("%w: invalidation connection to %s: %w", kind, l.addr, err)
	}
	return c, nil
}

// handoverMarker is the argument of the PING that ends an invalidation
// connection's part once its successor is subscribed.
const handoverMarker = "redisx-handover"

// errHandedOver ends the receiver of a connection whose successor took
// over.
var errHandedOver = errors.New("handed over to a new invalidation connection")

// connected is the outcome of a successor's connect.
type connected struct {
	c   redis.Conn
	err error
}

// session reads invalidations from c, a subscribed connection, until it
// fails or the listener is closed — then it returns nil and the error —
// or until c is Config.MaxConnAge old and a successor has taken over,
// which it returns.
//
// The handover loses no invalidation, so the local cache is not flushed:
// the successor subscribes while c still serves; then a PING with a
// marker goes on c, and c is read until the marker's pong. Redis sends a
// write's broadcast invalidations to the connections tracking at the end
// of that event-loop iteration, so every write before the successor's
// CLIENT TRACKING has its message on c ahead of the pong (sent after the
// successor's SUBSCRIBE was confirmed), and every later write has its
// message on the successor too; duplicates are harmless. Should c fail
// before the pong, messages may be lost with it: the cache is flushed
// once and the successor carries on.
func (l *listener) session(c redis.Conn) (next redis.Conn, err error) {
	// From here the listener's end closes the connection; a silent server
	// is noticed by the receiver's timeout below.
	defer context.AfterFunc(l.ctx, func() { c.Close() })()
	l.mu.Lock()
	l.up = true
	l.mu.Unlock()
	l.inv.update()

	// The pinger proves the connection alive even when nothing is written:
	// a silent loss shows up as a missed pong. redigo allows one sender
	// and one receiver concurrently; the handover stops the pinger before
	// it sends its own PING.
	stopPing, pingDone := make(chan struct{}), make(chan struct{})
	go func(stopPing <-chan struct{}) {
		defer close(pingDone)
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
	}(stopPing)
	pinging := true
	stopPinger := func() {
		if pinging {
			pinging = false
			close(stopPing)
			<-pingDone
		}
	}
	defer func() {
		c.Close() // first: a pinger stuck in a write returns
		stopPinger()
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
			if isHandoverPong(v) {
				recvErr <- errHandedOver
				return
			}
			if m, ok := parseInvalidation(v); ok {
				msgs <- m
			}
		}
	}()

	// The successor: aged fires when c is old enough, successor delivers
	// the outcome of its connect, and next holds it once subscribed, while
	// c is read up to the marker's pong.
	var aged <-chan time.Time
	if age := l.inv.cfg.MaxConnAge; age > 0 {
		t := time.NewTimer(age)
		defer t.Stop()
		aged = t.C
	}
	var successor chan connected
	defer func() {
		if successor != nil { // c failed while the successor was connecting
			r := <-successor
			if err == nil || r.err != nil || l.ctx.Err() != nil {
				if r.c != nil {
					r.c.Close()
				}
				return
			}
			// c was lost, but the successor subscribed meanwhile: flush
			// once for what may have been missed in between, and go on
			// with it.
			l.inv.s.flush()
			next, err = r.c, nil
		}
	}()
	for {
		select {
		case m, ok := <-msgs:
			if !ok {
				err := <-recvErr
				switch {
				case next != nil && err == errHandedOver:
					return next, nil
				case next != nil && l.ctx.Err() == nil:
					l.inv.s.flush() // c failed before its last messages were read
					return next, nil
				case next != nil:
					next.Close()
				}
				return nil, err
			}
			l.apply(m, msgs)
		case <-aged:
			aged = nil
			successor = make(chan connected, 1)
			go func() {
				c, err := l.connect()
				successor <- connected{c, err}
			}()
		case r := <-successor:
			successor = nil
			if r.err != nil {
				// c serves on; try again shortly.
				aged = time.After(min(l.inv.cfg.MaxConnAge, time.Second))
				continue
			}
			next = r.c
			stopPinger()
			if c.Send("PING", handoverMarker) != nil || c.Flush() != nil {
				c.Close() // the receiver fails, and the successor carries on after a flush
			}
		}
	}
}

// apply applies m and every message already queued behind it.
func (l *listener) apply(m invalidation, msgs <-chan invalidation) {
	keys, flush := m.keys, m.flush
drain:
	for {
		select {
		case more, ok := <-msgs:
			if !ok {
				break drain // session sees the close next
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

// isHandoverPong reports whether v is the reply, in subscribed mode, to
// PING handoverMarker: ["pong", handoverMarker].
func isHandoverPong(v any) bool {
	msg, ok := v.([]any)
	if !ok || len(msg) != 2 {
		return false
	}
	kind, _ := redis.String(msg[0], nil)
	arg, _ := redis.String(msg[1], nil)
	return kind == "pong" && arg == handoverMarker
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

// dialRedigo opens a redigo connection with the shared settings, through
// strategy.Dial: the same credentials (Config.Credentials included), TLS
// and handshake as the strategy's own connections, and the same errors
// (ErrAuth for refused credentials). ctx bounds the whole dial.
func dialRedigo(ctx context.Context, cfg strategy.Config, addr string) (redis.Conn, error) {
	if cfg.ClientName != "" {
		cfg.ClientName += "-invalidation"
	}
	cfg.DB = 0 // tracking and invalidation messages know no database
	nc, err := strategy.Dial(ctx, cfg, addr)
	if err != nil {
		return nil, err
	}
	return redis.NewConn(nc, 0, 0), nil
}
