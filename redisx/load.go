package redisx

import (
	"bytes"
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// loadGroup runs GetOrLoad's loads: at most one per key at a time, shared
// by every caller that misses the key while it runs (singleflight).
//
// A caller's read and its join are two steps, and a load may end between
// them: the read missed because it came before the load's SET, but the
// caller, descheduled after the reply, reaches join when the load is gone.
// Joining nothing, it would load the key again. So a caller takes a mark
// of the key's ended loads before it reads (mark), and join tells it when
// a load of the key has ended since and none runs: the value is stored
// now, and the caller reads again before it starts a load. The ended
// loads are counted per stripe of keys, by a hash of the key: a hit costs
// one atomic load, and a load that ended for another key of the stripe
// costs, at worst, one read more.
//
// A load is shared work, so it never runs under one caller's context: it
// gets the first caller's context values (context.WithoutCancel) and a
// lifetime of its own. Each caller waits on its own context and leaves
// when that ends; the load is cancelled when the last caller waiting for
// it has left, when timeout passes, or when the client closes. A
// background refresh (stale-while-revalidate) has no caller waiting: it is
// pinned, ended only by its timeout or Close.
type loadGroup struct {
	timeout time.Duration // Options.LoadTimeout; 0: none

	mu      sync.Mutex
	flights map[string]*flight // loads running, by key
	closed  bool               // set by close: no load starts after it
	running sync.WaitGroup     // load goroutines, waited for by close

	// ended counts the loads that returned a value, per stripe of keys;
	// added to under mu, as the load leaves flights.
	ended [loadStripes]atomic.Uint64
}

// loadStripes is the number of stripes of keys whose ended loads are
// counted apart.
const loadStripes = 64

// loadMark is what a caller saw of its key's loads before it read the
// key: loadGroup.mark. The zero loadMark asks join for no check.
type loadMark struct {
	ended uint64
	set   bool
}

// stripe returns the stripe of key: FNV-1a.
func stripe(key string) int {
	h := uint32(2166136261)
	for i := 0; i < len(key); i++ {
		h ^= uint32(key[i])
		h *= 16777619
	}
	return int(h % loadStripes)
}

// mark returns the count of ended loads of key's stripe, taken before the
// caller reads key.
func (g *loadGroup) mark(key string) loadMark {
	return loadMark{ended: g.ended[stripe(key)].Load(), set: true}
}

// flight is one load.
type flight struct {
	cancel context.CancelFunc // ends the load's context
	done   chan struct{}      // closed once err and vals are set
	pinned bool               // a background refresh: not cancelled when no one waits

	// guarded by loadGroup.mu
	waiters  int  // callers waiting for the result
	finished bool // the load returned; leaving no longer cancels it

	// written by the load goroutine before done is closed, read after
	err  error
	vals [][]byte     // one value per caller waiting when the load returned
	next atomic.Int32 // the next of vals to hand out
}

// join makes the caller whose context is ctx wait for the load of key,
// starting it with run unless one is running. leader reports whether this
// call started it. The caller must then call wait exactly once. But when
// none runs and a load of key (or of its stripe) has returned a value
// since m was taken, join returns a nil flight and no error: the caller's
// read may have come before that load's store, and it reads again, then
// joins with the zero loadMark.
func (g *loadGroup) join(ctx context.Context, key string, m loadMark, run func(context.Context) ([]byte, error)) (f *flight, leader bool, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return nil, false, ErrClosed
	}
	if f := g.flights[key]; f != nil {
		f.waiters++
		return f, false, nil
	}
	if m.set && g.ended[stripe(key)].Load() != m.ended {
		return nil, false, nil
	}
	return g.start(ctx, key, g.timeout, run, false), true, nil
}

// refresh starts a pinned load of key, bounded by g.timeout or, when that
// is zero, by fallback, unless a load of key is running already (it
// refreshes the key just as well). No caller waits for it.
func (g *loadGroup) refresh(ctx context.Context, key string, fallback time.Duration, run func(context.Context) ([]byte, error)) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed || g.flights[key] != nil {
		return
	}
	timeout := g.timeout
	if timeout == 0 {
		timeout = fallback
	}
	g.start(ctx, key, timeout, run, true)
}

// start registers and runs a new load of key. g.mu is held.
func (g *loadGroup) start(ctx context.Context, key string, timeout time.Duration, run func(context.Context) ([]byte, error), pinned bool) *flight {
	base := context.WithoutCancel(ctx)
	var lctx context.Context
	var cancel context.CancelFunc
	if timeout > 0 {
		lctx, cancel = context.WithTimeout(base, timeout)
	} else {
		lctx, cancel = context.WithCancel(base)
	}
	f := &flight{cancel: cancel, done: make(chan struct{}), pinned: pinned}
	if !pinned {
		f.waiters = 1
	}
	if g.flights == nil {
		g.flights = map[string]*flight{}
	}
	g.flights[key] = f
	g.running.Add(1)
	go g.run(lctx, key, f, run)
	return f
}

// run calls the load, then hands its result to the callers still waiting:
// the first to take it gets the loaded slice itself, every other a copy of
// its own, all made before any is handed out, so that each may modify what
// it gets.
func (g *loadGroup) run(ctx context.Context, key string, f *flight, load func(context.Context) ([]byte, error)) {
	defer g.running.Done()
	defer f.cancel()
	v, err := load(ctx)

	g.mu.Lock()
	if g.flights[key] == f {
		delete(g.flights, key)
	}
	if err == nil {
		// Its value is stored (or failed to be, which a read tells): a
		// caller whose read missed before may find it now.
		g.ended[stripe(key)].Add(1)
	}
	f.finished = true
	n := f.waiters // no one joins any more; those who leave now just skip their value
	if err != nil && g.closed {
		err = ErrClosed // the load failed because Close cancelled it
	}
	g.mu.Unlock()

	f.err = err
	if err == nil && n > 0 {
		f.vals = make([][]byte, n)
		f.vals[0] = v
		for i := 1; i < n; i++ {
			f.vals[i] = bytes.Clone(v)
		}
	}
	close(f.done)
}

// wait returns f's result (answered), or the error of ctx once it ends
// first.
func (g *loadGroup) wait(ctx context.Context, key string, f *flight) (v []byte, answered bool, err error) {
	select {
	case <-f.done:
		if f.err != nil {
			return nil, true, f.err
		}
		// Only the n callers counted when the load returned get here, so
		// the index stays in range.
		return f.vals[f.next.Add(1)-1], true, nil
	case <-ctx.Done():
		g.leave(key, f)
		return nil, false, ctx.Err()
	}
}

// leave removes a waiter that gave up; the last one out cancels the load
// (unless it is pinned or has returned already) and unregisters it, so
// that the next miss starts a fresh load instead of joining a doomed one.
func (g *loadGroup) leave(key string, f *flight) {
	g.mu.Lock()
	defer g.mu.Unlock()
	f.waiters--
	if f.waiters > 0 || f.pinned || f.finished {
		return
	}
	if g.flights[key] == f {
		delete(g.flights, key)
	}
	f.cancel()
}

// close cancels every load running and waits for their goroutines, which
// return once their loaders do.
func (g *loadGroup) close() {
	g.mu.Lock()
	g.closed = true
	for _, f := range g.flights {
		f.cancel()
	}
	g.mu.Unlock()
	g.running.Wait()
}
