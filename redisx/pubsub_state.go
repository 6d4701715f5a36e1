package redisx

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gomodule/redigo/redis"
	"github.com/redisx-go/kit/strategy"
)

// What a session wants, who waits for what, and which replies the
// connection owes. All of it is guarded by session.mu; a change that
// must be told to the server is made and written under session.sendMu
// too, so that commands go out in the order of the changes.
//
//   - A name is wanted while it has an entry. An entry is held once a
//     Subscribe naming it succeeded, and then lasts until Unsubscribe;
//     before that it lasts while Subscribe calls naming it are running
//     (calls). A call that fails or times out removes only the entries it
//     leaves neither held nor wanted by another call: it undoes what it
//     added, nothing an earlier or concurrent call subscribed.
//   - A name the server refuses on a new connection (NOPERM after an ACL
//     change), or a connection it refuses (ErrAuth), fails the calls
//     naming it; one the subscription relies on cannot be restored, and
//     the subscription ends (Subscription.end).
//   - A Subscribe waits for one confirmation per name: the reply to a
//     SUBSCRIBE sent for it on the current connection (pending lists who
//     each reply answers), or, when the connection is replaced first, the
//     next connection's. An Unsubscribe answers the calls waiting for the
//     names it removes: they took effect before it.
//   - pending lists the commands written on the current connection whose
//     replies have not all been read, in order: a reply that matches the
//     head is that command's; anything else the server sent by itself
//     (an "sunsubscribe" of a slot that moved). An error reply is the
//     head's, and fails only the calls that command was sent for. The
//     list belongs to one connection and is emptied with it.

// entry is a name the session wants.
type entry struct {
	held    bool    // a Subscribe naming it succeeded
	calls   []*call // Subscribe calls naming it that have not returned
	waiting []*call // of those, the ones the server has not confirmed it to yet
}

// refuseLocked takes the server's refusal of e on a new connection: the
// calls naming it fail with err, even one it was confirmed to earlier.
// It reports whether the subscription relies on e — held, or confirmed
// with the rest of a call that cannot be failed any more — and must end.
func (e *entry) refuseLocked(err error) (relied bool) {
	relied = e.held
	for _, cl := range slices.Clone(e.calls) {
		if cl.left == 0 {
			relied = true
		}
		cl.failLocked(err)
	}
	return relied
}

// call is one Subscribe's names in one session.
type call struct {
	kind  subKind
	names []string
	ents  []*entry   // by index of names: the entry the call counted itself in
	left  int        // names not confirmed yet; -1 once failed
	done  chan error // capacity 1: nil once every name is confirmed, or the failure
}

// subCmd is a command written on the connection, whose replies — one
// per name, or a single error — are awaited.
type subCmd struct {
	kind  subKind
	sub   bool // SUBSCRIBE, else UNSUBSCRIBE
	names []string
	calls [][]*call // SUBSCRIBE: by index of names, the calls its confirmation answers
	next  int       // index of the next name's reply
}

func (c *subCmd) args() []any {
	verb := c.kind.unsubscribe()
	if c.sub {
		verb = c.kind.subscribe()
	}
	return append([]any{verb}, strArgs(c.names)...)
}

// answerLocked takes the server's confirmation of e (or its removal) to
// cl, which returns nil once every name of it is confirmed.
func (cl *call) answerLocked(e *entry) {
	i := slices.Index(e.waiting, cl)
	if i < 0 {
		return
	}
	e.waiting = slices.Delete(e.waiting, i, i+1)
	if cl.left--; cl.left == 0 {
		cl.done <- nil
	}
}

// failLocked ends cl with err, once.
func (cl *call) failLocked(err error) {
	if cl.left <= 0 {
		return
	}
	cl.left = -1
	for _, e := range cl.ents {
		e.waiting = slices.DeleteFunc(e.waiting, func(w *call) bool { return w == cl })
	}
	cl.done <- err
}

// add counts a new call in for names of kind, and sends SUBSCRIBE on the
// connection if there is one (else the next connection subscribes them).
// The caller holds Subscription.mu.
func (ss *session) add(kind subKind, names []string) *call {
	cl := &call{kind: kind, names: names, ents: make([]*entry, len(names)), left: len(names), done: make(chan error, 1)}
	ss.sendMu.Lock()
	defer ss.sendMu.Unlock()
	ss.mu.Lock()
	for i, n := range names {
		e := ss.want[kind][n]
		if e == nil {
			e = &entry{}
			ss.want[kind][n] = e
		}
		e.calls = append(e.calls, cl)
		e.waiting = append(e.waiting, cl)
		cl.ents[i] = e
	}
	calls := make([][]*call, len(names))
	for i := range calls {
		calls[i] = []*call{cl}
	}
	cmd := &subCmd{kind: kind, sub: true, names: names, calls: calls}
	rc := ss.queueLocked(cmd)
	ss.mu.Unlock()
	ss.write(rc, cmd)
	return cl
}

// release ends cl: its Subscribe returned, successfully when ok. Its
// names are then held, or else unsubscribed unless held or wanted by
// another call still running. release reports whether the session wants
// nothing any more. The caller holds Subscription.mu.
func (ss *session) release(cl *call, ok bool) (empty bool) {
	ss.sendMu.Lock()
	defer ss.sendMu.Unlock()
	ss.mu.Lock()
	var gone []string
	for i, n := range cl.names {
		e := cl.ents[i]
		if ss.want[cl.kind][n] != e {
			continue // unsubscribed since
		}
		e.calls = slices.DeleteFunc(e.calls, func(w *call) bool { return w == cl })
		e.waiting = slices.DeleteFunc(e.waiting, func(w *call) bool { return w == cl })
		switch {
		case ok:
			e.held = true
		case !e.held && len(e.calls) == 0:
			delete(ss.want[cl.kind], n)
			gone = append(gone, n)
		}
	}
	empty = ss.emptyLocked()
	var rc redis.Conn
	cmd := &subCmd{kind: cl.kind, names: gone}
	if len(gone) > 0 && !empty {
		rc = ss.queueLocked(cmd)
	}
	ss.mu.Unlock()
	ss.write(rc, cmd)
	return empty
}

// remove stops wanting names (every name of kind when nil), answers the
// calls waiting for them, and reports whether the session wants nothing
// any more. The caller holds Subscription.mu.
func (ss *session) remove(kind subKind, names []string) (empty bool) {
	ss.sendMu.Lock()
	defer ss.sendMu.Unlock()
	ss.mu.Lock()
	if names == nil {
		for n := range ss.want[kind] {
			names = append(names, n)
		}
	}
	var gone []string
	for _, n := range names {
		e := ss.want[kind][n]
		if e == nil {
			continue
		}
		delete(ss.want[kind], n)
		gone = append(gone, n)
		for _, cl := range slices.Clone(e.waiting) {
			cl.answerLocked(e)
		}
	}
	empty = ss.emptyLocked()
	var rc redis.Conn
	cmd := &subCmd{kind: kind, names: gone}
	if len(gone) > 0 && !empty {
		rc = ss.queueLocked(cmd)
	}
	ss.mu.Unlock()
	ss.write(rc, cmd)
	return empty
}

func (ss *session) emptyLocked() bool {
	for k := range ss.want {
		if len(ss.want[k]) > 0 {
			return false
		}
	}
	return true
}

// queueLocked records cmds as written on the connection and returns it,
// for the caller to write them after unlocking mu and before unlocking
// sendMu; without a connection it records nothing and returns nil.
func (ss *session) queueLocked(cmds ...*subCmd) redis.Conn {
	if ss.rc == nil {
		return nil
	}
	ss.pending = append(ss.pending, cmds...)
	return ss.rc
}

// write writes cmds, which queueLocked returned rc for, on rc; nothing
// when rc is nil. The caller holds sendMu; a failure shows on the reading
// side, which replaces the connection.
func (ss *session) write(rc redis.Conn, cmds ...*subCmd) {
	if rc == nil {
		return
	}
	for _, c := range cmds {
		args := c.args()
		if rc.Send(args[0].(string), args[1:]...) != nil {
			return
		}
	}
	rc.Flush()
}

// replyLocked takes a confirmation (sub) or unsubscribe reply of name:
// false if it is not the reply the head of pending awaits.
func (ss *session) replyLocked(kind subKind, sub bool, name string) bool {
	if len(ss.pending) == 0 {
		return false
	}
	head := ss.pending[0]
	if head.kind != kind || head.sub != sub || head.names[head.next] != name {
		return false
	}
	if e := ss.want[kind][name]; sub && e != nil {
		for _, cl := range head.calls[head.next] {
			cl.answerLocked(e)
		}
	}
	if head.next++; head.next == len(head.names) {
		ss.pending = ss.pending[1:]
	}
	return true
}

// refusedLocked takes an error reply: the head of pending's, whose calls
// fail with it.
func (ss *session) refusedLocked(re redis.Error) {
	if len(ss.pending) == 0 {
		return
	}
	head := ss.pending[0]
	ss.pending = ss.pending[1:]
	if !head.sub {
		return
	}
	err := refusal(head.kind, head.names[head.next:], "", re)
	for _, calls := range head.calls[head.next:] {
		for _, cl := range calls {
			cl.failLocked(err)
		}
	}
}

// refuseAllLocked takes the refusal of a new connection: every name is
// refused (see entry.refuseLocked), and it reports whether the
// subscription relies on one.
func (ss *session) refuseAllLocked(err error) (relied bool) {
	for k := range ss.want {
		for _, e := range ss.want[k] {
			if e.refuseLocked(err) {
				relied = true
			}
		}
	}
	return relied
}

// refusal is the error of a SUBSCRIBE of names that the server refused
// with re: ErrAuth for NOPERM (the user may not use the channel),
// ErrConnection for a "not now" reply, ErrUnsupported otherwise (such as
// SSUBSCRIBE on a server before Redis 7).
func refusal(kind subKind, names []string, where string, re redis.Error) error {
	sentinel := ErrUnsupported
	switch {
	case strings.HasPrefix(string(re), "NOPERM"):
		sentinel = ErrAuth
	case strategy.Temporary(re):
		sentinel = ErrConnection
	}
	detail := fmt.Sprintf("%s %q", kind.subscribe(), names[0])
	if len(names) > 1 {
		detail += fmt.Sprintf(" and %d more", len(names)-1)
	}
	return wrapError(sentinel, detail+where, re)
}

// endedError is why a subscription ended: "redisx: subscription ended:
// <cause>", the cause's own prefix dropped.
type endedError struct{ cause error }

func (e *endedError) Error() string {
	return "redisx: subscription ended: " + strings.TrimPrefix(e.cause.Error(), "redisx: ")
}

func (e *endedError) Unwrap() error { return e.cause }
