package redisx

import (
	"context"
	"math/rand/v2"
	"sync/atomic"
	"time"
)

// cacheAside holds GetOrLoad's options and counters.
type cacheAside struct {
	jitter float64
	swr    time.Duration
	ttls   bool // the backend reads TTLs (strategy.TTLGetter); without, stale-while-revalidate is off
	stale  atomic.Int64
}

// backgroundLoadTimeout bounds a stale-while-revalidate refresh when
// Options.LoadTimeout does not: no caller waits for it, so nothing else
// would.
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
	if a.swr > 0 && a.ttls {
		ttl += a.swr
	}
	return max(ttl, time.Millisecond)
}

// revalidate starts one background load of key unless a load of key is
// running. It is an ordinary load of the loadGroup, with the values of
// ctx (the stale read's), so a miss arriving meanwhile waits for it rather
// than starting another; being pinned, it is not cancelled for want of
// waiters, only by its timeout or Close.
func (c *Client) revalidate(ctx context.Context, key string, ttl time.Duration, load Loader) {
	c.loads.refresh(ctx, key, backgroundLoadTimeout, func(ctx context.Context) ([]byte, error) {
		return c.loadAndStore(ctx, key, ttl, load)
	})
}
