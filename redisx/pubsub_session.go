package redisx

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/redisx-go/kit/strategy"
)

// One connection of a Subscription: a session subscribes its connection
// to what it wants, reads its messages, and when the connection is lost
// dials again and subscribes again, until the subscription ends.

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

// Timings of a session's connection: pinged every pingEvery, replaced
// after silence without a byte, dialled and subscribed within
// sessionTimeout, with writes bounded by writeTimeout, and dialled again
// after a backoff between minBackoff and maxBackoff.
const (
	pingEvery      = time.Second
	silence        = 3 * time.Second
	sessionTimeout = 5 * time.Second
	writeTimeout   = 5 * time.Second
	minBackoff     = 20 * time.Millisecond
	maxBackoff     = 500 * time.Millisecond
)

// waitKey names a confirmation awaited.
type waitKey struct {
	kind subKind
	name string
}

type session struct {
	sub  *Subscription
	slot int // DialSession's: -1 for any node

	ctx    context.Context // ends when the session is dropped or the subscription closed
	cancel context.CancelFunc

	mu      sync.Mutex
	want    [numKinds]map[string]bool
	waiters map[waitKey][]chan error
	pending map[string]int // SUNSUBSCRIBE sent, confirmation not yet read
	rc      redis.Conn     // the connection while subscribed; nil otherwise

	sendMu sync.Mutex // redigo: one sender at a time
}

// newSession makes the session of key; start runs it.
func (s *Subscription) newSession(key int) *session {
	ss := &session{sub: s, slot: key, waiters: map[waitKey][]chan error{}, pending: map[string]int{}}
	if key == classicKey || !s.shards {
		ss.slot = -1
	}
	for k := range ss.want {
		ss.want[k] = map[string]bool{}
	}
	ss.ctx, ss.cancel = context.WithCancel(s.life)
	return ss
}

func (ss *session) start() {
	ss.sub.wg.Add(1)
	go ss.run()
}

// add wants names and returns the confirmations to wait for: sent now on
// the connection, or by the next connection's subscription.
func (ss *session) add(kind subKind, names []string) []<-chan error {
	waits := make([]<-chan error, len(names))
	ss.mu.Lock()
	for i, n := range names {
		ss.want[kind][n] = true
		w := make(chan error, 1)
		ss.waiters[waitKey{kind, n}] = append(ss.waiters[waitKey{kind, n}], w)
		waits[i] = w
	}
	rc := ss.rc
	ss.mu.Unlock()
	if rc != nil {
		ss.send(rc, kind.subscribe(), names)
	}
	return waits
}

// remove stops wanting names (every name of kind when nil) and reports
// whether the session wants nothing any more.
func (ss *session) remove(kind subKind, names []string) (empty bool) {
	ss.mu.Lock()
	if names == nil {
		for n := range ss.want[kind] {
			names = append(names, n)
		}
	}
	var gone []string
	for _, n := range names {
		if ss.want[kind][n] {
			delete(ss.want[kind], n)
			gone = append(gone, n)
			if kind == kindShard {
				ss.pending[n]++
			}
		}
	}
	rc := ss.rc
	empty = true
	for k := range ss.want {
		empty = empty && len(ss.want[k]) == 0
	}
	ss.mu.Unlock()
	if rc != nil && len(gone) > 0 && !empty {
		ss.send(rc, kind.unsubscribe(), gone)
	}
	return empty
}

// send writes one command naming names.
func (ss *session) send(rc redis.Conn, cmd string, names []string) {
	args := make([]any, len(names))
	for i, n := range names {
		args[i] = n
	}
	ss.sendMu.Lock()
	defer ss.sendMu.Unlock()
	if rc.Send(cmd, args...) == nil {
		rc.Flush() // a failure shows on the reading side, which reconnects
	}
}

// run keeps the session's connection subscribed until the session ends.
func (ss *session) run() {
	defer ss.sub.wg.Done()
	backoff := minBackoff
	connected := false
	for ss.ctx.Err() == nil {
		rc, early, err := ss.connect()
		if err != nil {
			if !strategy.Temporary(err) {
				ss.failWaiters(err) // the callers waiting should know; the session tries on
			}
			select {
			case <-ss.ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, maxBackoff)
			continue
		}
		backoff = minBackoff
		if connected {
			ss.sub.deliver(Message{Kind: Reconnected})
		}
		connected = true
		ss.serve(rc, early)
	}
}

// connect dials the session's node, subscribes the connection to
// everything wanted, and returns it with the messages read meanwhile.
func (ss *session) connect() (redis.Conn, []any, error) {
	ctx, cancel := context.WithTimeout(ss.ctx, sessionTimeout)
	defer cancel()
	var rc redis.Conn
	var early []any
	var snap [numKinds][]string
	_, err := ss.sub.dialer.DialSession(ctx, ss.slot, func(nc net.Conn) error {
		c := redis.NewConn(nc, 0, writeTimeout)
		snap, early = ss.snapshot(), early[:0] // hello runs again after a redirect
		expect := 0
		for k, names := range snap {
			if len(names) > 0 {
				c.Send(subKind(k).subscribe(), strArgs(names)...)
				expect += len(names)
			}
		}
		if expect == 0 {
			c.Send("PING")
			expect = 1
		}
		if err := c.Flush(); err != nil {
			return err
		}
		for expect > 0 {
			v, err := c.Receive()
			if err != nil {
				return err // MOVED and ASK are followed by DialSession
			}
			if isConfirmation(v) {
				expect--
			} else {
				early = append(early, v)
			}
		}
		rc = c
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	// What changed during the handshake is sent now; the waiters of what
	// the handshake subscribed are answered.
	var add, drop [numKinds][]string
	ss.mu.Lock()
	if ss.ctx.Err() != nil {
		ss.mu.Unlock()
		rc.Close()
		return nil, nil, ErrClosed
	}
	ss.rc = rc
	for k := range snap {
		had := map[string]bool{}
		for _, n := range snap[k] {
			had[n] = true
			if ss.want[k][n] {
				ss.confirmLocked(subKind(k), n)
			} else {
				drop[k] = append(drop[k], n)
			}
		}
		for n := range ss.want[k] {
			if !had[n] {
				add[k] = append(add[k], n)
			}
		}
	}
	ss.mu.Unlock()
	for k := range add {
		if len(add[k]) > 0 {
			ss.send(rc, subKind(k).subscribe(), add[k])
		}
		if len(drop[k]) > 0 {
			ss.send(rc, subKind(k).unsubscribe(), drop[k])
		}
	}
	return rc, early, nil
}

// snapshot lists what the session wants.
func (ss *session) snapshot() [numKinds][]string {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	var out [numKinds][]string
	for k, m := range ss.want {
		for n := range m {
			out[k] = append(out[k], n)
		}
	}
	return out
}

// serve reads messages from rc until it fails, stays silent, must be
// replaced (a redirect, the server unsubscribing a shard's channels) or
// the session ends.
func (ss *session) serve(rc redis.Conn, early []any) {
	stopClose := context.AfterFunc(ss.ctx, func() { rc.Close() })
	stopPing := make(chan struct{})
	var pinger sync.WaitGroup
	pinger.Add(1)
	go func() {
		defer pinger.Done()
		t := time.NewTicker(pingEvery)
		defer t.Stop()
		for {
			select {
			case <-stopPing:
				return
			case <-t.C:
			}
			ss.sendMu.Lock()
			err := rc.Send("PING")
			if err == nil {
				err = rc.Flush()
			}
			ss.sendMu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	defer func() {
		ss.mu.Lock()
		if ss.rc == rc {
			ss.rc = nil
		}
		ss.mu.Unlock()
		stopClose()
		rc.Close()
		close(stopPing)
		pinger.Wait()
	}()
	for _, v := range early {
		if !ss.handle(v) {
			return
		}
	}
	for {
		v, err := redis.ReceiveWithTimeout(rc, silence)
		var re redis.Error
		switch {
		case errors.As(err, &re):
			// The reply to a command sent while subscribed: MOVED for an
			// SSUBSCRIBE of a slot that moved, NOPERM…
			if isRedirect(re) {
				return // dial the slot's master again
			}
			ss.failWaiters(err)
			continue
		case err != nil:
			return
		}
		if !ss.handle(v) {
			return
		}
	}
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
		ss.confirmLocked(confirmKind(kind), name)
		ss.mu.Unlock()
	case "sunsubscribe":
		ss.mu.Lock()
		defer ss.mu.Unlock()
		switch {
		case ss.pending[name] > 0:
			if ss.pending[name]--; ss.pending[name] == 0 {
				delete(ss.pending, name)
			}
		case ss.want[kindShard][name]:
			// Not asked for: the server no longer serves the channel's
			// slot (resharding, failover). Follow it to its new master.
			return false
		}
	}
	return true
}

func confirmKind(kind string) subKind {
	switch kind {
	case "psubscribe":
		return kindPattern
	case "ssubscribe":
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
	return ss.want[kind][name]
}

// confirmLocked answers the waiters of name. ss.mu must be held.
func (ss *session) confirmLocked(kind subKind, name string) {
	k := waitKey{kind, name}
	for _, w := range ss.waiters[k] {
		w <- nil
	}
	delete(ss.waiters, k)
}

// failWaiters answers every waiter with err.
func (ss *session) failWaiters(err error) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for k, ws := range ss.waiters {
		for _, w := range ws {
			w <- err
		}
		delete(ss.waiters, k)
	}
}

func strArgs(names []string) []any {
	args := make([]any, len(names))
	for i, n := range names {
		args[i] = n
	}
	return args
}
