package localcache

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/redisx-go/kit/internal/subscribe"
	"github.com/redisx-go/kit/strategy"
)

// Tracking says how Near learns of other clients' writes (see the
// package documentation, "Tracking modes").
type Tracking int

const (
	// TrackKeys, the zero value: the server remembers which keys this
	// process read, on each data connection of the inner strategy, and
	// tells it of writes to those keys only.
	TrackKeys Tracking = iota
	// TrackBroadcast: the server tells this process of every write to a
	// key under Near.Prefixes (every key without), read here or not, and
	// keeps no per-key state for it.
	TrackBroadcast
	// TrackNone: no help from the server. Another client's write is seen
	// only when the entry's TTL ends: entries may be stale for up to
	// Near.TTL. This process's own writes still invalidate its copy at
	// once.
	TrackNone
)

// valid reports whether t is one of the three modes: the rule
// Near.Validate applies, and the names a URL's near_tracking may take.
func (t Tracking) valid() bool { return t >= TrackKeys && t <= TrackNone }

// String returns the mode's name in a URL's near_tracking parameter:
// keys, broadcast or none.
func (t Tracking) String() string {
	switch t {
	case TrackKeys:
		return "keys"
	case TrackBroadcast:
		return "broadcast"
	case TrackNone:
		return "none"
	}
	return "Tracking(" + strconv.Itoa(int(t)) + ")"
}

// constName is the mode's name in Go, for errors that say what to set.
func (t Tracking) constName() string {
	switch t {
	case TrackKeys:
		return "localcache.TrackKeys"
	case TrackBroadcast:
		return "localcache.TrackBroadcast"
	}
	return "localcache.TrackNone"
}

// With TrackKeys, each data connection of the inner strategy passes
// through track as it is dialled (strategy.Config.OnConnect): it runs
// CLIENT TRACKING on REDIRECT <id>, id being the client ID of the
// invalidation connection of its node, and is registered with that
// node's listener. The server forgets what a connection tracked when the
// connection ends (redis/redis#11767), and a read does not tell which
// connection served it; so:
//
//   - every check period the listener's checker asks the server whether
//     each registered connection still exists (CLIENT TRACKING on REDIRECT
//     <its id> on a connection of its own: the server refuses a redirect
//     to a client that does not exist; cheaper than CLIENT LIST and
//     allowed to any user that may track). One that is gone — closed by
//     the strategy, killed by the server (CLIENT KILL, timeout), dropped
//     by a proxy — is closed on this side too and the whole cache is
//     flushed, within a check period (and a round trip) of the loss, idle
//     connections included;
//   - when the invalidation connection is replaced after a loss, it has a
//     new client ID: the data connections pointed to the old one are
//     closed (their calls in flight fail with ErrConnection, as on any
//     lost connection; the strategy dials new ones, pointed to the new
//     one) before anything is served locally again. One replaced for its
//     age (Config.MaxConnAge) is read on until the data connections
//     pointed to it have been replaced for their own age, and closed then
//     (at the latest MaxConnAge later, those left closed with it);
//   - a data connection dialled while its node's invalidation connection
//     is down, or whose tracking the server refuses once Open has
//     returned, is used untracked: nothing is served locally while one
//     exists, and it is closed (and so replaced) once the invalidation
//     connection is back, or within a second.

// checkPeriod is how often each node's data connections are checked: the
// bound, with a round trip, on how long an entry read through a
// connection the server dropped may still be served.
const checkPeriod = 50 * time.Millisecond

// dataConn is a data connection of the inner strategy: the connection,
// and the client ID of the invalidation connection its tracking is
// redirected to (0: not tracked).
type dataConn struct {
	nc    net.Conn
	redir int64
}

// track is strategy.Config.OnConnect with TrackKeys.
func (inv *invalidator) track(ctx context.Context, addr string, nc net.Conn) error {
	c := redis.NewConn(nc, 0, 0) // the strategy's connection: never closed here
	id, err := redis.Int64(c.Do("CLIENT", "ID"))
	if err != nil {
		return fmt.Errorf("%w: tracking a connection to %s: %w", strategy.ErrConnection, addr, err)
	}
	inv.hooked.Add(1)
	for {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("%w: tracking a connection to %s: %w", strategy.ErrConnection, addr, err)
		}
		l := inv.listenerFor(addr)
		if l == nil {
			return strategy.ErrClosed
		}
		redir, err := l.waitUp(ctx)
		if err != nil && !inv.opened.Load() {
			return err // refused at Open: New fails, saying what to do
		}
		if redir != 0 {
			_, err = c.Do("CLIENT", "TRACKING", "on", "REDIRECT", redir)
			var re redis.Error
			switch {
			case err == nil:
				if l.register(id, nc, redir) {
					return nil
				}
				continue // the listener was replaced meanwhile: point to the new one
			case !errors.As(err, &re):
				return fmt.Errorf("%w: tracking a connection to %s: %w", strategy.ErrConnection, addr, err)
			case strings.Contains(string(re), "does not exist"):
				// The invalidation connection was lost meanwhile; wait
				// for the next.
				l.waitChange(ctx)
				continue
			case !inv.opened.Load():
				// Would broadcast tracking do? Say so.
				_, bcast := c.Do("CLIENT", "TRACKING", "on", "REDIRECT", redir, "BCAST")
				return refusal(addr, TrackKeys, err, bcast == nil)
			}
		}
		if l.addUntracked(id, nc) {
			return nil
		}
	}
}

// waitUp waits, within ctx and at most half of what remains of it (a
// second if it has no deadline), for l to be subscribed, and returns the
// client ID to redirect to; 0 when l was not subscribed in time, or was
// closed; the refusal when the server refused l's connection.
func (l *listener) waitUp(ctx context.Context) (int64, error) {
	limit := time.Second
	if d, ok := ctx.Deadline(); ok {
		limit = time.Until(d) / 2
	}
	timer := time.NewTimer(limit)
	defer timer.Stop()
	for {
		l.mu.Lock()
		up, id, refused, changed := l.up, l.id, l.refused, l.changed
		l.mu.Unlock()
		switch {
		case up:
			return id, nil
		case refused != nil:
			return 0, refused
		}
		select {
		case <-changed:
		case <-timer.C:
			return 0, nil
		case <-ctx.Done():
			return 0, nil
		case <-l.ctx.Done():
			return 0, nil
		}
	}
}

// waitChange waits for a change of l's state, at most 100 ms.
func (l *listener) waitChange(ctx context.Context) {
	l.mu.Lock()
	changed := l.changed
	l.mu.Unlock()
	select {
	case <-changed:
	case <-ctx.Done():
	case <-l.ctx.Done():
	case <-time.After(100 * time.Millisecond):
	}
}

// register records the data connection nc, client ID id, tracked with
// redirection to redir — unless redir is no longer l's client ID.
func (l *listener) register(id int64, nc net.Conn, redir int64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.up || l.id != redir || l.ctx.Err() != nil {
		return false
	}
	if l.conns == nil {
		l.conns = map[int64]*dataConn{}
	}
	l.conns[id] = &dataConn{nc: nc, redir: redir}
	return true
}

// addUntracked records the untracked data connection nc: nothing is served
// locally until it is gone. It reports false when l was closed meanwhile.
func (l *listener) addUntracked(id int64, nc net.Conn) bool {
	l.mu.Lock()
	if l.ctx.Err() != nil {
		l.mu.Unlock()
		return false
	}
	if l.conns == nil {
		l.conns = map[int64]*dataConn{}
	}
	l.conns[id] = &dataConn{nc: nc}
	l.untracked++
	l.mu.Unlock()
	l.inv.update()
	return true
}

// pointed reports whether any data connection is registered with l.
func (l *listener) pointed() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.conns) > 0
}

// drop closes the data connections registered with l that keep (under
// l.mu) does not keep, and flushes the cache if any of them was tracked:
// what was read through them may no longer be invalidated.
func (l *listener) drop(keep func(id int64, d *dataConn) bool) {
	var closing []net.Conn
	tracked := false
	l.mu.Lock()
	for id, d := range l.conns {
		if keep(id, d) {
			continue
		}
		closing = append(closing, d.nc)
		tracked = tracked || d.redir != 0
		if d.redir == 0 {
			l.untracked--
		}
		delete(l.conns, id)
	}
	l.mu.Unlock()
	// Closed first: no read through them can store its reply after the
	// flush.
	for _, nc := range closing {
		nc.Close()
	}
	if tracked {
		l.inv.flush()
	}
	if len(closing) > 0 {
		l.inv.update()
	}
}

// connected makes c the listener's connection, subscribed: with
// TrackKeys, the data connections pointed to neither c nor a connection
// still read after a handover are closed first (see the comment above
// checkPeriod).
func (l *listener) connected(c *subscribe.Conn) {
	l.mu.Lock()
	l.id, l.cur = c.ID, c
	l.mu.Unlock()
	if l.inv.mode == TrackKeys {
		l.drop(func(_ int64, d *dataConn) bool {
			return d.redir == c.ID || (d.redir != 0 && l.draining[d.redir] != nil)
		})
	}
	l.mu.Lock()
	l.up = true
	l.notifyLocked()
	l.mu.Unlock()
	l.inv.update()
}

// drained is a connection replaced for its age and read on while data
// connections point to it, until at the latest until.
type drained struct {
	c     redis.Conn
	until time.Time
}

// retire closes the connections read on after a handover (see
// listener.HandOver) that no data connection points to any more — they
// are replaced for their age too — or whose time is up; closed, the
// engine ends them, and Retired closes the data connections left.
func (l *listener) retire() {
	now := time.Now()
	var done []redis.Conn
	l.mu.Lock()
	for id, d := range l.draining {
		left := false
		for _, dc := range l.conns {
			left = left || dc.redir == id
		}
		if !left || now.After(d.until) {
			done = append(done, d.c)
		}
	}
	l.mu.Unlock()
	for _, c := range done {
		c.Close()
	}
}

// check verifies, every checkPeriod while l is subscribed, that the data
// connections registered with l, and the invalidation connections they
// point to, still exist on the server; it closes the untracked ones, at
// most once a second, so that they are dialled again, tracked. Every
// checkPeriod, subscribed or not, it retires the connections read on
// after a handover that are done (see retire). See the comment above
// checkPeriod.
func (l *listener) check() {
	defer l.inv.wg.Done()
	var ctl redis.Conn // a connection of the checker's own
	defer func() {
		if ctl != nil {
			ctl.Close()
		}
	}()
	t := time.NewTicker(checkPeriod)
	defer t.Stop()
	var swept time.Time
	for {
		select {
		case <-l.ctx.Done():
			return
		case <-t.C:
		}
		l.retire()
		l.mu.Lock()
		if !l.up {
			l.mu.Unlock()
			continue
		}
		targets := map[int64]redis.Conn{l.id: l.cur}
		for id, d := range l.draining {
			targets[id] = d.c
		}
		var ids []int64
		for id, d := range l.conns {
			if d.redir != 0 {
				ids = append(ids, id)
			}
		}
		untracked := l.untracked
		l.mu.Unlock()
		if untracked > 0 && time.Since(swept) > time.Second {
			swept = time.Now()
			l.drop(func(_ int64, d *dataConn) bool { return d.redir != 0 })
		}
		if len(ids) == 0 {
			l.checked(true)
			continue
		}
		all := make([]int64, 0, len(targets)+len(ids))
		for id := range targets {
			all = append(all, id)
		}
		all = append(all, ids...)
		gone, err := l.probe(&ctl, all)
		if err != nil {
			// One more try on a new connection: the last may have been
			// killed, as any client can be.
			gone, err = l.probe(&ctl, all)
		}
		l.checked(err == nil)
		if err != nil {
			continue
		}
		for id, c := range targets {
			if gone[id] && c != nil {
				c.Close() // its session or drain sees the loss and deals with it
			}
		}
		l.drop(func(id int64, _ *dataConn) bool { return !gone[id] })
	}
}

// checked records whether the last check could be made: while it cannot,
// nothing is served locally.
func (l *listener) checked(ok bool) {
	l.mu.Lock()
	changed := l.checkOK != ok
	l.checkOK = ok
	l.mu.Unlock()
	if changed {
		l.inv.update()
	}
}

// probe asks the server, on *ctl (dialled if nil, closed and set to nil
// on a failure), which of the client IDs ids no longer exist.
func (l *listener) probe(ctl *redis.Conn, ids []int64) (map[int64]bool, error) {
	timeout := max(l.inv.cfg.DialTimeout, time.Second)
	if *ctl == nil {
		ctx, cancel := context.WithTimeout(l.ctx, timeout)
		c, err := dialRedigo(ctx, l.inv.cfg, l.addr, "check")
		cancel()
		if err != nil {
			return nil, err
		}
		*ctl = c
	}
	c := *ctl
	fail := func(err error) (map[int64]bool, error) {
		c.Close()
		*ctl = nil
		return nil, err
	}
	for _, id := range ids {
		if err := c.Send("CLIENT", "TRACKING", "on", "REDIRECT", id); err != nil {
			return fail(err)
		}
	}
	if err := c.Flush(); err != nil {
		return fail(err)
	}
	gone := map[int64]bool{}
	var refused error
	for _, id := range ids {
		_, err := redis.ReceiveWithTimeout(c, timeout)
		var re redis.Error
		switch {
		case err == nil:
		case !errors.As(err, &re):
			return fail(err)
		case strings.Contains(string(re), "does not exist"):
			gone[id] = true
		default:
			refused = err // NOPERM: the check cannot be made
		}
	}
	if refused != nil {
		return nil, refused
	}
	return gone, nil
}

// refusal is the error of New when the server refuses CLIENT TRACKING in
// mode: it wraps ErrAuth for NOPERM (an ACL user without client|tracking),
// ErrUnsupported otherwise (a server or proxy that does not support it),
// and says which Tracking to set instead — otherOK tells that the
// server accepts the other mode of tracking.
func refusal(addr string, mode Tracking, err error, otherOK bool) error {
	kind := strategy.ErrUnsupported
	var re redis.Error
	if errors.As(err, &re) && strings.HasPrefix(string(re), "NOPERM") {
		kind = strategy.ErrAuth
	}
	fix := TrackNone.constName() + " (no invalidation: entries live at most Near.TTL)"
	if otherOK {
		other := TrackBroadcast
		if mode == TrackBroadcast {
			other = TrackKeys
		}
		fix = other.constName() + ", which the server accepts, or " + fix
	}
	return fmt.Errorf("%w: near-cache: %s refuses CLIENT TRACKING in Near.Tracking %s mode: %w; set Near.Tracking to %s", kind, addr, mode, err, fix)
}
