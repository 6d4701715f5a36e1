package redisx

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/redisx-go/kit/strategy"
)

// Client is the cache API over one strategy. It is safe for concurrent
// use by any number of goroutines; create one per Redis deployment and
// share it. The creator must Close it, which releases every connection and
// goroutine the strategy holds.
//
// What a call returns is the caller's: a value may be modified and kept,
// whatever the strategy (a near-cache hands out copies, GetOrLoad gives
// each caller sharing a load a slice of its own). A slice passed in (a
// value to Set, AppendGet's dst) is not kept after the call returns.
type Client struct {
	b    strategy.Backend
	caps strategy.Capabilities // b's optional interfaces, and their fallbacks

	tel   telemetry // OpenTelemetry: spans (opt-in), operation durations, observable metrics
	retry retrier   // Options.Retry

	ps          pubsubs // Pub/Sub: the live subscriptions
	loads       loadGroup
	aside       cacheAside
	closed      atomic.Bool
	nLoads      atomic.Int64
	nLoadErrors atomic.Int64
	nShared     atomic.Int64
	nStoreErrs  atomic.Int64
}

// New opens a Client with the strategy in o. It returns once the server
// has answered, or with the error that prevented it. ctx bounds the
// whole of it, and each connection is bounded by Options.DialTimeout
// too; the error says which ended a dial. When ctx ends first, New
// returns at once with an error that wraps ErrConnection and ctx's error
// (errors.Is finds context.DeadlineExceeded) and names the address it
// waited for; a dial that ran out of DialTimeout fails with an error
// wrapping ErrConnection alone.
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
	if !c.caps.RetriesCalls() {
		p, _ := o.Retry.policy() // checked by config
		c.retry.setup(p, cfg.ReadTimeout)
	}
	c.aside.jitter = o.TTLJitter
	c.aside.swr = o.StaleWhileRevalidate
	c.loads.timeout = o.LoadTimeout
	c.ps.buffer = o.PubSubBuffer
	c.setupTelemetry(&o, cfg)
	return c, nil
}

// NewFromBackend wraps a running backend (for instance one opened
// directly from a strategy value) in a Client with the default options
// (the default Retry policy included, with the default ReadTimeout of
// 3 s) and no OpenTelemetry instrumentation at all. The Client takes
// ownership: its Close closes b.
func NewFromBackend(b strategy.Backend) *Client {
	c := &Client{b: b, caps: strategy.CapabilitiesOf(b)}
	if !c.caps.RetriesCalls() {
		p, _ := Retry{}.policy()
		c.retry.setup(p, 3*time.Second)
	}
	c.aside.ttls = c.caps.HasTTL()
	return c
}

// Backend returns the running strategy behind c, for capabilities the
// facade does not expose. It remains owned by c.
func (c *Client) Backend() strategy.Backend { return c.b }

// Get returns the value of key, or an error wrapping ErrNotFound when the
// key does not exist. An empty value is returned as a non-nil empty slice.
// The value is the caller's to modify and keep.
func (c *Client) Get(ctx context.Context, key string) ([]byte, error) {
	if !c.tel.on(ctx) {
		return c.get(ctx, key)
	}
	ctx, m := c.tel.begin(ctx, c.tel.op(opGet), 0)
	v, err := c.get(ctx, key)
	c.tel.end(ctx, m, err)
	return v, err
}

func (c *Client) get(ctx context.Context, key string) ([]byte, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	if c.closed.Load() {
		return nil, ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	v, err := c.b.Get(ctx, key)
	if err != nil && readAgain(err) {
		return retry(ctx, c, v, err, readAgain, func() ([]byte, error) { return c.b.Get(ctx, key) })
	}
	return v, err
}

// AppendGet appends the value of key to dst and returns the extended
// slice, in the style of strconv.AppendInt: the hot-path read, which lets
// the caller reuse one buffer, as in
//
//	buf, err = c.AppendGet(ctx, buf[:0], key)
//
// The result is the caller's, like dst, which the client does not keep
// after the call returns. On a miss AppendGet returns dst unchanged and an
// error wrapping ErrNotFound; on any other error, dst unchanged and the
// error. An empty value appends nothing: tell a miss by the error, not by
// the length. When the strategy implements strategy.Appender (the
// near-cache does: a local hit appended to a dst with room allocates
// nothing) it is used; otherwise the value is read with Get and appended.
func (c *Client) AppendGet(ctx context.Context, dst []byte, key string) ([]byte, error) {
	if !c.tel.on(ctx) {
		return c.appendGet(ctx, dst, key)
	}
	ctx, m := c.tel.begin(ctx, c.tel.op(opGet), 0)
	v, err := c.appendGet(ctx, dst, key)
	c.tel.end(ctx, m, err)
	return v, err
}

func (c *Client) appendGet(ctx context.Context, dst []byte, key string) ([]byte, error) {
	if err := checkKey(key); err != nil {
		return dst, err
	}
	if c.closed.Load() {
		return dst, ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return dst, err
	}
	v, err := c.appendGetOnce(ctx, dst, key)
	if err != nil && readAgain(err) {
		return retry(ctx, c, v, err, readAgain, func() ([]byte, error) { return c.appendGetOnce(ctx, dst, key) })
	}
	return v, err
}

func (c *Client) appendGetOnce(ctx context.Context, dst []byte, key string) ([]byte, error) {
	return c.caps.AppendGet(ctx, dst, key)
}

// Set stores value under key. A ttl of 0 stores it without expiry (and
// removes an expiry the key had); a positive ttl is rounded up to whole
// milliseconds; a negative ttl is an error. A nil value stores an empty
// value. value is not kept after Set returns.
func (c *Client) Set(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	if !c.tel.on(ctx) {
		return c.set(ctx, key, value, ttl)
	}
	ctx, m := c.tel.begin(ctx, c.tel.op(opSet), 0)
	err := c.set(ctx, key, value, ttl)
	c.tel.end(ctx, m, err)
	return err
}

func (c *Client) set(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	if err := checkKey(key); err != nil {
		return err
	}
	if err := checkValue(ttl, value); err != nil {
		return err
	}
	if c.closed.Load() {
		return ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	err := c.b.Set(ctx, key, value, ttl)
	if err != nil && writeAgain(err) {
		_, err = retry(ctx, c, struct{}{}, err, writeAgain, func() (struct{}, error) {
			return struct{}{}, c.b.Set(ctx, key, value, ttl)
		})
	}
	return err
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

// checkKey refuses a key Redis would refuse (a bulk string over
// proto-max-bulk-len, strategy.MaxValueSize) before it is sent: the
// server would read it whole, then close the connection. The error names
// the size, never the key.
func checkKey(key string) error {
	if len(key) > strategy.MaxValueSize {
		return fmt.Errorf("%w: key of %d bytes over Redis's limit of %d", ErrInvalidArgument, len(key), strategy.MaxValueSize)
	}
	return nil
}

// checkKeys is checkKey of every key.
func checkKeys(keys []string) error {
	for _, k := range keys {
		if err := checkKey(k); err != nil {
			return err
		}
	}
	return nil
}

// Del removes keys and returns how many existed. No keys: 0, without a
// round trip.
func (c *Client) Del(ctx context.Context, keys ...string) (int64, error) {
	if !c.tel.on(ctx) {
		return c.del(ctx, keys)
	}
	ctx, m := c.tel.begin(ctx, c.tel.op(opDel), len(keys))
	n, err := c.del(ctx, keys)
	c.tel.end(ctx, m, err)
	return n, err
}

func (c *Client) del(ctx context.Context, keys []string) (int64, error) {
	if err := checkKeys(keys); err != nil {
		return 0, err
	}
	if c.closed.Load() {
		return 0, ErrClosed
	}
	if err := ctx.Err(); err != nil || len(keys) == 0 {
		return 0, err
	}
	n, err := c.b.Del(ctx, keys...)
	switch {
	case err == nil:
	case n == 0 && writeAgain(err): // n > 0: part of it was applied
		return retry(ctx, c, n, err, writeAgain, func() (int64, error) { return c.b.Del(ctx, keys...) })
	default: // the keys of nodes that never ran their part may be sent again
		err = c.retryParts(ctx, err, writeAgain, func(keys []string) error {
			m, err := c.b.Del(ctx, keys...)
			n += m
			return err
		})
	}
	return n, err
}

// MGet returns the values of keys in their order; an element is nil where
// its key is missing (an empty value is a non-nil empty slice). No keys:
// an empty result, without a round trip. The values are the caller's.
//
// An error usually comes with no values. The exception is
// strategy.SlotGrouped on a Redis Cluster, where one node's failure does
// not fail the others: MGet then returns the values read from the nodes
// that answered together with an error joining one *strategy.NodeError
// per node that did not (errors.As finds one; each lists its Keys, whose
// elements are nil). A caller that can use a partial result checks for
// values before giving up on the error; see the example.
func (c *Client) MGet(ctx context.Context, keys ...string) ([][]byte, error) {
	if !c.tel.on(ctx) {
		return c.mgetKeys(ctx, keys)
	}
	ctx, m := c.tel.begin(ctx, c.tel.op(opMGet), len(keys))
	vs, err := c.mgetKeys(ctx, keys)
	c.tel.end(ctx, m, err)
	return vs, err
}

func (c *Client) mgetKeys(ctx context.Context, keys []string) ([][]byte, error) {
	if err := checkKeys(keys); err != nil {
		return nil, err
	}
	if c.closed.Load() {
		return nil, ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(keys) == 0 {
		return [][]byte{}, nil
	}
	vs, err := c.mgetOnce(ctx, keys)
	switch {
	case err == nil:
	case vs == nil:
		if readAgain(err) {
			partial := false // values came back with the error: the caller's to use
			vs, err = retry(ctx, c, vs, err, func(err error) bool { return !partial && readAgain(err) }, func() ([][]byte, error) {
				vs, err := c.mgetOnce(ctx, keys)
				partial = vs != nil && err != nil
				return vs, err
			})
		}
		if vs == nil || err == nil {
			return vs, err
		}
		fallthrough
	default: // values from some nodes: read again the keys of the others
		err = c.retryParts(ctx, err, readAgain, func(failed []string) error {
			got, err := c.mgetOnce(ctx, failed)
			if got != nil {
				fill(vs, keys, failed, got)
			}
			return err
		})
	}
	return vs, err
}

// fill stores the values got for the keys of failed into vs, the values
// of keys, at every position of each.
func fill(vs [][]byte, keys, failed []string, got [][]byte) {
	at := make(map[string]int, len(failed))
	for i, k := range failed {
		at[k] = i
	}
	for i, k := range keys {
		if j, ok := at[k]; ok && got[j] != nil {
			vs[i] = got[j]
		}
	}
}

func (c *Client) mgetOnce(ctx context.Context, keys []string) ([][]byte, error) {
	return c.caps.MGet(ctx, keys)
}

// MSet stores every pair of kv with the same ttl (0: no expiry). It is not
// atomic when a ttl is given or the keys span cluster slots. A nil map is
// an error; an empty one does nothing. The values are not kept after MSet
// returns.
func (c *Client) MSet(ctx context.Context, kv map[string][]byte, ttl time.Duration) error {
	if !c.tel.on(ctx) {
		return c.msetPairs(ctx, kv, ttl)
	}
	ctx, m := c.tel.begin(ctx, c.tel.op(opMSet), len(kv))
	err := c.msetPairs(ctx, kv, ttl)
	c.tel.end(ctx, m, err)
	return err
}

func (c *Client) msetPairs(ctx context.Context, kv map[string][]byte, ttl time.Duration) error {
	if kv == nil {
		return fmt.Errorf("%w: nil map", ErrInvalidArgument)
	}
	if err := checkValue(ttl, nil); err != nil {
		return err
	}
	for k, v := range kv {
		if err := checkKey(k); err != nil {
			return err
		}
		if err := checkValue(ttl, v); err != nil {
			return err
		}
	}
	if c.closed.Load() {
		return ErrClosed
	}
	if err := ctx.Err(); err != nil || len(kv) == 0 {
		return err
	}
	if c.caps.HasMSet() {
		err := c.caps.MSet(ctx, kv, ttl)
		switch {
		case err == nil:
		case writeAgain(err):
			_, err = retry(ctx, c, struct{}{}, err, writeAgain, func() (struct{}, error) {
				return struct{}{}, c.caps.MSet(ctx, kv, ttl)
			})
		default: // the pairs of nodes that never ran their part may be sent again
			err = c.retryParts(ctx, err, writeAgain, func(keys []string) error {
				sub := make(map[string][]byte, len(keys))
				for _, k := range keys {
					sub[k] = kv[k]
				}
				return c.caps.MSet(ctx, sub, ttl)
			})
		}
		return err
	}
	// One Set per pair, each retried on its own: a retry of the whole
	// would send again the pairs already stored.
	for k, v := range kv {
		if err := c.set(ctx, k, v, ttl); err != nil {
			return err
		}
	}
	return nil
}

// Do runs any command and returns its reply in redigo's types ([]byte for
// bulk strings, string for status replies, int64, []any, nil), so redigo's
// helpers (redis.String, redis.Int64, redis.Strings…) convert it. A server
// error reply is returned as an error wrapping a redis.Error. Blocking
// commands are sent on a dedicated connection; commands that change a
// connection's state (SELECT, SUBSCRIBE, MULTI, CLIENT TRACKING…) are
// refused with ErrUnsupported. Strategies without the capability return
// ErrUnsupported. The reply is the caller's.
func (c *Client) Do(ctx context.Context, args ...any) (any, error) {
	if !c.tel.on(ctx) {
		return c.doCmd(ctx, args)
	}
	ctx, m := c.tel.begin(ctx, c.tel.command(args), 0)
	v, err := c.doCmd(ctx, args)
	c.tel.end(ctx, m, err)
	return v, err
}

func (c *Client) doCmd(ctx context.Context, args []any) (any, error) {
	if c.closed.Load() {
		return nil, ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	v, err := c.caps.Do(ctx, args...)
	if err != nil && writeAgain(err) {
		return retry(ctx, c, v, err, writeAgain, func() (any, error) { return c.caps.Do(ctx, args...) })
	}
	return v, err
}

// Ping checks that the server answers, for health checks: it sends one
// PING through the strategy's Do and expects PONG. On a standalone server
// that checks the connection, its authentication and the server. On a
// Redis Cluster a PING carries no key, so it reaches one node (the one the
// strategy sends keyless commands to): it shows the cluster is reachable,
// not that every master is up. Strategies without Do return
// ErrUnsupported; a reply other than PONG is an error wrapping
// ErrConnection.
func (c *Client) Ping(ctx context.Context) error {
	if !c.tel.on(ctx) {
		return c.ping(ctx)
	}
	ctx, m := c.tel.begin(ctx, c.tel.op(opPing), 0)
	err := c.ping(ctx)
	c.tel.end(ctx, m, err)
	return err
}

func (c *Client) ping(ctx context.Context) error {
	if c.closed.Load() {
		return ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if !c.caps.HasDo() {
		return fmt.Errorf("%w: Ping on a %T backend", ErrUnsupported, c.b)
	}
	v, err := c.caps.Do(ctx, "PING")
	if err != nil {
		return err
	}
	switch v := v.(type) {
	case string:
		if v == "PONG" {
			return nil
		}
	case []byte:
		if string(v) == "PONG" {
			return nil
		}
	}
	return fmt.Errorf("%w: PING answered %T, not PONG", ErrConnection, v)
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
	Retries     int64 // attempts after the first, by the Retry policy: one per retry

	PubSubDropped int64 // messages dropped by Subscriptions whose reader fell behind (Options.PubSubBuffer)
}

// Stats returns a snapshot of the client's statistics, at any time from
// New on, after Close included: the counters then keep their last values
// and the strategy reports what it still holds — no connection for this
// module's transports; goredis.Strategy reports the pool of its go-redis
// client, which Close leaves open unless CloseClient is set. Strategies
// without statistics report zero connection figures and an empty Strategy
// name.
func (c *Client) Stats() Stats {
	s := Stats{
		Loads:       c.nLoads.Load(),
		LoadErrors:  c.nLoadErrors.Load(),
		SharedLoads: c.nShared.Load(),
		StoreErrors: c.nStoreErrs.Load(),
		StaleServed: c.aside.stale.Load(),
		Retries:     c.retry.retries.Load(),

		PubSubDropped: c.ps.dropped.Load(),
	}
	s.Stats = c.caps.Stats()
	return s
}

// Close closes the client. From its start every new call returns
// ErrClosed. It then cancels the GetOrLoad loads in flight (including
// stale-while-revalidate refreshes; their callers get ErrClosed) and waits
// for their loaders to return, so a loader that ignores its context
// delays Close; closes the Subscriptions still open; stops the metrics
// callback; and closes the strategy, returning its error. What happens
// to other calls still in flight is the strategy's: this module's
// transports fail them with ErrClosed and release every connection and
// goroutine they hold, a transaction's included — Close does not wait for
// a Watch callback to return: the calls of its Tx return ErrClosed —;
// goredis.Strategy leaves the go-redis client open unless CloseClient is
// set. Only the first Close does this; later ones return nil at once,
// without waiting for it to finish.
func (c *Client) Close() error {
	if c.closed.Swap(true) {
		return nil
	}
	c.loads.close()
	c.ps.closeAll()
	c.unregisterMetrics()
	return c.b.Close()
}
