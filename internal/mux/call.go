package mux

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/redisx-go/kit/internal/command"
	"github.com/redisx-go/kit/internal/resp"
	"github.com/redisx-go/kit/internal/wire"
)

// A call is one caller's request on a shared connection. Calls are
// recycled through a sync.Pool; a call abandoned by its caller (context
// done) is recycled by whoever reads its reply, never by the caller, so a
// recycled call can never receive a stale reply.
//
// A call is waiting; then delivered (its reply is in it, and done says
// so), or leading (its caller holds the read side and reads the reply
// itself; see muxConn), or abandoned (its caller left).
type call struct {
	done  chan struct{} // capacity 1: delivered, or handed the read side
	state atomic.Uint32
	// lead says the caller waits for the reply right after queueing the
	// call, so it can be handed the read side; a pipeline awaited later
	// cannot.
	lead bool
	wire.Reply
	pipe []wire.Reply // replyPipe: the replies of a pipeline, owned by the caller
	// deadline is the caller's context deadline in Unix nanoseconds, 0 for
	// none: how long the watchdog lets the connection wait for this reply.
	deadline int64
	// fail is the connection's failure when it failed before the reply
	// was read; the reply is then empty — or a *wire.CutError, the
	// server's refusal of the call's commands (see cut).
	fail error
	// got is how many replies of a pipeline read decoded before a stream
	// error stopped it.
	got int
	// conn is the connection the call was queued on.
	conn *muxConn
	// The call's keys, for the ordering rule (see route.go): at most one
	// of key (when hasKey), keys, args (a command, its keys named by its
	// key specifications), cmds (commands) and kv is set, by the caller
	// before the call is routed; only the caller's goroutine reads them.
	hasKey bool
	key    string
	keys   []string
	args   []any
	cmds   [][]any
	kv     map[string][]byte
	// pinned is the stripes of the call's keys, pinned to its connection
	// while it is abandoned and unanswered (see pins).
	pinned []uint16
}

const (
	callWaiting uint32 = iota
	callDelivered
	callLeading
	callAbandoned
)

// replies is the number of replies the call awaits: a reader that holds
// the read side for its caller reads them only when they are all in the
// buffer (resp.Reader.WholeN), since parsing cannot heed a context.
func (cl *call) replies() int {
	if cl.Kind != wire.ReplyPipe {
		return cl.Reply.Count()
	}
	n := 0
	for i := range cl.pipe {
		n += cl.pipe[i].Count()
	}
	return n
}

// read decodes the call's reply or replies.
func (cl *call) read(r *resp.Reader) error {
	if cl.Kind == wire.ReplyPipe {
		var err error
		cl.got, err = wire.ReadSome(r, cl.pipe)
		return err
	}
	return cl.Reply.Read(r)
}

// cut returns the outcome of cl, whose read the stream error err stopped,
// when the peer ended the stream right after an error reply of cl's: the
// server refused the command and closed (see wire.CutError), and cl gets
// that refusal, with fail, the connection's failure, for the commands
// after it. It returns fail otherwise.
func (cl *call) cut(err, fail error) error {
	n, last := 1, cl.Reply.Err // of a run of status replies cut, the last one's (see wire.Reply.Read)
	if cl.Kind == wire.ReplyPipe {
		n, last = cl.got, nil
		if n > 0 {
			last = cl.pipe[n-1].Err
		}
	}
	if cut, ok := wire.Cut(nil, err, last, n).(*wire.CutError); ok {
		cut.Err = fail
		return cut
	}
	return fail
}

type callPool struct{ p sync.Pool }

// get returns a waiting call for a caller whose context is ctx.
func (cp *callPool) get(ctx context.Context) *call {
	c, _ := cp.p.Get().(*call)
	if c == nil {
		c = &call{done: make(chan struct{}, 1)}
	}
	c.state.Store(callWaiting)
	if d, ok := ctx.Deadline(); ok {
		c.deadline = d.UnixNano()
	}
	return c
}

func (cp *callPool) put(c *call) {
	c.Reply = wire.Reply{}
	c.pipe = nil
	c.deadline = 0
	c.fail = nil
	c.got = 0
	c.lead = false
	c.conn = nil
	c.forgetKeys()
	c.pinned = nil
	cp.p.Put(c)
}

func (c *call) forgetKeys() {
	c.hasKey, c.key, c.keys, c.args, c.cmds, c.kv = false, "", nil, nil, nil, nil
}

// deliver hands a finished call to its waiter, or recycles it when the
// waiter has left. A leading call is never delivered: its caller reads
// (or fails) on its own.
func (cp *callPool) deliver(c *call) {
	if c.state.CompareAndSwap(callWaiting, callDelivered) {
		c.done <- struct{}{}
		return
	}
	if c.state.Load() == callAbandoned {
		c.conn.node.pins.unpin(c.pinned)
		cp.put(c)
	}
}

// abandon is a waiting call's caller leaving: it reports whether it left
// (false: the call was delivered or handed the read side meanwhile).
func (c *call) abandon() bool {
	// Pinned first: once abandoned, c may be read, unpinned and recycled
	// at once, and the pins must never show it answered before that.
	pins := &c.conn.node.pins
	c.pin()
	if !c.state.CompareAndSwap(callWaiting, callAbandoned) {
		pins.unpin(c.pinned)
		c.pinned = nil
		return false
	}
	return true
}

// pin pins the stripes of c's keys to c's connection, on the caller's
// goroutine, before c is abandoned.
func (c *call) pin() {
	c.pinned = nil
	c.eachKey(func(k string) bool {
		c.pinned = append(c.pinned, stripeOf(k))
		return true
	})
	c.conn.node.pins.pin(c.conn.slot, c.pinned)
}

// eachKey calls f with each of c's keys, until f returns false.
func (c *call) eachKey(f func(string) bool) {
	switch {
	case c.hasKey:
		f(c.key)
	case c.keys != nil:
		for _, k := range c.keys {
			if !f(k) {
				return
			}
		}
	case c.args != nil:
		keys, _, _ := command.Keys(c.args)
		for _, k := range keys {
			if !f(k) {
				return
			}
		}
	case c.cmds != nil:
		for _, args := range c.cmds {
			keys, _, _ := command.Keys(args)
			for _, k := range keys {
				if !f(k) {
					return
				}
			}
		}
	case c.kv != nil:
		for k := range c.kv {
			if !f(k) {
				return
			}
		}
	}
}

// firstKey returns one of c's keys; false when it has none.
func (c *call) firstKey() (key string, ok bool) {
	c.eachKey(func(k string) bool {
		key, ok = k, true
		return false
	})
	return key, ok
}

// wait blocks until c, a call that cannot lead, is delivered or ctx is
// done. On a context error the call is abandoned: its reply will be read
// and dropped.
func wait(ctx context.Context, c *call) error {
	done := ctx.Done()
	if done == nil {
		<-c.done // a context that cannot end: no select (see await)
		return c.fail
	}
	select {
	case <-c.done:
		return c.fail
	case <-done:
		if c.abandon() {
			return ctx.Err()
		}
		<-c.done // delivered while we were leaving: take it
		return c.fail
	}
}
