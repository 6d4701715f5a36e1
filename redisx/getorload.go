package redisx

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Loader loads the value of a key from the source of truth. The value it
// returns is stored, then handed to a caller of GetOrLoad, which may
// modify it: the loader must not keep it.
type Loader func(ctx context.Context) ([]byte, error)

// GetOrLoad returns the cached value of key; on a miss it calls load,
// stores the result with ttl and returns it. Concurrent misses of the same
// key in this process share one call of load (singleflight), and each
// caller gets a slice of its own. A caller whose read missed while a load
// of the key ran, but who comes to share it only after it ended (a
// descheduled goroutine), reads the key again instead of loading it a
// second time.
//
// The load is shared work, so it does not run under any one caller's
// context: it gets the context values (trace, request IDs…) of the caller
// that started it and a lifetime of its own. Each caller returns as soon
// as its own context ends, with that context's error, without failing
// the others; the load is cancelled once every caller waiting for it has
// returned so, or when Options.LoadTimeout passes, or by Close. A miss
// after a load was cancelled for want of callers starts a new one.
//
// A failing load is returned wrapped in ErrLoad to every caller that
// shared it, and nothing is stored. A failure to store the loaded value
// does not fail the call (it is counted in Stats); a failure to read the
// cache does, so that an outage of Redis does not become a stampede on
// the source. Options.TTLJitter and Options.StaleWhileRevalidate shape
// the stored ttl.
func (c *Client) GetOrLoad(ctx context.Context, key string, ttl time.Duration, load Loader) ([]byte, error) {
	if !c.tel.on(ctx) {
		return c.getOrLoad(ctx, key, ttl, load)
	}
	ctx, m := c.tel.begin(ctx, c.tel.op(opGetOrLoad), 0)
	v, err := c.getOrLoad(ctx, key, ttl, load)
	c.tel.end(ctx, m, err)
	return v, err
}

func (c *Client) getOrLoad(ctx context.Context, key string, ttl time.Duration, load Loader) ([]byte, error) {
	if load == nil {
		return nil, fmt.Errorf("%w: nil loader", ErrInvalidArgument)
	}
	if err := checkKey(key); err != nil {
		return nil, err
	}
	if ttl < 0 {
		return nil, fmt.Errorf("%w: negative ttl %v", ErrInvalidArgument, ttl)
	}
	if c.closed.Load() {
		return nil, ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m := c.loads.mark(key)
	v, err := c.loadRead(ctx, key, ttl, load)
	if !errors.Is(err, ErrNotFound) {
		return v, err
	}
	run := func(ctx context.Context) ([]byte, error) {
		return c.loadAndStore(ctx, key, ttl, load)
	}
	f, leader, err := c.loads.join(ctx, key, m, run)
	if err != nil {
		return nil, err
	}
	if f == nil {
		// A load of key ended since the read, which may have come before
		// its store: read again rather than load the key twice.
		v, err = c.loadRead(ctx, key, ttl, load)
		if err == nil {
			c.nShared.Add(1)
		}
		if !errors.Is(err, ErrNotFound) {
			return v, err
		}
		if f, leader, err = c.loads.join(ctx, key, loadMark{}, run); err != nil {
			return nil, err
		}
	}
	v, answered, err := c.loads.wait(ctx, key, f)
	if answered && !leader {
		c.nShared.Add(1)
	}
	return v, err
}

// loadRead is GetOrLoad's read of key: with stale-while-revalidate, a
// value past its ttl but inside the grace period is served and a refresh
// started.
func (c *Client) loadRead(ctx context.Context, key string, ttl time.Duration, load Loader) ([]byte, error) {
	if c.aside.swr <= 0 || ttl <= 0 || !c.aside.ttls {
		return c.cacheRead(ctx, key)
	}
	v, left, err := c.getWithTTL(ctx, key)
	if err == nil && left >= 0 && left <= c.aside.swr {
		// Past its ttl, inside the grace period: serve it, refresh it.
		c.aside.stale.Add(1)
		c.revalidate(ctx, key, ttl, load)
	}
	return v, err
}

// getWithTTL is the read of GetOrLoad with stale-while-revalidate,
// retried as Get is.
func (c *Client) getWithTTL(ctx context.Context, key string) ([]byte, time.Duration, error) {
	type valueTTL struct {
		v   []byte
		ttl time.Duration
	}
	v, ttl, err := c.caps.GetWithTTL(ctx, key)
	if err != nil && readAgain(err) {
		var r valueTTL
		r, err = retry(ctx, c, valueTTL{v, ttl}, err, readAgain, func() (valueTTL, error) {
			v, ttl, err := c.caps.GetWithTTL(ctx, key)
			return valueTTL{v, ttl}, err
		})
		v, ttl = r.v, r.ttl
	}
	return v, ttl, err
}

// loadAndStore calls load and stores its value for the jittered ttl (plus
// the stale-while-revalidate grace period). ctx is the load's own.
func (c *Client) loadAndStore(ctx context.Context, key string, ttl time.Duration, load Loader) ([]byte, error) {
	c.nLoads.Add(1)
	v, err := load(ctx)
	if err != nil {
		c.nLoadErrors.Add(1)
		return nil, wrapError(ErrLoad, fmt.Sprintf("key %q", key), err)
	}
	if v == nil {
		v = []byte{}
	}
	if err := checkValue(ttl, v); err != nil {
		return nil, wrapError(ErrLoad, fmt.Sprintf("key %q", key), err)
	}
	if err := c.cacheWrite(ctx, key, v, c.aside.storeTTL(ttl)); err != nil {
		c.nStoreErrs.Add(1)
	}
	return v, nil
}

// cacheRead and cacheWrite are GetOrLoad's own GET and SET: traced as
// child spans when tracing is on, but part of GetOrLoad's measurement, not
// operations of their own.
func (c *Client) cacheRead(ctx context.Context, key string) ([]byte, error) {
	if c.tel.tracer == nil {
		return c.get(ctx, key)
	}
	ctx, span := c.tel.startSpan(ctx, c.tel.op(opGet), 0)
	v, err := c.get(ctx, key)
	endSpan(span, err)
	return v, err
}

func (c *Client) cacheWrite(ctx context.Context, key string, v []byte, ttl time.Duration) error {
	if c.tel.tracer == nil {
		return c.set(ctx, key, v, ttl)
	}
	ctx, span := c.tel.startSpan(ctx, c.tel.op(opSet), 0)
	err := c.set(ctx, key, v, ttl)
	endSpan(span, err)
	return err
}
