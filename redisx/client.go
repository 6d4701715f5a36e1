package redisx

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/redisx-go/kit/strategy"
	"golang.org/x/sync/singleflight"
)

// Client is the cache API over one strategy. It is safe for concurrent
// use by any number of goroutines; create one per Redis deployment and
// share it. The creator must Close it, which releases every connection and
// goroutine the strategy holds.
type Client struct {
	b    strategy.Backend
	mget strategy.MultiGetter // nil: Get per key
	mset strategy.MultiSetter // nil: Set per pair
	do   strategy.Doer        // nil: ErrUnsupported

	tel telemetry // OpenTelemetry: tracer (nil: untraced) and metrics registration

	loads       singleflight.Group
	aside       cacheAside
	closed      atomic.Bool
	nLoads      atomic.Int64
	nLoadErrors atomic.Int64
	nShared     atomic.Int64
	nStoreErrs  atomic.Int64
}

// New opens a Client with the strategy in o. It returns once the server
// has answered, or with the error that prevented it.
func New(ctx context.Context, o Options) (*Client, error) {
	cfg, err := o.config()
	if err != nil {
		return nil, err
	}
	s := o.Strategy
	if s == nil {
		s = strategy.Multiplexed{}
	}
	b, err := s.Open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	c := NewFromBackend(b)
	c.aside.jitter = o.TTLJitter
	c.aside.swr = o.StaleWhileRevalidate
	c.setupTelemetry(&o, cfg.Addrs)
	return c, nil
}

// NewFromBackend wraps a running backend (for instance one opened
// directly from a strategy value) in a Client. The Client takes ownership:
// its Close closes b.
func NewFromBackend(b strategy.Backend) *Client {
	c := &Client{b: b}
	c.aside.ttlGet, _ = b.(strategy.TTLGetter)
	c.aside.bgCtx, c.aside.bgCancel = context.WithCancel(context.Background())
	c.mget, _ = b.(strategy.MultiGetter)
	c.mset, _ = b.(strategy.MultiSetter)
	c.do, _ = b.(strategy.Doer)
	return c
}

// Backend returns the running strategy behind c, for capabilities the
// facade does not expose. It remains owned by c.
func (c *Client) Backend() strategy.Backend { return c.b }

// Get returns the value of key, or an error wrapping ErrNotFound when the
// key does not exist. An empty value is returned as a non-nil empty slice.
func (c *Client) Get(ctx context.Context, key string) ([]byte, error) {
	if c.tel.tracer != nil {
		return c.tracedGet(ctx, key)
	}
	return c.get(ctx, key)
}

func (c *Client) get(ctx context.Context, key string) ([]byte, error) {
	if c.closed.Load() {
		return nil, ErrClosed
	}
	return c.b.Get(ctx, key)
}

// Set stores value under key. A ttl of 0 stores it without expiry (and
// removes an expiry the key had); a positive ttl is rounded up to whole
// milliseconds; a negative ttl is an error. A nil value stores an empty
// value.
func (c *Client) Set(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	if c.tel.tracer != nil {
		return c.tracedSet(ctx, key, value, ttl)
	}
	return c.set(ctx, key, value, ttl)
}

func (c *Client) set(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	if err := checkValue(ttl, value); err != nil {
		return err
	}
	if c.closed.Load() {
		return ErrClosed
	}
	return c.b.Set(ctx, key, value, ttl)
}

func checkValue(ttl time.Duration, value []byte) error {
	if ttl < 0 {
		return fmt.Errorf("%w: negative ttl %v", ErrInvalidArgument, ttl)
	}
	if len(value) > strategy.MaxValueSize {
		return fmt.Errorf("%w: value of %d bytes over Redis's limit of %d", ErrInvalidArgument, len(value), strategy.MaxValueSize)
	}
	return nil
}

// Del removes keys and returns how many existed. No keys: 0, without a
// round trip.
func (c *Client) Del(ctx context.Context, keys ...string) (int64, error) {
	if c.tel.tracer != nil {
		return c.tracedDel(ctx, keys)
	}
	return c.del(ctx, keys)
}

func (c *Client) del(ctx context.Context, keys []string) (int64, error) {
	if c.closed.Load() {
		return 0, ErrClosed
	}
	if len(keys) == 0 {
		return 0, ctx.Err()
	}
	return c.b.Del(ctx, keys...)
}

// MGet returns the values of keys in their order; an element is nil where
// its key is missing (an empty value is a non-nil empty slice). No keys:
// an empty result, without a round trip.
func (c *Client) MGet(ctx context.Context, keys ...string) ([][]byte, error) {
	if c.tel.tracer != nil {
		return c.tracedMGet(ctx, keys)
	}
	return c.mgetKeys(ctx, keys)
}

func (c *Client) mgetKeys(ctx context.Context, keys []string) ([][]byte, error) {
	if c.closed.Load() {
		return nil, ErrClosed
	}
	if len(keys) == 0 {
		return [][]byte{}, ctx.Err()
	}
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

// MSet stores every pair of kv with the same ttl (0: no expiry). It is not
// atomic when a ttl is given or the keys span cluster slots. A nil map is
// an error; an empty one does nothing.
func (c *Client) MSet(ctx context.Context, kv map[string][]byte, ttl time.Duration) error {
	if c.tel.tracer != nil {
		return c.tracedMSet(ctx, kv, ttl)
	}
	return c.msetPairs(ctx, kv, ttl)
}

func (c *Client) msetPairs(ctx context.Context, kv map[string][]byte, ttl time.Duration) error {
	if kv == nil {
		return fmt.Errorf("%w: nil map", ErrInvalidArgument)
	}
	if err := checkValue(ttl, nil); err != nil {
		return err
	}
	for _, v := range kv {
		if err := checkValue(ttl, v); err != nil {
			return err
		}
	}
	if c.closed.Load() {
		return ErrClosed
	}
	if len(kv) == 0 {
		return ctx.Err()
	}
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

// Loader loads the value of a key from the source of truth.
type Loader func(ctx context.Context) ([]byte, error)

// GetOrLoad returns the cached value of key; on a miss it calls load,
// stores the result with ttl and returns it. Concurrent misses of the same
// key in this process share one call of load (singleflight). The load
// runs with the values and the deadline of the first caller's context but
// not its cancellation, so one caller giving up does not fail the others;
// each caller still returns as soon as its own context ends. A failing
// load is returned wrapped in ErrLoad and nothing is stored. A failure to
// store the loaded value does not fail the call (it is counted in Stats);
// a failure to read the cache does, so that an outage of Redis does not
// become a stampede on the source. Options.TTLJitter and
// Options.StaleWhileRevalidate shape the stored ttl.
func (c *Client) GetOrLoad(ctx context.Context, key string, ttl time.Duration, load Loader) ([]byte, error) {
	if c.tel.tracer != nil {
		return c.tracedGetOrLoad(ctx, key, ttl, load)
	}
	return c.getOrLoad(ctx, key, ttl, load)
}

func (c *Client) getOrLoad(ctx context.Context, key string, ttl time.Duration, load Loader) ([]byte, error) {
	if load == nil {
		return nil, fmt.Errorf("%w: nil loader", ErrInvalidArgument)
	}
	if ttl < 0 {
		return nil, fmt.Errorf("%w: negative ttl %v", ErrInvalidArgument, ttl)
	}
	if c.closed.Load() {
		return nil, ErrClosed
	}
	var v []byte
	var err error
	if c.aside.swr > 0 && ttl > 0 && c.aside.ttlGet != nil {
		var left time.Duration
		v, left, err = c.aside.ttlGet.GetWithTTL(ctx, key)
		if err == nil && left >= 0 && left <= c.aside.swr {
			// Past its ttl, inside the grace period: serve it, refresh it.
			c.aside.stale.Add(1)
			c.revalidate(key, ttl, load)
		}
	} else {
		v, err = c.Get(ctx, key)
	}
	if !errors.Is(err, ErrNotFound) {
		return v, err
	}
	// ran is set by this call's function only when singleflight runs it,
	// that is when this call leads the load; it is read after the result
	// arrives, which happens after the function returned.
	ran := false
	lctx := context.WithoutCancel(ctx)
	ch := c.loads.DoChan(key, func() (any, error) {
		ran = true
		if d, ok := ctx.Deadline(); ok {
			var cancel context.CancelFunc
			lctx, cancel = context.WithDeadline(lctx, d)
			defer cancel()
		}
		return c.loadAndStore(lctx, key, ttl, load)
	})
	select {
	case r := <-ch:
		// r.Shared is true for every caller of a shared load, the leader
		// included; only the others were answered by another's load.
		if r.Shared && !ran {
			c.nShared.Add(1)
		}
		if r.Err != nil {
			return nil, r.Err
		}
		return r.Val.([]byte), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// loadAndStore calls load and stores its value for the jittered ttl (plus
// the stale-while-revalidate grace period).
func (c *Client) loadAndStore(ctx context.Context, key string, ttl time.Duration, load Loader) (any, error) {
	c.nLoads.Add(1)
	v, err := load(ctx)
	if err != nil {
		c.nLoadErrors.Add(1)
		return nil, fmt.Errorf("%w: key %q: %w", ErrLoad, key, err)
	}
	if v == nil {
		v = []byte{}
	}
	if err := checkValue(ttl, v); err != nil {
		return nil, fmt.Errorf("%w: key %q: %w", ErrLoad, key, err)
	}
	if err := c.Set(ctx, key, v, c.aside.storeTTL(ttl)); err != nil {
		c.nStoreErrs.Add(1)
	}
	return v, nil
}

// Do runs any command and returns its reply in redigo's types ([]byte for
// bulk strings, string for status replies, int64, []any, nil), so redigo's
// helpers (redis.String, redis.Int64, redis.Strings…) convert it. A server
// error reply is returned as an error wrapping a redis.Error. Blocking
// commands are sent on a dedicated connection; commands that change a
// connection's state (SELECT, SUBSCRIBE, MULTI, CLIENT TRACKING…) are
// refused with ErrUnsupported. Strategies without the capability return
// ErrUnsupported.
func (c *Client) Do(ctx context.Context, args ...any) (any, error) {
	if c.tel.tracer != nil {
		return c.tracedDo(ctx, args)
	}
	return c.doCmd(ctx, args)
}

func (c *Client) doCmd(ctx context.Context, args []any) (any, error) {
	if c.closed.Load() {
		return nil, ErrClosed
	}
	if c.do == nil {
		return nil, fmt.Errorf("%w: Do on a %T backend", ErrUnsupported, c.b)
	}
	return c.do.Do(ctx, args...)
}

// Stats describes the client: the strategy's connection statistics and
// the facade's own counters.
type Stats struct {
	strategy.Stats

	Loads       int64 // GetOrLoad loader calls
	LoadErrors  int64 // loader calls that failed
	SharedLoads int64 // GetOrLoad calls answered by another caller's load
	StoreErrors int64 // loaded values that could not be stored
	StaleServed int64 // GetOrLoad calls served a value inside its stale-while-revalidate period
}

// Stats returns a snapshot of the client's statistics. Strategies without
// statistics report zero connection figures.
func (c *Client) Stats() Stats {
	s := Stats{
		Loads:       c.nLoads.Load(),
		LoadErrors:  c.nLoadErrors.Load(),
		SharedLoads: c.nShared.Load(),
		StoreErrors: c.nStoreErrs.Load(),
		StaleServed: c.aside.stale.Load(),
	}
	if st, ok := c.b.(strategy.Statser); ok {
		s.Stats = st.Stats()
	}
	return s
}

// Close closes the strategy: every connection and goroutine it holds is
// released, and calls still in flight fail with ErrClosed. Calls after
// Close return ErrClosed. Close is idempotent.
func (c *Client) Close() error {
	if c.closed.Swap(true) {
		return nil
	}
	c.aside.mu.Lock() // revalidate checks closed under mu: no refresh starts after this
	c.aside.bgCancel()
	c.aside.mu.Unlock()
	c.aside.bg.Wait()
	c.unregisterMetrics()
	return c.b.Close()
}
