package strategy

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Capabilities are a Backend's optional interfaces, found once by type
// assertion, with the fallback each one's doc states when the Backend
// lacks it: the one place where the fallbacks live (database/sql's
// ctxutil.go is the model), for the facade and for decorators such as
// localcache.Near alike. The zero value has no Backend; use
// CapabilitiesOf. A Capabilities is safe for concurrent use.
type Capabilities struct {
	b     Backend
	app   Appender
	mget  MultiGetter
	mset  MultiSetter
	do    Doer
	ttl   TTLGetter
	stats Statser
}

// CapabilitiesOf finds b's optional interfaces.
func CapabilitiesOf(b Backend) Capabilities {
	c := Capabilities{b: b}
	c.app, _ = b.(Appender)
	c.mget, _ = b.(MultiGetter)
	c.mset, _ = b.(MultiSetter)
	c.do, _ = b.(Doer)
	c.ttl, _ = b.(TTLGetter)
	c.stats, _ = b.(Statser)
	return c
}

// AppendGet is the Backend's AppendGet (Appender), or its Get with the
// value appended to dst.
func (c *Capabilities) AppendGet(ctx context.Context, dst []byte, key string) ([]byte, error) {
	if c.app != nil {
		return c.app.AppendGet(ctx, dst, key)
	}
	v, err := c.b.Get(ctx, key)
	if err != nil {
		return dst, err
	}
	return append(dst, v...), nil
}

// MGet is the Backend's MGet (MultiGetter), or one Get per key.
func (c *Capabilities) MGet(ctx context.Context, keys []string) ([][]byte, error) {
	if c.mget != nil {
		return c.mget.MGet(ctx, keys)
	}
	vs := make([][]byte, len(keys))
	for i, k := range keys {
		v, err := c.b.Get(ctx, k)
		switch {
		case errors.Is(err, ErrNotFound):
		case err != nil:
			return nil, err
		default:
			vs[i] = v
		}
	}
	return vs, nil
}

// HasMSet reports whether the Backend is a MultiSetter: without one MSet
// is one Set per pair, which a caller may want to retry pair by pair.
func (c *Capabilities) HasMSet() bool { return c.mset != nil }

// MSet is the Backend's MSet (MultiSetter), or one Set per pair, stopping
// at the first that fails.
func (c *Capabilities) MSet(ctx context.Context, kv map[string][]byte, ttl time.Duration) error {
	if c.mset != nil {
		return c.mset.MSet(ctx, kv, ttl)
	}
	for k, v := range kv {
		if err := c.b.Set(ctx, k, v, ttl); err != nil {
			return err
		}
	}
	return nil
}

// HasDo reports whether the Backend is a Doer.
func (c *Capabilities) HasDo() bool { return c.do != nil }

// Do is the Backend's Do (Doer), or an error wrapping ErrUnsupported.
func (c *Capabilities) Do(ctx context.Context, args ...any) (any, error) {
	if c.do == nil {
		return nil, fmt.Errorf("%w: Do on a %T backend", ErrUnsupported, c.b)
	}
	return c.do.Do(ctx, args...)
}

// HasTTL reports whether the Backend is a TTLGetter: reads that tell
// each key's TTL.
func (c *Capabilities) HasTTL() bool { return c.ttl != nil }

// GetWithTTL is the Backend's GetWithTTL (TTLGetter), or its Get with
// UnknownTTL.
func (c *Capabilities) GetWithTTL(ctx context.Context, key string) ([]byte, time.Duration, error) {
	if c.ttl != nil {
		return c.ttl.GetWithTTL(ctx, key)
	}
	v, err := c.b.Get(ctx, key)
	return v, UnknownTTL, err
}

// MGetWithTTL is the Backend's MGetWithTTL (TTLGetter), or MGet with
// UnknownTTL for every key.
func (c *Capabilities) MGetWithTTL(ctx context.Context, keys []string) ([][]byte, []time.Duration, error) {
	if c.ttl != nil {
		return c.ttl.MGetWithTTL(ctx, keys)
	}
	vs, err := c.MGet(ctx, keys)
	if err != nil {
		return nil, nil, err
	}
	ttls := make([]time.Duration, len(keys))
	for i := range ttls {
		ttls[i] = UnknownTTL
	}
	return vs, ttls, nil
}

// Stats is the Backend's Stats (Statser), or zero Stats.
func (c *Capabilities) Stats() Stats {
	if c.stats != nil {
		return c.stats.Stats()
	}
	return Stats{}
}
