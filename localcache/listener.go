package localcache

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/redisx-go/kit/internal/subscribe"
	"github.com/redisx-go/kit/strategy"
)

// listener is one node's invalidation connection, subscribed to
// __redis__:invalidate: with TrackBroadcast, tracking in BCAST mode
// redirected to itself; with TrackKeys, the connection the node's data
// connections redirect their tracking to (see tracking.go). It is the
// subscribe.Protocol that the engine keeps subscribed, dialling it again
// after a loss and replacing it for its age (Config.MaxConnAge) with a
// handover.
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
	// earlier targets still read after a handover, by ID; the data
	// connections of the node, by their client ID, and how many of them
	// are untracked; whether the last check of them succeeded.
	id        int64
	cur       redis.Conn
	draining  map[int64]*drained
	conns     map[int64]*dataConn
	untracked int
	checkOK   bool
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

// run keeps the listener's connection subscribed until it is closed.
// The handshake — dial, CLIENT ID, CLIENT TRACKING, SUBSCRIBE — ends by a
// deadline: a server that accepts but does not answer must not hold the
// listener until TCP keepalive gives up.
func (l *listener) run() {
	defer l.inv.wg.Done()
	cfg := roleConfig(l.inv.cfg, "invalidation")
	subscribe.Run(l.ctx, subscribe.Options{
		Dial:       subscribe.Node(&cfg, l.addr),
		Timeout:    max(l.inv.cfg.DialTimeout, time.Second),
		Ping:       l.inv.ping,
		MinBackoff: 20 * time.Millisecond,
		MaxBackoff: time.Second,
		MaxAge:     l.inv.cfg.MaxConnAge,
	}, l)
}

// Hello subscribes c, a new invalidation connection (see subscribe), and
// records its client ID.
func (l *listener) Hello(c *subscribe.Conn) error {
	id, err := l.subscribe(c)
	c.ID = id
	return err
}

// Failed records a refusal of the server — tried again all the same, at
// the backoff's pace: an operator may grant the permission — and takes
// the failure as a loss.
func (l *listener) Failed(err error) error {
	l.mu.Lock()
	l.refused = nil
	if errors.Is(err, strategy.ErrAuth) || errors.Is(err, strategy.ErrUnsupported) {
		l.refused = err
	}
	l.notifyLocked()
	l.mu.Unlock()
	l.lost()
	return nil
}

// Up makes c the listener's connection, subscribed (see connected).
func (l *listener) Up(c *subscribe.Conn, _ bool) error {
	l.mu.Lock()
	l.refused = nil
	l.notifyLocked()
	l.mu.Unlock()
	l.connected(c)
	return nil
}

// Down takes the loss of the listener's connection.
func (l *listener) Down(*subscribe.Conn) { l.lost() }

// lost records that the listener is not subscribed: invalidations may be
// missed from now on, so the cache is flushed and serves nothing locally
// until the listener is back; and a failover may have moved the master.
func (l *listener) lost() {
	l.mu.Lock()
	l.up = false
	l.cur = nil
	l.notifyLocked()
	l.mu.Unlock()
	l.inv.update()
	if l.ctx.Err() == nil {
		l.inv.rediscover()
	}
}

// Push applies one message of __redis__:invalidate; an error reply
// replaces the connection.
func (l *listener) Push(_ *subscribe.Conn, v any) bool {
	if _, ok := v.(redis.Error); ok {
		return false
	}
	if m, ok := parseInvalidation(v); ok {
		if m.flush {
			l.inv.flush()
		}
		if len(m.keys) > 0 {
			l.inv.invalidated(m.keys)
		}
	}
	return true
}

// HandOver takes next, the successor of old replaced for its age. The
// handover loses no invalidation, so the local cache is not flushed.
// With TrackBroadcast old is read up to the engine's marker: Redis sends
// a write's broadcast invalidations to the connections tracking at the
// end of that event-loop iteration, so every write before the
// successor's CLIENT TRACKING has its message on old ahead of the
// marker's pong (sent after the successor's SUBSCRIBE was confirmed),
// and every later write has its message on the successor too;
// duplicates are harmless. With TrackKeys, the data connections pointed
// to old go on sending their invalidations to old, which is kept and read
// on (see retire) while new data connections are pointed to the
// successor.
func (l *listener) HandOver(old, _ *subscribe.Conn) (keep bool) {
	if l.inv.mode != TrackKeys {
		return false
	}
	// The data connections pointed to old were dialled before its
	// successor was subscribed: they are all MaxConnAge old, and so
	// replaced, MaxConnAge from now.
	age := l.inv.cfg.MaxConnAge
	l.mu.Lock()
	if l.draining == nil {
		l.draining = map[int64]*drained{}
	}
	l.draining[old.ID] = &drained{c: old, until: time.Now().Add(age + min(age, time.Second))}
	l.mu.Unlock()
	return true
}

// Retired takes the end of a connection kept after a handover: the data
// connections still pointed to it are closed.
func (l *listener) Retired(old *subscribe.Conn) {
	l.drop(func(_ int64, d *dataConn) bool { return d.redir != old.ID })
	l.mu.Lock()
	delete(l.draining, old.ID)
	l.mu.Unlock()
}

// Missed: the old connection failed before its last messages were read,
// and its successor carries on; flush once for what may have been
// missed in between.
func (l *listener) Missed() { l.inv.flush() }

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
