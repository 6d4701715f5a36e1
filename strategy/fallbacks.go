package strategy

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net"
	"time"

	"github.com/redisx-go/kit/internal/wire"
)

// Capability discovery, in one place (database/sql's ctxutil.go is the
// model): Capabilities finds a Backend's optional interfaces once and
// holds the fallback each one's doc states; Find walks the Unwrap chain
// of decorators (http.ResponseController's walk) for the capabilities a
// decorator need not implement itself; Validate asks a strategy value.
// The facade and decorators such as localcache.Near use these rather than
// assert types of their own.

// Find returns the first backend of b's chain — b, then the backend b
// wraps when it is an Unwrapper, and so on — that implements T, as a T,
// and true; the zero T and false when none does. It finds the
// capabilities decorators need not implement themselves: SessionDialer,
// NodeDoer, SelfRetrier and MasterFollower. The others a decorator must
// implement, or hide: a cache in front of a backend that forwarded MGet
// to it unseen would serve stale values.
func Find[T any](b Backend) (T, bool) {
	for x := range chain(b) {
		if t, ok := x.(T); ok {
			return t, true
		}
	}
	var zero T
	return zero, false
}

// chain yields b and the backends it wraps, outermost first.
func chain(b Backend) iter.Seq[Backend] {
	return func(yield func(Backend) bool) {
		for b != nil && yield(b) {
			u, ok := b.(Unwrapper)
			if !ok {
				return
			}
			b = u.Unwrap()
		}
	}
}

// Validate returns what Open would refuse s with, before it dials, when s
// is a Validator; nil otherwise (such a strategy says so when it is
// opened).
func Validate(s Strategy, cfg Config) error {
	if v, ok := s.(Validator); ok {
		return v.Validate(cfg)
	}
	return nil
}

// Capabilities are a Backend's optional interfaces, found once, with the
// fallback each one's doc states when the Backend lacks it. Those a
// decorator must implement itself (Appender, MultiGetter, MultiSetter,
// Doer, TTLGetter, Statser, MultiDoer, Dedicator) are looked for on the
// Backend alone; the others (SessionDialer, NodeDoer, SelfRetrier) along
// its Unwrap chain (Find). The zero value has no Backend; use
// CapabilitiesOf. A Capabilities is safe for concurrent use.
type Capabilities struct {
	b       Backend
	app     Appender
	mget    MultiGetter
	mset    MultiSetter
	do      Doer
	ttl     TTLGetter
	stats   Statser
	multi   MultiDoer
	ded     Dedicator
	session SessionDialer
	nodes   NodeDoer
	retries bool
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
	c.multi, _ = b.(MultiDoer)
	c.ded, _ = b.(Dedicator)
	c.session, _ = Find[SessionDialer](b)
	c.nodes, _ = Find[NodeDoer](b)
	for x := range chain(b) {
		if r, ok := x.(SelfRetrier); ok && r.RetriesCalls() {
			c.retries = true
			break
		}
	}
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

// DoMulti is the Backend's DoMulti (MultiDoer), or, for a batch that no
// command of refuses before anything is sent, DoEach.
func (c *Capabilities) DoMulti(ctx context.Context, cmds ...[]any) []Result {
	if c.multi != nil {
		return c.multi.DoMulti(ctx, cmds...)
	}
	// The fallback refuses a batch as the strategies do, before anything
	// is sent, rather than run its first commands.
	if _, _, res, ok := wire.CheckMulti(cmds); !ok {
		return res
	}
	return DoEach(ctx, c.b, cmds...)
}

// HasDedicated reports whether the Backend is a Dedicator: whether it
// lends connections for transactions.
func (c *Capabilities) HasDedicated() bool { return c.ded != nil }

// Dedicated is the Backend's Dedicated (Dedicator), or an error wrapping
// ErrUnsupported.
func (c *Capabilities) Dedicated(ctx context.Context, keys []string) (Dedicated, error) {
	if c.ded == nil {
		return nil, fmt.Errorf("%w: dedicated connections on a %T backend", ErrUnsupported, c.b)
	}
	return c.ded.Dedicated(ctx, keys)
}

// HasSessions reports whether a SessionDialer is found along the
// Backend's Unwrap chain: whether Pub/Sub is possible.
func (c *Capabilities) HasSessions() bool { return c.session != nil }

// DialSession is the DialSession of the SessionDialer along the Backend's
// Unwrap chain, or an error wrapping ErrUnsupported.
func (c *Capabilities) DialSession(ctx context.Context, slot int, hello func(net.Conn) error) (net.Conn, error) {
	if c.session == nil {
		return nil, fmt.Errorf("%w: sessions on a %T backend", ErrUnsupported, c.b)
	}
	return c.session.DialSession(ctx, slot, hello)
}

// Masters is the Masters of the NodeDoer along the Backend's Unwrap
// chain — the masters of a cluster's slot map — or none: one node, which
// Do reaches.
func (c *Capabilities) Masters() []string {
	if c.nodes == nil {
		return nil
	}
	return c.nodes.Masters()
}

// RetriesCalls reports whether a SelfRetrier along the Backend's Unwrap
// chain retries calls by its own policy; false without one.
func (c *Capabilities) RetriesCalls() bool { return c.retries }
