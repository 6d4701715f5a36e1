package localcache

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/redisx-go/kit/internal/command"
	"github.com/redisx-go/kit/strategy"
)

// Near is a strategy that keeps recently read values in process memory, in
// a dgraph-io/ristretto cache, in front of any other strategy, and keeps
// them coherent with the server through Redis's invalidation messages —
// or, with TrackNone, for at most TTL (see the package documentation). A
// hit costs tens of nanoseconds and no round trip.
//
// What a call returns is the caller's to modify and keep: a local hit is
// a copy of the cached value. AppendGet (strategy.Appender) appends a hit
// to the caller's buffer and allocates nothing when it has room.
//
// The zero value caches up to 64 MiB for at most a minute in front of
// strategy.Multiplexed{}.
type Near struct {
	// Inner is the strategy behind the cache: reads that miss, and every
	// write, go through it. Zero: strategy.Multiplexed{}. With
	// goredis.Strategy, Options.Addrs must still name the server(s): the
	// invalidation connections are Near's own.
	Inner strategy.Strategy
	// MaxBytes bounds the cache: keys, values and about 200 bytes of
	// bookkeeping per entry. Zero: 64 MiB.
	MaxBytes int64
	// TTL is the longest an entry is served locally, a bound on staleness
	// should invalidation fail in a way nobody noticed — and, with
	// TrackNone, the staleness other clients' writes may show. Zero: 1
	// minute.
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
	// Prefixes, when set, limits caching to keys with one of these
	// prefixes; reads of other keys go to the server every time. With
	// TrackBroadcast it limits the invalidation messages too. Zero: every
	// key.
	Prefixes []string
	// PingInterval is how often each invalidation connection is pinged; a
	// connection silent for three intervals is considered lost and the
	// cache is flushed. Zero: 1 s.
	PingInterval time.Duration
	// Tracking says how other clients' writes reach the cache (see the
	// package documentation): TrackKeys, the zero value, has the server
	// remember the keys this process read and tell it of their writes;
	// TrackBroadcast has it send every write under Prefixes to every
	// process; TrackNone asks nothing of the server, and an entry may then
	// be stale for up to TTL. With TrackKeys or TrackBroadcast, a server
	// that refuses CLIENT TRACKING (an ACL user without client|tracking, a
	// managed service) makes Open fail with an error that names the mode
	// to set instead; Near never falls back by itself.
	Tracking Tracking
}

// Open implements strategy.Strategy. It returns once the inner strategy is
// open and every invalidation connection is subscribed (with TrackKeys,
// once every data connection dialled so far is tracked).
func (n Near) Open(ctx context.Context, cfg strategy.Config) (strategy.Backend, error) {
	if err := n.Validate(cfg); err != nil {
		return nil, err
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
	prefixes := append([]string(nil), n.Prefixes...)
	b := &near{prefixes: prefixes}
	var err error
	if n.Tracking == TrackNone {
		b.inner, err = n.Inner.Open(ctx, cfg)
	} else {
		b.inner, b.inv, err = n.openTracked(ctx, cfg, prefixes)
	}
	if err != nil {
		return nil, err
	}
	// The store is made last, once nothing else can fail: closing one
	// clears every counter of its admission policy, tens of milliseconds
	// for the default MaxBytes, which an Open that failed at its
	// context's deadline must neither wait for nor leave running. The
	// invalidations that came before it named nothing cached.
	s, err := newStore(n.MaxBytes, n.TTL, min(n.NegativeTTL, n.TTL), n.Jitter)
	if err != nil {
		if b.inv != nil {
			b.inv.close()
		}
		b.inner.Close()
		return nil, fmt.Errorf("%w: %w", strategy.ErrInvalidArgument, err)
	}
	b.s = s
	b.caps = strategy.CapabilitiesOf(b.inner)
	s.ttlKnown = b.caps.HasTTL()
	if b.inv != nil {
		b.inv.attach(s)
	} else {
		s.up() // no invalidation to wait for
	}
	return b, nil
}

// openTracked opens the inner strategy and the invalidation connections:
// with TrackKeys, the inner strategy's data connections are set up as
// they are dialled (invalidator.track), and start the listeners of their
// nodes; with TrackBroadcast, the listeners are independent of them.
func (n Near) openTracked(ctx context.Context, cfg strategy.Config, prefixes []string) (strategy.Backend, *invalidator, error) {
	inv := newInvalidator(cfg, n.Tracking, prefixes, n.PingInterval)
	icfg := cfg
	if n.Tracking == TrackKeys {
		icfg.OnConnect = inv.track
	}
	inner, err := n.Inner.Open(ctx, icfg)
	if err != nil {
		inv.close()
		return nil, nil, err
	}
	fail := func(err error) (strategy.Backend, *invalidator, error) {
		inv.close()
		inner.Close()
		return nil, nil, err
	}
	if n.Tracking == TrackKeys && inv.hooked.Load() == 0 {
		return fail(fmt.Errorf("%w: Near with TrackKeys over %T, whose connections it cannot track (it ignores Config.OnConnect): use TrackBroadcast or TrackNone", strategy.ErrInvalidArgument, n.Inner))
	}
	follow, err := followerOf(inner, cfg)
	if err != nil {
		return fail(err)
	}
	if err := inv.start(ctx, follow); err != nil {
		return fail(err)
	}
	return inner, inv, nil
}

// Validate implements strategy.Validator: MaxBytes and the durations not
// negative, Jitter in [0, 1), Tracking one of the three modes, no Near
// inside, cfg with ReadPrimary, and Inner (Multiplexed when nil) valid
// for cfg when it can tell.
func (n Near) Validate(cfg strategy.Config) error {
	switch {
	case n.MaxBytes < 0:
		return fmt.Errorf("%w: Near.MaxBytes %d is negative", strategy.ErrInvalidArgument, n.MaxBytes)
	case n.TTL < 0 || n.NegativeTTL < 0 || n.PingInterval < 0:
		return fmt.Errorf("%w: Near durations must not be negative", strategy.ErrInvalidArgument)
	case n.Jitter < 0 || n.Jitter >= 1:
		return fmt.Errorf("%w: Near.Jitter %v outside [0, 1)", strategy.ErrInvalidArgument, n.Jitter)
	case !n.Tracking.valid():
		return fmt.Errorf("%w: Near.Tracking %v is not TrackKeys, TrackBroadcast nor TrackNone", strategy.ErrInvalidArgument, n.Tracking)
	}
	switch n.Inner.(type) {
	case Near, *Near:
		return fmt.Errorf("%w: Near inside Near", strategy.ErrInvalidArgument)
	}
	if cfg.ReadFrom != strategy.ReadPrimary {
		// The invalidations come from the master; a replica's reply may
		// be older than one already invalidated, and would be cached.
		return fmt.Errorf("%w: Near with ReadFrom other than ReadPrimary: the local cache could not stay coherent", strategy.ErrInvalidArgument)
	}
	var inner strategy.Strategy = strategy.Multiplexed{}
	if n.Inner != nil {
		inner = n.Inner
	}
	return strategy.Validate(inner, cfg)
}

var _ strategy.Validator = Near{}

type near struct {
	inner    strategy.Backend
	caps     strategy.Capabilities // inner's optional interfaces, and their fallbacks
	closed   atomic.Bool
	s        *store
	inv      *invalidator // nil with TrackNone
	prefixes []string
}

// cacheable reports whether key may be cached: whether it is under
// Prefixes.
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

// Get implements strategy.Backend. A local hit returns a copy of the
// cached value.
func (n *near) Get(ctx context.Context, key string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if e, ok := n.s.get(key); ok {
		if e.neg {
			return nil, strategy.ErrNotFound
		}
		return bytes.Clone(e.val), nil
	}
	v, _, err := n.miss(ctx, nil, key)
	return v, err
}

// AppendGet implements strategy.Appender: a local hit is appended to dst
// without allocating when dst has room. A miss is read through the inner
// strategy — its Appender when it has one and the TTL is not needed — and
// appended.
func (n *near) AppendGet(ctx context.Context, dst []byte, key string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return dst, err
	}
	if e, ok := n.s.get(key); ok {
		if e.neg {
			return dst, strategy.ErrNotFound
		}
		return append(dst, e.val...), nil
	}
	out, _, err := n.miss(ctx, dst, key)
	if err != nil {
		return dst, err
	}
	return out, nil
}

// GetWithTTL implements strategy.TTLGetter: a local hit reports the time
// its key has left on the server, as read with the value.
func (n *near) GetWithTTL(ctx context.Context, key string) ([]byte, time.Duration, error) {
	return n.get(ctx, key)
}

// MGetWithTTL implements strategy.TTLGetter, one key at a time through
// the local cache.
func (n *near) MGetWithTTL(ctx context.Context, keys []string) ([][]byte, []time.Duration, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
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
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	if e, ok := n.s.get(key); ok {
		if e.neg {
			return nil, 0, strategy.ErrNotFound
		}
		return bytes.Clone(e.val), e.keyTTL(), nil
	}
	return n.miss(ctx, nil, key)
}

// miss reads key through the inner strategy, appends its value to dst and
// stores it if it may — or, while another read of the key is in flight
// whose reply may still be stored, waits for that reply (see flight). The
// TTL is the key's on the server (UnknownTTL when not read).
func (n *near) miss(ctx context.Context, dst []byte, key string) ([]byte, time.Duration, error) {
	cache := n.cacheable(key)
	var t ticket
	if cache {
		var f *flight
		if t, f = n.s.reserveOrJoin(key); f != nil {
			// Another read of the key is in flight: its reply is this one's.
			out, ttl, ok, err := f.wait(ctx, dst)
			if ok {
				return out, ttl, err
			}
			t = n.s.reserve(key) // it failed: read alone
		}
	}
	out, ttl, err := n.read(ctx, dst, key, cache)
	if cache {
		switch {
		case err == nil:
			n.s.settle(t, out[len(dst):], true, ttl)
		case errors.Is(err, strategy.ErrNotFound):
			n.s.settle(t, nil, false, strategy.NoTTL)
		default:
			n.s.release(t)
		}
	}
	if err != nil {
		return dst, 0, err
	}
	return out, ttl, nil
}

// read reads key through the inner strategy and appends its value to dst:
// with its TTL when the inner strategy tells it and the key is to be
// cached (no entry may outlive its key) or the caller asked for it (no
// dst); else through the inner strategy's Appender when it has one.
func (n *near) read(ctx context.Context, dst []byte, key string, cache bool) ([]byte, time.Duration, error) {
	switch {
	case n.caps.HasTTL() && (cache || dst == nil):
		v, ttl, err := n.caps.GetWithTTL(ctx, key)
		return appendValue(dst, v), ttl, err
	case dst != nil:
		out, err := n.caps.AppendGet(ctx, dst, key)
		return out, strategy.UnknownTTL, err
	}
	v, err := n.inner.Get(ctx, key)
	return appendValue(dst, v), strategy.UnknownTTL, err
}

// appendValue appends v to dst; with no dst, v (already the caller's) is
// the result, so that an empty value stays a non-nil empty slice.
func appendValue(dst, v []byte) []byte {
	if dst == nil {
		return v
	}
	return append(dst, v...)
}

// MGet implements strategy.MultiGetter: local hits are served locally and
// only the misses are fetched, in one call of the inner strategy's MGet
// (through SlotGrouped when that is the inner strategy).
func (n *near) MGet(ctx context.Context, keys []string) ([][]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	vs := make([][]byte, len(keys))
	var missKeys []string
	var missPos []int
	hitBytes := 0
	for i, k := range keys {
		if e, ok := n.s.get(k); ok {
			vs[i] = e.val // the cache's own slice, until copyHits
			hitBytes += len(e.val)
			continue
		}
		missKeys = append(missKeys, k)
		missPos = append(missPos, i)
	}
	copyHits(vs, hitBytes)
	if len(missKeys) == 0 {
		return vs, nil
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

// copyHits replaces the cached values in vs (n bytes in all) by copies in
// one allocation, each capped at its length so that appending to one
// never writes into the next.
func copyHits(vs [][]byte, n int) {
	buf := make([]byte, 0, n)
	for i, v := range vs {
		if v != nil {
			off := len(buf)
			buf = append(buf, v...)
			vs[i] = buf[off:len(buf):len(buf)]
		}
	}
}

// fetch reads keys through the inner strategy, with their TTLs when it
// can tell them (UnknownTTL otherwise).
func (n *near) fetch(ctx context.Context, keys []string) ([][]byte, []time.Duration, error) {
	return n.caps.MGetWithTTL(ctx, keys)
}

// Set implements strategy.Backend. Once the write returns (acknowledged
// or failed) the local copy is dropped and every read of the key still in
// flight voided, before Set returns: this process reads its own write at
// once. While the write is in flight the old copy is still served, as a
// read concurrent with the write may be; dropping it before the write is
// sent would only turn those reads into misses (a hot key written often
// would hardly ever be served locally) and order nothing more.
func (n *near) Set(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	err := n.inner.Set(ctx, key, value, ttl)
	n.s.invalidate(key)
	return err
}

// Del implements strategy.Backend, invalidating as Set does.
func (n *near) Del(ctx context.Context, keys ...string) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	c, err := n.inner.Del(ctx, keys...)
	n.s.invalidate(keys...)
	return c, err
}

// MSet implements strategy.MultiSetter, invalidating as Set does.
func (n *near) MSet(ctx context.Context, kv map[string][]byte, ttl time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	keys := make([]string, 0, len(kv))
	for k := range kv {
		keys = append(keys, k)
	}
	err := n.caps.MSet(ctx, kv, ttl)
	n.s.invalidate(keys...)
	return err
}

// Do implements strategy.Doer. A command that may write a key (told by
// the server's own key specifications, internal/command) invalidates its
// keys as Set does, once it returns; a script (EVAL, EVALSHA, FCALL)
// invalidates the keys it declares, as Redis requires scripts to declare
// the keys they access (a key written undeclared is left to the server's
// invalidation, which arrives asynchronously). A write whose keys cannot
// be told flushes the local cache before it is sent and again before Do
// returns: FLUSHALL, FLUSHDB and SWAPDB, a command the table does not know,
// SORT … STORE, a malformed key count, and a write whose key list comes
// out empty (EVAL or FCALL with numkeys 0, FUNCTION LOAD): correct first.
// Read-only commands, EVAL_RO, EVALSHA_RO and FCALL_RO included, touch
// nothing.
func (n *near) Do(ctx context.Context, args ...any) (any, error) {
	if !n.caps.HasDo() {
		return nil, fmt.Errorf("%w: Do on %T", strategy.ErrUnsupported, n.inner)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	keys, flush := written(args)
	switch {
	case flush:
		n.s.void() // no hit of what the command is about to replace
		v, err := n.caps.Do(ctx, args...)
		n.s.flush() // nor of a read that overtook it
		return v, err
	case len(keys) > 0:
		v, err := n.caps.Do(ctx, args...)
		n.s.invalidate(keys...)
		return v, err
	}
	return n.caps.Do(ctx, args...)
}

// written tells what the command in args may write: keys, or any key
// (flush) when they cannot be told or the command replaces a database. A
// write that names no key (EVAL with numkeys 0) may still write any key.
func written(args []any) (keys []string, flush bool) {
	keys, spec, ok := command.Keys(args)
	switch {
	case spec == nil:
		return nil, true // unknown: it may write anything
	case !spec.Writes():
		return nil, false
	case spec.Name == "flushall" || spec.Name == "flushdb" || spec.Name == "swapdb":
		return nil, true
	case !ok || len(keys) == 0:
		return nil, true
	}
	return keys, false
}

// Stats implements strategy.Statser: the inner strategy's statistics with
// the local cache's. LocalFlushes counts FLUSHALL, FLUSHDB and SWAPDB
// (sent through Do, and each null invalidation message), writes whose
// keys could not be told, each loss and recovery of the invalidation
// connections and, with TrackKeys, each loss of a data connection (see
// the package documentation); not the subscription at Open nor Close.
// Stats works after Close.
func (n *near) Stats() strategy.Stats {
	s := n.caps.Stats()
	s.Strategy = "near/" + s.Strategy
	s.LocalHits = n.s.hits()
	s.LocalMisses = n.s.misses()
	s.Invalidations = n.s.invalidations.Load()
	s.InvalidationsReceived = n.s.received.Load()
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
	if n.closed.Swap(true) {
		return nil // closed already: Close is idempotent, as the contract has it
	}
	if n.inv != nil {
		n.inv.close()
	} else {
		n.s.stopServing()
	}
	err := n.inner.Close()
	n.s.close()
	return err
}
