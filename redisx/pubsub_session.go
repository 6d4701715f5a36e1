package redisx

import (
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/redisx-go/kit/internal/subscribe"
	"github.com/redisx-go/kit/strategy"
)

// One connection of a Subscription: a session says what its connection
// subscribes to and takes its messages; the subscribe engine dials it,
// pings it, and when it is lost dials again and has the session
// subscribe it again, until the subscription ends.

// subKind is what a name is subscribed as.
type subKind uint8

const (
	kindChannel subKind = iota // SUBSCRIBE
	kindPattern                // PSUBSCRIBE
	kindShard                  // SSUBSCRIBE
	numKinds
)

func (k subKind) subscribe() string {
	return [...]string{"SUBSCRIBE", "PSUBSCRIBE", "SSUBSCRIBE"}[k]
}

func (k subKind) unsubscribe() string {
	return [...]string{"UNSUBSCRIBE", "PUNSUBSCRIBE", "SUNSUBSCRIBE"}[k]
}

// Timings of a session's connection (see subscribe.Options): pinged every
// pingEvery, replaced after three periods without a byte, dialled and
// subscribed within sessionTimeout, with writes bounded by writeTimeout,
// dialled again at once after a loss and after a backoff between
// minBackoff and maxBackoff after a failure.
const (
	pingEvery      = time.Second
	sessionTimeout = 5 * time.Second
	writeTimeout   = 5 * time.Second
	minBackoff     = 20 * time.Millisecond
	maxBackoff     = 500 * time.Millisecond
)

// session is one connection of a Subscription and what it wants: the
// subscribe.Protocol that the engine keeps subscribed. Its state is
// described in pubsub_state.go. Locks, in this order: Subscription.mu
// (sessions made and ended), sendMu, mu.
type session struct {
	sub  *Subscription
	slot int // DialSession's: -1 for any node

	ctx    context.Context // ends when the session is dropped or the subscription ends
	cancel context.CancelFunc

	// sendMu is held across a change that must be told to the server and
	// the write that tells it, and by the pinger: one writer at a time
	// (redigo), and commands in the order of the changes.
	sendMu sync.Mutex

	mu      sync.Mutex // the reader takes only this one
	want    [numKinds]map[string]*entry
	rc      redis.Conn // the connection while subscribed; nil otherwise
	pending []*subCmd  // written on rc, replies awaited, in order

	// The last Hello's, for Up (the engine's goroutine only): what it
	// subscribed, and the names the server refused.
	snap    []waitKey
	refused map[waitKey]redis.Error
}

// newSession makes the session of key; start runs it.
func (s *Subscription) newSession(key int) *session {
	ss := &session{sub: s, slot: key}
	if key == classicKey || !s.shards {
		ss.slot = -1
	}
	for k := range ss.want {
		ss.want[k] = map[string]*entry{}
	}
	ss.ctx, ss.cancel = context.WithCancel(s.life)
	return ss
}

func (ss *session) start() {
	ss.sub.wg.Add(1)
	go ss.run()
}

// run keeps the session's connection subscribed until the session ends,
// or ends the subscription with the refusal that the engine met.
func (ss *session) run() {
	defer ss.sub.wg.Done()
	err := subscribe.Run(ss.ctx, subscribe.Options{
		Dial: func(ctx context.Context, hello func(net.Conn) error) (net.Conn, error) {
			return ss.sub.dialer.DialSession(ctx, ss.slot, hello)
		},
		Timeout:      sessionTimeout,
		WriteTimeout: writeTimeout,
		Ping:         pingEvery,
		PingLock:     &ss.sendMu,
		MinBackoff:   minBackoff,
		MaxBackoff:   maxBackoff,
		RedialAtOnce: true,
	}, ss)
	if err != nil {
		ss.sub.end(err)
	}
}

// Failed takes a failure to connect: the calls running learn a permanent
// one, and a subscription that relies on something here cannot be
// restored, and ends.
func (ss *session) Failed(err error) error {
	if !permanent(err) {
		return nil
	}
	ss.mu.Lock()
	relied := ss.refuseAllLocked(err)
	ss.mu.Unlock()
	if relied {
		return err
	}
	return nil
}

// permanent reports a failure to connect that dialling again does not
// cure: the server refused the credentials or the configuration.
func permanent(err error) bool {
	return errors.Is(err, ErrAuth) || errors.Is(err, ErrInvalidArgument)
}

// Hello subscribes a new connection to everything wanted, and keeps the
// messages read meanwhile for Push. It runs again after a redirect.
func (ss *session) Hello(c *subscribe.Conn) error {
	snap, refused := ss.snapshot(), map[waitKey]redis.Error{}
	ss.snap, ss.refused = snap, refused
	// One command per name: the server refuses a command as a whole (its
	// NOPERM names no channel), and a refusal must be pinned on its name.
	for _, w := range snap {
		c.Send(w.kind.subscribe(), w.name)
	}
	if len(snap) == 0 {
		c.Send("PING")
	}
	if err := c.Flush(); err != nil {
		return err
	}
	for i := 0; i < max(len(snap), 1); {
		v, err := c.Receive()
		var re redis.Error
		switch {
		case errors.As(err, &re) && len(snap) > 0 && !isRedirect(re) && !strategy.Temporary(re):
			refused[snap[i]] = re
			i++
		case err != nil:
			// MOVED and ASK are followed by DialSession; "not now" is
			// tried again after a backoff.
			return err
		case isConfirmation(v):
			i++
		default:
			c.Early = append(c.Early, v)
		}
	}
	return nil
}

// Up makes c the session's connection: what changed during the handshake
// is sent now, and the calls waiting for what it subscribed are
// answered; then, on a connection after the first, the Reconnected
// marker is delivered. A name the server refused fails the calls naming
// it, and ends the subscription if it relies on the name: Up then
// returns the refusal.
func (ss *session) Up(c *subscribe.Conn, again bool) error {
	ss.sendMu.Lock()
	ss.mu.Lock()
	if ss.ctx.Err() != nil {
		ss.mu.Unlock()
		ss.sendMu.Unlock()
		return ErrClosed
	}
	var cmds []*subCmd
	var drop [numKinds][]string
	var end error
	had := map[waitKey]bool{}
	for _, w := range ss.snap {
		had[w] = true
		e := ss.want[w.kind][w.name]
		re, no := ss.refused[w]
		switch {
		case e == nil && !no:
			drop[w.kind] = append(drop[w.kind], w.name)
		case e == nil:
		case no:
			err := refusal(w.kind, []string{w.name}, " again on a new connection", re)
			if e.refuseLocked(err) && end == nil {
				end = err
			}
		default:
			for _, cl := range slices.Clone(e.waiting) {
				cl.answerLocked(e)
			}
		}
	}
	for k := range ss.want {
		for n, e := range ss.want[k] {
			if !had[waitKey{subKind(k), n}] {
				cmds = append(cmds, &subCmd{kind: subKind(k), sub: true, names: []string{n}, calls: [][]*call{slices.Clone(e.waiting)}})
			}
		}
		if len(drop[k]) > 0 {
			cmds = append(cmds, &subCmd{kind: subKind(k), names: drop[k]})
		}
	}
	if end == nil {
		ss.rc, ss.pending = c, nil
		ss.queueLocked(cmds...)
	}
	ss.mu.Unlock()
	if end == nil {
		ss.write(c, cmds...)
	}
	ss.sendMu.Unlock()
	if end != nil {
		return end // the engine closes c; run ends the subscription
	}
	if again {
		ss.sub.deliver(Message{Kind: Reconnected})
	}
	return nil
}

// Down forgets c, lost: a change made from now on is sent on the next
// connection.
func (ss *session) Down(c *subscribe.Conn) {
	ss.mu.Lock()
	if ss.rc == redis.Conn(c) {
		ss.rc, ss.pending = nil, nil
	}
	ss.mu.Unlock()
}

// Push applies one reply read in subscribed mode; false: the connection
// must be replaced.
func (ss *session) Push(_ *subscribe.Conn, v any) bool {
	if re, ok := v.(redis.Error); ok {
		// The reply to a command sent while subscribed: MOVED for an
		// SSUBSCRIBE of a slot that moved, NOPERM…
		if isRedirect(re) {
			return false // dial the slot's master again
		}
		ss.mu.Lock()
		ss.refusedLocked(re)
		ss.mu.Unlock()
		return true
	}
	return ss.handle(v)
}

// waitKey is a name of a kind.
type waitKey struct {
	kind subKind
	name string
}

// snapshot lists what the session wants.
func (ss *session) snapshot() []waitKey {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	var out []waitKey
	for k, m := range ss.want {
		for n := range m {
			out = append(out, waitKey{subKind(k), n})
		}
	}
	return out
}

// handle applies one reply read in subscribed mode; false: the connection
// must be replaced.
func (ss *session) handle(v any) bool {
	msg, ok := v.([]any)
	if !ok || len(msg) < 2 {
		return true // a pong outside subscribed mode
	}
	kind, _ := redis.String(msg[0], nil)
	name, _ := redis.String(msg[1], nil)
	switch kind {
	case "message", "smessage":
		if len(msg) == 3 {
			k := kindChannel
			if kind == "smessage" {
				k = kindShard
			}
			if ss.wants(k, name) {
				payload, _ := msg[2].([]byte)
				ss.sub.deliver(Message{Kind: Data, Channel: name, Payload: payload})
			}
		}
	case "pmessage":
		if len(msg) == 4 && ss.wants(kindPattern, name) {
			ch, _ := redis.String(msg[2], nil)
			payload, _ := msg[3].([]byte)
			ss.sub.deliver(Message{Kind: Data, Channel: ch, Pattern: name, Payload: payload})
		}
	case "subscribe", "psubscribe", "ssubscribe":
		ss.mu.Lock()
		ss.replyLocked(replyKind(kind), true, name)
		ss.mu.Unlock()
	case "unsubscribe", "punsubscribe", "sunsubscribe":
		ss.mu.Lock()
		defer ss.mu.Unlock()
		k := replyKind(kind)
		if !ss.replyLocked(k, false, name) && k == kindShard && ss.want[k][name] != nil {
			// Not a reply: the server no longer serves the channel's
			// slot (resharding, failover). Follow it to its new master.
			return false
		}
	}
	return true
}

// replyKind is the kind of a (un)subscribe reply.
func replyKind(kind string) subKind {
	switch kind {
	case "psubscribe", "punsubscribe":
		return kindPattern
	case "ssubscribe", "sunsubscribe":
		return kindShard
	}
	return kindChannel
}

// isConfirmation reports a subscription's confirmation, or the pong of a
// handshake with nothing to subscribe to.
func isConfirmation(v any) bool {
	if s, ok := v.(string); ok {
		return s == "PONG"
	}
	msg, ok := v.([]any)
	if !ok || len(msg) == 0 {
		return false
	}
	kind, _ := redis.String(msg[0], nil)
	return kind == "subscribe" || kind == "psubscribe" || kind == "ssubscribe"
}

func isRedirect(re redis.Error) bool {
	return strings.HasPrefix(string(re), "MOVED ") || strings.HasPrefix(string(re), "ASK ")
}

func (ss *session) wants(kind subKind, name string) bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.want[kind][name] != nil
}

func strArgs(names []string) []any {
	args := make([]any, len(names))
	for i, n := range names {
		args[i] = n
	}
	return args
}
