package transport

import (
	"sync"
	"sync/atomic"
)

// Held counts the calls using a shared node and closes it, once, when it
// has been retired and the last of them has ended: the cluster's members
// (a master that leaves the slot map) and Sentinel's (a master that is
// replaced) alike.
//
// Reference counts rather than a grace period: a call may last as long as
// its context allows (a BLPOP without a deadline: forever), so no period
// is long enough to be sure, while a count is exact. The protocol, on
// sequentially consistent atomics: Acquire adds one, then checks retired;
// Retire sets retired, then checks for zero; Release subtracts one and,
// at zero on a retired node, closes it. So either Acquire sees retired
// (and backs off) or the retirement sees the call (and leaves the closing
// to its Release); whoever sees zero last closes, once.
//
// The zero Held counts calls and is never closed (Init gives it its
// close); a Held must not be copied.
type Held struct {
	refs    atomic.Int64
	retired atomic.Bool
	once    sync.Once
	close   func()
}

// Init sets what closing the node does.
func (h *Held) Init(close func()) { h.close = close }

// Acquire counts a call. It fails once the node is retired: the caller
// looks up the node to use again.
func (h *Held) Acquire() bool {
	h.refs.Add(1)
	if h.retired.Load() {
		h.Release()
		return false
	}
	return true
}

// Hold counts a call on a node known not to be retired (one found under
// the lock that retirement takes first).
func (h *Held) Hold() { h.refs.Add(1) }

// Release ends a call counted by Acquire or Hold, closing a retired node
// when it was the last.
func (h *Held) Release() {
	if h.refs.Add(-1) == 0 && h.retired.Load() {
		h.Shut()
	}
}

// Retire marks the node as gone: it is closed at once if no call uses
// it, otherwise by the Release of the last. The locks its close takes
// must not be held.
func (h *Held) Retire() {
	h.retired.Store(true)
	if h.refs.Load() == 0 {
		h.Shut()
	}
}

// Shut retires the node and closes it now, once, whatever calls use it
// (a Close of the whole backend: those calls fail).
func (h *Held) Shut() {
	h.retired.Store(true)
	h.once.Do(func() {
		if h.close != nil {
			h.close()
		}
	})
}
