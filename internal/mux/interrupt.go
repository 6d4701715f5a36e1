package mux

import (
	"context"
	"sync"
	"time"
)

// interrupter lets a caller block on a socket's read or write while its
// context can end: arm registers, for the duration of one wait, a
// function that sets a deadline in the past when the context ends, which
// wakes the wait with os.ErrDeadlineExceeded; disarm ends the wait, after
// which a late wake-up of it does nothing (gen tells one wait from the
// next). The caller then leaves what it was doing to the connection's
// own goroutine, which carries on with no deadline of the caller's: so
// only the wait is interrupted, never the stream.
type interrupter struct {
	mu    sync.Mutex // guards armed and gen
	armed bool
	gen   uint64
}

// arm starts a wait under ctx, whose end calls set with a past time.
func (g *interrupter) arm(ctx context.Context, set func(time.Time) error) (disarm func()) {
	g.mu.Lock()
	g.gen++
	gen := g.gen
	g.armed = true
	g.mu.Unlock()
	stop := context.AfterFunc(ctx, func() {
		g.mu.Lock()
		if g.armed && g.gen == gen {
			set(aLongTimeAgo)
		}
		g.mu.Unlock()
	})
	return func() {
		stop()
		g.mu.Lock()
		g.armed = false
		g.mu.Unlock()
	}
}

// waiting reports whether a wait is armed.
func (g *interrupter) waiting() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.armed
}

// aLongTimeAgo is a deadline in the past: it unblocks a socket at once.
var aLongTimeAgo = time.Unix(1, 0)
