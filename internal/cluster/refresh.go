package cluster

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/redisx-go/kit/backend"
	"github.com/redisx-go/kit/internal/topology"
)

// Slot-map refreshes. A reload asks one node for the whole map and
// installs it. Reloads are single-flighted (callers share the one in
// progress) and rate-limited: none starts within refreshCooldown of the
// end of the last. A trigger that cannot start one — within the cooldown,
// or during a reload that may have read the map before the news — is not
// dropped: it is served by one trailing reload at the end of the
// cooldown. Otherwise a MOVED right after a reload (a failover seen by a
// client just opened) would leave the rest of the old master's slots, and
// the old master's connections, in place until the periodic reload.
//
// A failed connection to a node (refused, broken, timed out: see
// refreshAfter) makes the map doubtful: the node may be dead and the
// cluster about to promote its replica, which takes the cluster
// node-timeout and an election. A reload that finds the map as it was
// then is followed by another, at doubtWaitMin doubling up to
// doubtWaitMax, until the map changes or refreshPeriod has passed since
// the last such failure. So a client knows the new master within
// doubtWaitMax of the promotion even when its calls stopped after the
// first failure; calls that keep failing trigger reloads sooner, every
// cooldown.
//
// A reload is shared work: it runs on its own goroutine under the
// client's own context (life, ended by Close) and a timeout per node,
// never under a caller's context, and every caller waits for it within
// its own context only: a caller whose context ends cannot fail the
// reload for the others.

const (
	doubtWaitMin = refreshCooldown
	doubtWaitMax = 400 * time.Millisecond
)

// triggerRefresh asks for a reload in the background: now, or at the end
// of the cooldown.
func (c *Router) triggerRefresh() {
	c.refreshMu.Lock()
	defer c.refreshMu.Unlock()
	c.triggerLocked()
}

// doubtRefresh is triggerRefresh after a failed connection: reloads then
// go on until the map changes (see above).
func (c *Router) doubtRefresh() {
	c.refreshMu.Lock()
	defer c.refreshMu.Unlock()
	now := time.Now()
	if now.After(c.doubtUntil) {
		c.doubtWait = doubtWaitMin // a new doubt, not one going on
	}
	c.doubtUntil = now.Add(refreshPeriod)
	c.triggerLocked()
}

// triggerLocked is triggerRefresh with c.refreshMu held.
func (c *Router) triggerLocked() {
	if c.refreshing != nil {
		c.refreshAgain = true
		return
	}
	c.startLocked()
}

// refresh reloads the slot map and waits, within ctx, for the outcome: it
// joins the reload in progress, or starts one. Within the cooldown it
// returns nil at once (the map is that recent), leaving a trailing reload
// due.
func (c *Router) refresh(ctx context.Context) error {
	c.refreshMu.Lock()
	w := c.refreshing
	if w == nil {
		w = c.startLocked()
	}
	c.refreshMu.Unlock()
	if w == nil {
		return nil
	}
	select {
	case <-w.done:
		return w.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// startLocked starts a reload and returns it, or, within the cooldown,
// arranges the trailing reload and returns nil; nil too once the client is
// closed. No reload may be in progress. c.refreshMu must be held.
func (c *Router) startLocked() *dialWait {
	// closed is checked under refreshMu, which Close holds to set it, so
	// no goroutine is added to wg once Close waits for them.
	if c.closed.Load() {
		return nil
	}
	if wait := refreshCooldown - time.Since(c.lastRefresh); wait > 0 {
		c.trailLocked(wait)
		return nil
	}
	if c.trailing != nil && c.trailing.Stop() {
		// This reload serves the trigger the timer stood for.
		c.trailing = nil
		c.wg.Done()
	}
	w := &dialWait{done: make(chan struct{})}
	c.refreshing = w
	c.wg.Add(1)
	go c.runReload(w)
	return w
}

// trailLocked arranges a reload after wait, unless one is due sooner: a
// trigger within the cooldown is not kept waiting by a doubt's longer
// wait. c.refreshMu must be held.
func (c *Router) trailLocked(wait time.Duration) {
	at := time.Now().Add(wait)
	if c.trailing != nil {
		if !c.trailingAt.After(at) || !c.trailing.Stop() {
			return // due sooner, or firing now
		}
		c.wg.Done() // its runTrailing will not run
	}
	c.wg.Add(1)
	c.trailing, c.trailingAt = time.AfterFunc(wait, c.runTrailing), at
}

// runTrailing is the trailing reload's timer.
func (c *Router) runTrailing() {
	defer c.wg.Done()
	c.refreshMu.Lock()
	defer c.refreshMu.Unlock()
	c.trailing = nil
	if c.refreshing != nil {
		c.refreshAgain = true
		return
	}
	c.startLocked()
}

// runReload runs the reload w stands for and publishes its outcome.
func (c *Router) runReload(w *dialWait) {
	defer c.wg.Done()
	changed, err := c.reload()
	c.refreshes.Add(1)
	if err != nil {
		c.refreshErrors.Add(1)
	}
	c.refreshMu.Lock()
	c.refreshing = nil
	c.lastRefresh = time.Now()
	if changed {
		c.doubtUntil = time.Time{}
	}
	switch {
	case c.refreshAgain:
		c.refreshAgain = false
		c.startLocked() // within the cooldown: the trailing reload
	case c.lastRefresh.Before(c.doubtUntil) && !c.closed.Load():
		// The map is as it was, and doubtful: look again shortly.
		c.trailLocked(c.doubtWait)
		c.doubtWait = min(2*c.doubtWait, doubtWaitMax)
	}
	w.err = err
	close(w.done)
	c.refreshMu.Unlock()
}

// stopRefreshesLocked ends the refreshes for Close: no new one starts, the
// trailing one is cancelled. c.refreshMu must be held.
func (c *Router) stopRefreshesLocked() {
	if c.trailing != nil && c.trailing.Stop() {
		c.wg.Done() // its runTrailing will not run
	}
	c.trailing = nil
}

// reload asks the current masters (in random order), then the seeds, for
// the shards, and installs the first answer; changed reports whether the
// map it installed differs from the one before. Seeds that are not
// masters are closed again once the map is known.
func (c *Router) reload() (changed bool, err error) {
	var addrs []string
	for _, m := range c.state.Load().masters {
		addrs = append(addrs, m.n.Address())
	}
	rand.Shuffle(len(addrs), func(i, j int) { addrs[i], addrs[j] = addrs[j], addrs[i] })
	addrs = append(addrs, c.cfg.Addrs...)
	err = backend.ErrClosed
	for _, addr := range addrs {
		if c.closed.Load() {
			return false, backend.ErrClosed
		}
		var n *member
		if n, err = c.acquireAddr(addr); err != nil {
			continue
		}
		// The refresh is shared by every caller that needs it: it runs
		// under a context of its own, never a caller's.
		ctx, cancel := context.WithTimeout(c.life, refreshTimeout)
		var shards []topology.Shard
		shards, err = topology.Discover(ctx, n.n.Do, addr, c.cfg.TLS != nil)
		cancel()
		n.Release()
		if err != nil {
			continue
		}
		c.mu.Lock()
		var top *table
		var gone []*member
		if c.nodes == nil {
			err = backend.ErrClosed
		} else if top, err = c.build(shards); err == nil {
			changed = !top.same(c.state.Load())
			gone = c.install(top)
		}
		c.mu.Unlock()
		retireAll(gone)
		if err == nil {
			return changed, nil
		}
	}
	c.mu.Lock()
	gone := c.prune() // the seeds asked in vain
	c.mu.Unlock()
	retireAll(gone)
	return false, err
}

// refreshLoop reloads the map every refreshPeriod, until Close.
func (c *Router) refreshLoop() {
	defer c.wg.Done()
	t := time.NewTicker(refreshPeriod)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
			c.refresh(c.life)
		}
	}
}
