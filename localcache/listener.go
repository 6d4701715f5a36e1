package localcache

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/redisx-go/kit/strategy"
)

// listener is one node's invalidation connection, subscribed to
// __redis__:invalidate: with TrackBroadcast, tracking in BCAST mode
// redirected to itself; with TrackKeys, the connection the node's data
// connections redirect their tracking to (see tracking.go).
type listener struct {
	addr string
	inv  *invalidator

	// ctx ends when the listener is closed (or the invalidator is), and
	// its end closes the listener's connection, from the dial on.
	ctx    context.Context
	cancel context.CancelFunc

	mu      sync.Mutex
	up      bool
	refused error         // the last connect's failure, when the server refused it (ErrAuth, ErrUnsupported)
	changed chan struct{} // closed, and replaced, whenever up or refused changes

	// TrackKeys (tracking.go): the subscribed connection and its client
	// ID, the data connections' redirect target; the connections of
	// earlier targets still read after a handover (see drain), by ID; the
	// data connections of the node, by their client ID, and how many of
	// them are untracked; whether the last check of them succeeded.
	id        int64
	cur       redis.Conn
	draining  map[int64]redis.Conn
	conns     map[int64]*dataConn
	untracked int
	checkOK   bool
}

// subscribed is a subscribed invalidation connection and its client ID.
type subscribed struct {
	c  redis.Conn
	id int64
}

func (l *listener) isUp() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.up
}

// healthy reports whether what the listener covers may be served: it is
// subscribed and, with TrackKeys, every data connection of its node is
// tracked and was found alive by the last check.
func (l *listener) healthy() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.up && l.untracked == 0 && l.checkOK
}

// notifyLocked wakes whoever waits for a change of up or refused; l.mu
// is held.
func (l *listener) notifyLocked() {
	close(l.changed)
	l.changed = make(chan struct{})
}

func (l *listener) close() { l.cancel() }

func (l *listener) run() {
	defer l.inv.wg.Done()
	const firstBackoff = 20 * time.Millisecond
	backoff := firstBackoff
	var next subscribed // the subscribed successor a session handed over
	for {
		s, err := next, error(nil)
		if s.c == nil {
			s, err = l.connect()
			l.mu.Lock()
			l.refused = nil
			if errors.Is(err, strategy.ErrAuth) || errors.Is(err, strategy.ErrUnsupported) {
				// Tried again all the same, at the backoff's pace: an
				// operator may grant the permission; meanwhile nothing is
				// served locally.
				l.refused = err
			}
			l.notifyLocked()
			l.mu.Unlock()
		}
		if err == nil {
			if next, err = l.session(s); next.c != nil {
				continue // no invalidation was missed: still up
			}
		}
		l.mu.Lock()
		if l.up {
			backoff = firstBackoff // it was subscribed: this is a new loss
		}
		l.up = false
		l.cur = nil
		l.notifyLocked()
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
func (l *listener) connect() (subscribed, error) {
	// The handshake — dial, CLIENT ID, CLIENT TRACKING, SUBSCRIBE — ends by
	// a deadline: a server that accepts but does not answer must not hold
	// the listener until TCP keepalive gives up. Its end, or the
	// listener's, closes the connection whatever step it is in.
	hctx, cancel := context.WithTimeout(l.ctx, max(l.inv.cfg.DialTimeout, time.Second))
	defer cancel()
	c, err := dialRedigo(hctx, l.inv.cfg, l.addr, "invalidation")
	if err != nil {
		return subscribed{}, err
	}
	handshaking := closeAtEnd(hctx, c)
	id, err := l.subscribe(c)
	if !handshaking() {
		c.Close()
		return subscribed{}, fmt.Errorf("%w: invalidation connection to %s: %w", strategy.ErrConnection, l.addr, hctx.Err())
	}
	if err != nil {
		c.Close()
		if errors.Is(err, strategy.ErrAuth) || errors.Is(err, strategy.ErrUnsupported) {
			return subscribed{}, err // a refusal, which says what to do
		}
		return subscribed{}, fmt.Errorf("%w: invalidation connection to %s: %w", strategy.ErrConnection, l.addr, err)
	}
	return subscribed{c, id}, nil
}

// closeAtEnd closes c when ctx ends, on a goroutine of its own. The
// function it returns undoes that and reports true, or, if that close
// has begun, waits for it and reports false: no goroutine is left
// behind.
func closeAtEnd(ctx context.Context, c io.Closer) (stop func() bool) {
	done := make(chan struct{})
	stopFn := context.AfterFunc(ctx, func() {
		defer close(done)
		c.Close()
	})
	return func() bool {
		if stopFn() {
			return true
		}
		<-done
		return false
	}
}

// handoverMarker is the argument of the PING that ends an invalidation
// connection's part once its successor is subscribed.
const handoverMarker = "redisx-handover"

// errHandedOver ends the receiver of a connection whose successor took
// over.
var errHandedOver = errors.New("handed over to a new invalidation connection")

// connected is the outcome of a successor's connect.
type connected struct {
	s   subscribed
	err error
}

// session reads invalidations from s, a subscribed connection, until it
// fails or the listener is closed — then it returns nil and the error —
// or until it is Config.MaxConnAge old and a successor has taken over,
// which it returns.
//
// The handover loses no invalidation, so the local cache is not flushed.
// With TrackBroadcast, the successor subscribes while s still serves;
// then a PING with a marker goes on s, and s is read until the marker's
// pong. Redis sends a write's broadcast invalidations to the connections
// tracking at the end of that event-loop iteration, so every write before
// the successor's CLIENT TRACKING has its message on s ahead of the pong
// (sent after the successor's SUBSCRIBE was confirmed), and every later
// write has its message on the successor too; duplicates are harmless.
// Should s fail before the pong, messages may be lost with it: the cache
// is flushed once and the successor carries on. With TrackKeys, the data
// connections pointed to s go on sending their invalidations to s, which
// is read on (see drain) while new data connections are pointed to the
// successor.
func (l *listener) session(s subscribed) (next subscribed, err error) {
	c := s.c
	// From here the listener's end closes the connection; a silent server
	// is noticed by the receiver's timeout below.
	stopCloser := closeAtEnd(l.ctx, c)
	defer stopCloser()
	l.connected(s)

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
	// A receiver goroutine parses messages; this one applies them, folding
	// every message that queued up meanwhile into one invalidation.
	msgs := make(chan invalidation, 256)
	drained := false // c was handed to drain, which closes it
	defer func() {
		if !drained {
			c.Close() // first: a pinger stuck in a write returns
			stopPinger()
			for range msgs { // the receiver ends with c: wait for it
			}
		}
	}()
	go func() {
		defer close(msgs)
		for {
			v, err := redis.ReceiveWithTimeout(c, l.inv.ping*3)
			if err != nil {
				msgs <- invalidation{err: err}
				return
			}
			if isHandoverPong(v) {
				msgs <- invalidation{err: errHandedOver}
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
				if r.s.c != nil {
					r.s.c.Close()
				}
				return
			}
			// c was lost, but the successor subscribed meanwhile: flush
			// once for what may have been missed in between, and go on
			// with it.
			l.inv.flush()
			next, err = r.s, nil
		}
	}()
	for {
		select {
		case m := <-msgs:
			if m.err == nil {
				m = l.apply(m, msgs)
			}
			if m.err != nil {
				switch {
				case next.c != nil && m.err == errHandedOver:
					return next, nil
				case next.c != nil && l.ctx.Err() == nil:
					l.inv.flush() // c failed before its last messages were read
					return next, nil
				case next.c != nil:
					next.c.Close()
				}
				return subscribed{}, m.err
			}
		case <-aged:
			aged = nil
			successor = make(chan connected, 1)
			go func() {
				s, err := l.connect()
				successor <- connected{s, err}
			}()
		case r := <-successor:
			successor = nil
			if r.err != nil {
				// c serves on; try again shortly.
				aged = time.After(min(l.inv.cfg.MaxConnAge, time.Second))
				continue
			}
			if l.inv.mode == TrackKeys {
				// Data connections still point to c: it is read on, by
				// drain, as long as they live.
				drained = true
				l.startDrain(s, msgs, stopPinger)
				return r.s, nil
			}
			next = r.s
			stopPinger()
			if c.Send("PING", handoverMarker) != nil || c.Flush() != nil {
				c.Close() // the receiver fails, and the successor carries on after a flush
			}
		}
	}
}

// apply applies m and every message already queued behind it. A message
// carrying the receiver's error is left for the caller: put back it
// cannot be, so apply stops before it only when it is the first.
func (l *listener) apply(m invalidation, msgs <-chan invalidation) (last invalidation) {
	keys, flush := m.keys, m.flush
drain:
	for {
		select {
		case more, ok := <-msgs:
			if !ok {
				break drain
			}
			if more.err != nil {
				last = more
				break drain
			}
			keys, flush = append(keys, more.keys...), flush || more.flush
		default:
			break drain
		}
	}
	if flush {
		l.inv.flush()
	}
	if len(keys) > 0 {
		l.inv.invalidated(keys)
	}
	return last
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

// subscribe turns c into an invalidation connection — with
// TrackBroadcast, broadcast tracking redirected to itself — subscribed to
// __redis__:invalidate, and returns its client ID once the subscription
// is confirmed. A refusal of the server is returned as one (see
// refusal), saying which Tracking to set instead.
func (l *listener) subscribe(c redis.Conn) (int64, error) {
	id, err := redis.Int64(c.Do("CLIENT", "ID"))
	if err != nil {
		return 0, err
	}
	if l.inv.mode == TrackBroadcast {
		args := redis.Args{"TRACKING", "on", "REDIRECT", id, "BCAST"}
		for _, p := range l.inv.prefixes {
			args = args.Add("PREFIX", p)
		}
		if _, err := c.Do("CLIENT", args...); err != nil {
			var re redis.Error
			if !errors.As(err, &re) {
				return 0, err
			}
			// Would per-key tracking do? It is the default: say so.
			_, perKey := c.Do("CLIENT", "TRACKING", "on", "REDIRECT", id)
			return 0, refusal(l.addr, TrackBroadcast, err, perKey == nil)
		}
	}
	if err := c.Send("SUBSCRIBE", "__redis__:invalidate"); err != nil {
		return 0, err
	}
	if err := c.Flush(); err != nil {
		return 0, err
	}
	if _, err = c.Receive(); err != nil {
		var re redis.Error
		if errors.As(err, &re) && strings.HasPrefix(string(re), "NOPERM") {
			return 0, fmt.Errorf("%w: invalidation connection to %s: %w; grant the user the channel &__redis__:invalidate, or set Near.Tracking to localcache.TrackNone (no invalidation: entries live at most Near.TTL)", strategy.ErrAuth, l.addr, err)
		}
		return 0, err
	}
	return id, nil
}

// invalidation is one message of __redis__:invalidate: keys, or a flush
// (FLUSHALL or FLUSHDB send a null message); or, last, the error that
// ended the receiver.
type invalidation struct {
	keys  []string
	flush bool
	err   error
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
