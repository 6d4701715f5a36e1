package strategy

import (
	"context"
	"sync"
	"sync/atomic"
)

// A call is one caller's request on a shared connection: the reader loop
// fills it with the reply and wakes the caller. Calls are recycled through
// a sync.Pool; a call abandoned by its caller (context done) is recycled
// by the reader once the reply has been read and dropped, never by the
// caller, so a recycled call can never receive a stale reply.
type call struct {
	done  chan struct{} // capacity 1: the reader's wake-up
	state atomic.Uint32
	kind  replyKind
	n     int // replies expected (a pipeline of SETs)

	val  []byte
	vals [][]byte
	num  int64
	any  any
	err  error
}

const (
	callWaiting uint32 = iota
	callDelivered
	callAbandoned
)

type replyKind uint8

const (
	replyBulk  replyKind = iota // GET
	replyOK                     // n status replies: SET, MSET
	replyInt                    // DEL
	replyBulks                  // MGET into vals
	replyAny                    // any command
)

type callPool struct{ p sync.Pool }

func (cp *callPool) get(kind replyKind, n int) *call {
	c, _ := cp.p.Get().(*call)
	if c == nil {
		c = &call{done: make(chan struct{}, 1)}
	}
	c.state.Store(callWaiting)
	c.kind, c.n = kind, n
	return c
}

func (cp *callPool) put(c *call) {
	c.val, c.vals, c.any, c.err, c.num = nil, nil, nil, nil, 0
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
