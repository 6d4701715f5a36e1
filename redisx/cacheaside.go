package redisx

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redisx-go/kit/strategy"
)

// cacheAside holds GetOrLoad's options and its background refreshes.
type cacheAside struct {
	jitter float64
	swr    time.Duration
	ttlGet strategy.TTLGetter // nil: stale-while-revalidate is off

	refreshing sync.Map   // keys with a background refresh running
	mu         sync.Mutex // orders starting a refresh with Close
	bg         sync.WaitGroup
	bgCtx      context.Context // cancelled by Close
	bgCancel   context.CancelFunc
	stale      atomic.Int64
}

// backgroundLoadTimeout bounds a stale-while-revalidate refresh.
const backgroundLoadTimeout = 30 * time.Second

// storeTTL is the ttl a loaded value is stored with: ttl shortened by the
// jitter, plus the stale-while-revalidate grace period.
func (a *cacheAside) storeTTL(ttl time.Duration) time.Duration {
	if ttl <= 0 {
		return ttl
	}
	if a.jitter > 0 {
		ttl -= time.Duration(rand.Float64() * a.jitter * float64(ttl))
	}
	if a.swr > 0 && a.ttlGet != nil {
		ttl += a.swr
	}
	return max(ttl, time.Millisecond)
}

// revalidate starts one background load of key unless one is running. It
// shares the singleflight of foreground loads, so a miss arriving meanwhile
// waits for this load rather than starting another. Close cancels it.
func (c *Client) revalidate(key string, ttl time.Duration, load Loader) {
	c.aside.mu.Lock()
	defer c.aside.mu.Unlock()
	if c.closed.Load() {
		return
	}
	if _, busy := c.aside.refreshing.LoadOrStore(key, struct{}{}); busy {
		return
	}
	c.aside.bg.Add(1)
	go func() {
		defer c.aside.bg.Done()
		defer c.aside.refreshing.Delete(key)
		ctx, cancel := context.WithTimeout(c.aside.bgCtx, backgroundLoadTimeout)
		defer cancel()
		c.loads.Do(key, func() (any, error) { return c.loadAndStore(ctx, key, ttl, load) })
	}()
}
