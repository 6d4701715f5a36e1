package localcache

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redisx-go/kit/strategy"
)

// Near is a strategy that keeps recently read values in process memory, in
// a dgraph-io/ristretto cache, in front of any other strategy, and keeps
// them coherent with the server through Redis's invalidation messages (see
// the package documentation). A hit costs tens of nanoseconds and no round
// trip.
//
// Values returned from the local cache are shared with it: callers must
// not modify them.
//
// The zero value caches up to 64 MiB for at most a minute in front of
// strategy.Multiplexed{}.
type Near struct {
	// Inner is the strategy behind the cache: reads that miss, and every
	// write, go through it. Zero: strategy.Multiplexed{}. With
	// strategy.GoRedis, Options.Addrs must still name the server(s): the
	// invalidation connections are Near's own.
	Inner strategy.Strategy
	// MaxBytes bounds the cache: keys, values and about 100 bytes of
	// bookkeeping per entry. Zero: 64 MiB.
	MaxBytes int64
	// TTL is the longest an entry is served locally, a bound on staleness
	// should invalidation fail in a way nobody noticed. Zero: 1 minute.
	TTL time.Duration
	// NegativeTTL, when positive, remembers "not found" for that long (at
	// most TTL), so that repeated reads of a missing key stay local too. A
	// write of the key invalidates it like any entry. Zero: misses are not
	// remembered.
	NegativeTTL time.Duration
	// Jitter shortens each entry's TTL by a random fraction up to Jitter,
	// so that entries read together do not all expire together. Between 0
	// and 1. Zero: none.
	Jitter float64
	// Prefixes, when set, limits invalidation messages (and so caching) to
	// keys with one of these prefixes; reads of other keys are not cached.
	// Zero: every key.
	Prefixes []string
	// PingInterval is how often each invalidation connection is pinged; a
	// connection silent for three intervals is considered lost and the
	// cache is flushed. Zero: 1 s.
	PingInterval time.Duration
}

// Open implements strategy.Strategy. It returns once the inner strategy is
// open and every invalidation connection is subscribed.
func (n Near) Open(ctx context.Context, cfg strategy.Config) (strategy.Backend, error) {
	switch {
	case n.MaxBytes < 0:
		return nil, fmt.Errorf("%w: Near.MaxBytes %d is negative", strategy.ErrInvalidArgument, n.MaxBytes)
	case n.TTL < 0 || n.NegativeTTL < 0 || n.PingInterval < 0:
		return nil, fmt.Errorf("%w: Near durations must not be negative", strategy.ErrInvalidArgument)
	case n.Jitter < 0 || n.Jitter >= 1:
		return nil, fmt.Errorf("%w: Near.Jitter %v outside [0, 1)", strategy.ErrInvalidArgument, n.Jitter)
	}
	switch n.Inner.(type) {
	case Near, *Near:
		return nil, fmt.Errorf("%w: Near inside Near", strategy.ErrInvalidArgument)
	}
	if n.Inner == nil {
		n.Inner = strategy.Multiplexed{}
	}
	if n.MaxBytes == 0 {
		n.MaxBytes = 64 << 20
	}
	if n.TTL == 0 {
		n.TTL = time.Minute
	}
	if n.PingInterval == 0 {
		n.PingInterval = time.Second
	}
	s, err := newStore(n.MaxBytes, n.TTL, min(n.NegativeTTL, n.TTL), n.Jitter)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", strategy.ErrInvalidArgument, err)
	}
	inner, err := n.Inner.Open(ctx, cfg)
	if err != nil {
		s.close()
		return nil, err
	}
	inv, err := startInvalidator(ctx, cfg, s, append([]string(nil), n.Prefixes...), n.PingInterval)
	if err != nil {
		inner.Close()
		s.close()
		return nil, err
	}
	b := &near{inner: inner, s: s, inv: inv, prefixes: append([]string(nil), n.Prefixes...)}
	b.mget, _ = inner.(strategy.MultiGetter)
	b.mset, _ = inner.(strategy.MultiSetter)
	b.do, _ = inner.(strategy.Doer)
	b.ttlGet, _ = inner.(strategy.TTLGetter)
	s.ttlKnown = b.ttlGet != nil
	return b, nil
}

type near struct {
	inner    strategy.Backend
	mget     strategy.MultiGetter
	mset     strategy.MultiSetter
	do       strategy.Doer
	ttlGet   strategy.TTLGetter
	s        *store
	inv      *invalidator
	prefixes []string
}

// cacheable reports whether key's invalidations reach this process.
func (n *near) cacheable(key string) bool {
	if len(n.prefixes) == 0 {
		return true
	}
	for _, p := range n.prefixes {
		if len(key) >= len(p) && key[:len(p)] == p {
			return true
		}
	}
	return false
}

// Get implements strategy.Backend.
func (n *near) Get(ctx context.Context, key string) ([]byte, error) {
	if e, ok := n.s.get(key); ok {
		if e.neg {
			return nil, strategy.ErrNotFound
		}
		return e.val, nil
	}
	v, _, err := n.miss(ctx, key)
	return v, err
}

// GetWithTTL implements strategy.TTLGetter: a local hit reports the time
// its key has left on the server, as read with the value.
func (n *near) GetWithTTL(ctx context.Context, key string) ([]byte, time.Duration, error) {
	return n.get(ctx, key)
}

// MGetWithTTL implements strategy.TTLGetter, one key at a time through
// the local cache.
func (n *near) MGetWithTTL(ctx context.Context, keys []string) ([][]byte, []time.Duration, error) {
	vs := make([][]byte, len(keys))
	ttls := make([]time.Duration, len(keys))
	for i, k := range keys {
		v, ttl, err := n.get(ctx, k)
		switch {
		case errors.Is(err, strategy.ErrNotFound):
		case err != nil:
			return nil, nil, err
		default:
			vs[i], ttls[i] = v, ttl
		}
	}
	return vs, ttls, nil
}

func (n *near) get(ctx context.Context, key string) ([]byte, time.Duration, error) {
	if e, ok := n.s.get(key); ok {
		if e.neg {
			return nil, 0, strategy.ErrNotFound
		}
		return e.val, e.keyTTL(), nil
	}
	return n.miss(ctx, key)
}

// miss reads key through the inner strategy and stores the reply if it may.
func (n *near) miss(ctx context.Context, key string) ([]byte, time.Duration, error) {
	if !n.cacheable(key) {
		if n.ttlGet != nil {
			return n.ttlGet.GetWithTTL(ctx, key)
		}
		v, err := n.inner.Get(ctx, key)
		return v, strategy.UnknownTTL, err
	}
	t := n.s.reserve(key)
	var v []byte
	var err error
	ttl := strategy.UnknownTTL
	if n.ttlGet != nil {
		v, ttl, err = n.ttlGet.GetWithTTL(ctx, key)
	} else {
		v, err = n.inner.Get(ctx, key)
	}
	switch {
	case err == nil:
		n.s.settle(t, v, true, ttl)
	case errors.Is(err, strategy.ErrNotFound):
		n.s.settle(t, nil, false, strategy.NoTTL)
	default:
		n.s.release(t)
	}
	return v, ttl, err
}

// MGet implements strategy.MultiGetter: local hits are served locally and
// only the misses are fetched, in one call of the inner strategy's MGet
// (through SlotGrouped when that is the inner strategy).
func (n *near) MGet(ctx context.Context, keys []string) ([][]byte, error) {
	vs := make([][]byte, len(keys))
	var missKeys []string
	var missPos []int
	for i, k := range keys {
		if e, ok := n.s.get(k); ok {
			vs[i] = e.val
			continue
		}
		missKeys = append(missKeys, k)
		missPos = append(missPos, i)
	}
	if len(missKeys) == 0 {
		return vs, ctx.Err()
	}
	tickets := make([]ticket, 0, len(missKeys))
	for _, k := range missKeys {
		if n.cacheable(k) {
			tickets = append(tickets, n.s.reserve(k))
		}
	}
	got, ttls, err := n.fetch(ctx, missKeys)
	ti := 0
	for j, k := range missKeys {
		if !n.cacheable(k) {
			continue
		}
		t := tickets[ti]
		ti++
		if got == nil || (err != nil && got[j] == nil) {
			// No reply, or a partial failure that left this key unknown.
			n.s.release(t)
			continue
		}
		ttl := strategy.NoTTL
		if got[j] != nil {
			ttl = ttls[j]
		}
		n.s.settle(t, got[j], got[j] != nil, ttl)
	}
	if got == nil {
		return nil, err
	}
	for j, p := range missPos {
		vs[p] = got[j]
	}
	return vs, err
}

// fetch reads keys through the inner strategy, with their TTLs when it
// can tell them (UnknownTTL otherwise).
func (n *near) fetch(ctx context.Context, keys []string) ([][]byte, []time.Duration, error) {
	if n.ttlGet != nil {
		return n.ttlGet.MGetWithTTL(ctx, keys)
	}
	ttls := make([]time.Duration, len(keys))
	for i := range ttls {
		ttls[i] = strategy.UnknownTTL
	}
	if n.mget != nil {
		vs, err := n.mget.MGet(ctx, keys)
		return vs, ttls, err
	}
	vs := make([][]byte, len(keys))
	for i, k := range keys {
		v, err := n.inner.Get(ctx, k)
		switch {
		case errors.Is(err, strategy.ErrNotFound):
		case err != nil:
			return nil, nil, err
		default:
			vs[i] = v
		}
	}
	return vs, ttls, nil
}

// Set implements strategy.Backend. The local copy is dropped before the
// write is sent, and again, waiting for ristretto's buffer this time, once
// the write returns (acknowledged or failed), voiding every read of the
// key still in flight: this process reads its own write at once.
func (n *near) Set(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	n.s.drop(key)
	err := n.inner.Set(ctx, key, value, ttl)
	n.s.invalidate(key)
	return err
}

// Del implements strategy.Backend.
func (n *near) Del(ctx context.Context, keys ...string) (int64, error) {
	n.s.drop(keys...)
	c, err := n.inner.Del(ctx, keys...)
	n.invalidateAll(keys)
	return c, err
}

func (n *near) invalidateAll(keys []string) {
	n.s.invalidate(keys...)
}

// MSet implements strategy.MultiSetter.
func (n *near) MSet(ctx context.Context, kv map[string][]byte, ttl time.Duration) error {
	keys := make([]string, 0, len(kv))
	for k := range kv {
		keys = append(keys, k)
	}
	n.s.drop(keys...)
	var err error
	if n.mset != nil {
		err = n.mset.MSet(ctx, kv, ttl)
	} else {
		for k, v := range kv {
			if err = n.inner.Set(ctx, k, v, ttl); err != nil {
				break
			}
		}
	}
	n.invalidateAll(keys)
	return err
}

// Do implements strategy.Doer. The command's first key (its second
// argument) is invalidated locally before it is sent and once it returns,
// as a write would need; writes to other keys are seen once the server's
// invalidation arrives.
func (n *near) Do(ctx context.Context, args ...any) (any, error) {
	if n.do == nil {
		return nil, fmt.Errorf("%w: Do on %T", strategy.ErrUnsupported, n.inner)
	}
	key, hasKey := "", len(args) > 1
	if hasKey {
		switch k := args[1].(type) {
		case string:
			key = k
		case []byte:
			key = string(k)
		default:
			hasKey = false
		}
	}
	if hasKey {
		n.s.drop(key)
	}
	v, err := n.do.Do(ctx, args...)
	if hasKey {
		n.s.invalidate(key)
	}
	return v, err
}

// Stats implements strategy.Statser: the inner strategy's statistics with
// the local cache's.
func (n *near) Stats() strategy.Stats {
	var s strategy.Stats
	if st, ok := n.inner.(strategy.Statser); ok {
		s = st.Stats()
	}
	s.Strategy = "near/" + s.Strategy
	s.LocalHits = n.s.hits.Load()
	s.LocalMisses = n.s.misses.Load()
	s.Invalidations = n.s.invalidations.Load()
	s.LocalFlushes = n.s.flushes.Load()
	s.Evictions = n.s.evictions.Load()
	s.LocalBytes = n.s.bytes.Load()
	return s
}

// Unwrap implements strategy.Unwrapper.
func (n *near) Unwrap() strategy.Backend { return n.inner }

// Close implements strategy.Backend: the invalidation connections, the
// inner strategy and the cache are closed.
func (n *near) Close() error {
	n.inv.close()
	err := n.inner.Close()
	n.s.close()
	return err
}
