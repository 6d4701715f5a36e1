package strategy

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/redisx-go/kit/internal/resp"
)

// reply is where one command's reply is decoded: which decoder to use and
// the destination of each kind.
type reply struct {
	kind replyKind
	n    int // replyOK: status replies expected (a run of SETs)

	val  []byte
	vals [][]byte // replyBulks: one element per key, nil where missing
	num  int64
	any  any
	err  error // reply-level error: a server error reply or a wrong type
}

type replyKind uint8

const (
	replyBulk  replyKind = iota // GET
	replyOK                     // n status replies: SET, MSET, ASKING
	replyInt                    // DEL
	replyBulks                  // MGET into vals
	replyAny                    // any command
	replyPipe                   // several commands: see call.pipe
)

// read decodes rp's reply from r. Reply-level errors are stored in rp.err;
// stream-level errors, after which r is unusable, are returned.
func (rp *reply) read(r *resp.Reader) error {
	var err error
	switch rp.kind {
	case replyBulk:
		rp.val, err = r.ReadBulk()
	case replyInt:
		rp.num, err = r.ReadInt()
	case replyBulks:
		err = r.ReadBulks(rp.vals)
	case replyAny:
		rp.any, err = r.ReadAny()
	case replyOK:
		for i := 0; i < max(rp.n, 1); i++ {
			e := r.ReadOK()
			if resp.Fatal(e) {
				return e
			}
			if err == nil {
				err = e
			}
		}
	}
	if resp.Fatal(err) {
		return err
	}
	rp.err = err
	return nil
}

// readAll decodes the replies of a pipeline in order.
func readAll(r *resp.Reader, rps []reply) error {
	for i := range rps {
		if err := rps[i].read(r); err != nil {
			return err
		}
	}
	return nil
}

// A call is one caller's request on a shared connection: the reader loop
// fills it with the reply and wakes the caller. Calls are recycled through
// a sync.Pool; a call abandoned by its caller (context done) is recycled
// by the reader once the reply has been read and dropped, never by the
// caller, so a recycled call can never receive a stale reply.
type call struct {
	done  chan struct{} // capacity 1: the reader's wake-up
	state atomic.Uint32
	reply
	pipe []reply // replyPipe: the replies of a pipeline, owned by the caller
	// deadline is the caller's context deadline in Unix nanoseconds, 0 for
	// none: how long the watchdog lets the connection wait for this reply.
	deadline int64
	// fail is the connection's failure when it failed before the reply
	// was read; the reply is then empty.
	fail error
}

const (
	callWaiting uint32 = iota
	callDelivered
	callAbandoned
)

// read decodes the call's reply or replies.
func (cl *call) read(r *resp.Reader) error {
	if cl.kind == replyPipe {
		return readAll(r, cl.pipe)
	}
	return cl.reply.read(r)
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
	c.reply = reply{}
	c.pipe = nil
	c.deadline = 0
	c.fail = nil
	cp.p.Put(c)
}

// deliver hands a finished call to its waiter, or recycles it when the
// waiter has left.
func (cp *callPool) deliver(c *call) {
	if c.state.CompareAndSwap(callWaiting, callDelivered) {
		c.done <- struct{}{}
		return
	}
	cp.put(c)
}

// wait blocks until c is delivered or ctx is done. On a context error the
// call is abandoned: the reader will read and drop its reply.
func wait(ctx context.Context, c *call) error {
	done := ctx.Done()
	if done == nil {
		<-c.done
		return nil
	}
	select {
	case <-c.done:
		return nil
	case <-done:
		if c.state.CompareAndSwap(callWaiting, callAbandoned) {
			return ctx.Err()
		}
		<-c.done // delivered while we were leaving: take it
		return nil
	}
}
