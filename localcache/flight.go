package localcache

import (
	"context"
	"time"

	"github.com/redisx-go/kit/strategy"
)

// flight is a read of one key in flight that later misses of the key wait
// for instead of sending a read of their own: after an invalidation of a
// hot key, every goroutine reading it misses until a reply is stored
// again, and without flights each of them would send the same GET (and
// PTTL) to the server.
//
// A miss joins the key's flight only while the flight's reply could still
// be stored: no invalidation of the key and no flush since the flight was
// reserved, and the store healthy (see store.reserveOrJoin). Its reply is
// then exactly what the miss would have been served as a hit had the
// reply arrived a moment earlier, so it may return it — whatever happens
// while it waits: an invalidation arriving meanwhile concerns a write
// concurrent with the call. A miss that comes after an invalidation does
// not join: the flight may have been read before the write; it leads a
// new flight, read after the invalidation. A process's own write
// invalidates its keys before it returns, so no read that follows it
// joins a flight begun before it.
type flight struct {
	done chan struct{} // closed when the leading read has settled
	ver  uint64        // the reservation's version when it was reserved
	gen  uint64        // the store generation when it was reserved

	waiters int // misses waiting for it; under the stripe's lock

	// Set before done is closed.
	ok    bool          // the read returned a reply (found or not)
	found bool          // the key was found
	val   []byte        // its value, when found and waited for: read-only
	ttl   time.Duration // the key's TTL as the leading read got it
}

// land records the leading read's reply and releases the waiters; under
// the stripe's lock. e is the entry the reply was stored as, if any: its
// value is the waiters' copy too.
func (f *flight) land(r *reservation, ok, found bool, val []byte, ttl time.Duration, e *entry) {
	if r.lead == f {
		r.lead = nil
	}
	f.ok, f.found, f.ttl = ok, found, ttl
	if ok && found && f.waiters > 0 {
		if e != nil && !e.neg {
			f.val = e.val
		} else {
			f.val = append([]byte{}, val...) // the leader's caller owns val
		}
	}
	close(f.done)
}

// wait waits for f and appends its value to dst (with no dst, returns a
// copy of its own): the reply of the leading read, found or
// strategy.ErrNotFound. ok is false when the leading read failed — its
// error may be its own, a context's — and the caller reads for itself; a
// done ctx ends the wait with ctx's error.
func (f *flight) wait(ctx context.Context, dst []byte) (out []byte, ttl time.Duration, ok bool, err error) {
	select {
	case <-f.done:
	case <-ctx.Done():
		return dst, 0, true, ctx.Err()
	}
	switch {
	case !f.ok:
		return dst, 0, false, nil
	case !f.found:
		return dst, 0, true, strategy.ErrNotFound
	case dst == nil:
		return append([]byte{}, f.val...), f.ttl, true, nil
	}
	return append(dst, f.val...), f.ttl, true, nil
}
