package redisx

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/redisx-go/kit/strategy"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// Options configures a Client. The zero value connects to 127.0.0.1:6379
// with the Multiplexed strategy. New copies Options; later changes to the
// struct have no effect.
type Options struct {
	// Addrs are "host:port": a standalone server's, or seed nodes of a
	// Redis Cluster (the first that answers names the others). Several
	// addresses name a cluster: New refuses them when the one that
	// answers is a standalone server. Zero: 127.0.0.1:6379. Ignored when
	// Sentinel is set.
	Addrs []string
	// Sentinel, when set, makes the client ask these sentinels for the
	// master and follow its failovers (see SentinelOptions); Addrs are
	// then ignored.
	Sentinel *SentinelOptions
	// ReadFrom says which node serves reads: the master (ReadPrimary, the
	// zero value) or, with Sentinel or on a Redis Cluster, a replica
	// (ReadReplicaPreferred) or the nearest node (ReadNearest). A read from a replica may miss a
	// write just made: see ReadFrom.
	ReadFrom ReadFrom
	// Strategy is any strategy value: strategy.Multiplexed{},
	// strategy.Pool{Size: 32}, goredis.Strategy{Client: rdb},
	// localcache.Near{…}. Zero: strategy.Multiplexed{}.
	Strategy strategy.Strategy

	// Username and Password authenticate every connection (AUTH; an ACL
	// user when Username is set). They never appear in errors.
	Username string
	Password string
	// Credentials, when set, is called for every new connection to get
	// the user name and password it authenticates with: for secrets that
	// rotate and tokens that expire (cloud IAM authentication). It is
	// called from many goroutines at once, within the dial's DialTimeout
	// (its context ends then), and its result is not cached: cache a token
	// inside it if fetching one is slow. Set either Credentials or
	// Username and Password, not both: New refuses both. An empty password
	// sends no AUTH. Its error fails the dial with an error wrapping
	// ErrConnection and it. A password the server refuses fails with
	// ErrAuth, which is not retried. Pair it with MaxConnAge, so that
	// connections authenticated with an old secret do not outlive it. To
	// rotate an ACL password without a failed call, let both be valid for
	// a while: add the new one (ACL SETUSER app >new), make Credentials
	// return it, and remove the old one (ACL SETUSER app resetpass >new)
	// once MaxConnAge has passed. ParseURL never sets it; FormatURL
	// refuses it.
	Credentials func(ctx context.Context) (username, password string, err error)
	// MaxConnAge, when positive, replaces every connection once it is that
	// old, without failing a call, whatever the strategy:
	// strategy.Multiplexed dials a new shared connection for new calls and
	// closes the old one once its calls in flight have their replies;
	// strategy.Pool closes a connection when it is released or found idle
	// past its age (strategy.Pool.MaxLifetime, when shorter, wins); the
	// invalidation connections of localcache.Near subscribe anew before
	// the old ones are closed, so the local cache is not flushed. With
	// Credentials whose secrets expire, make it shorter than a secret's
	// lifetime. goredis.Strategy keeps its own client's settings. Zero: no
	// limit.
	MaxConnAge time.Duration
	// DB is the database index to select. Zero: 0. A database the server
	// refuses (out of its range, or other than 0 on a Redis Cluster) fails
	// New with ErrInvalidArgument.
	DB int
	// TLS, when set, makes every connection a TLS connection (rediss://).
	TLS *tls.Config
	// ClientName is set with CLIENT SETNAME on every connection. It may
	// hold the printable ASCII characters but the space ('!' to '~'), as
	// the server requires.
	ClientName string

	// DialTimeout bounds opening and authenticating one connection.
	// Zero: 5 s.
	DialTimeout time.Duration
	// ReadTimeout bounds the wait for a reply when the call's context has
	// no deadline. The rule: a call waits for its reply until its
	// context ends; when the context has no deadline, at most until
	// ReadTimeout after its request was sent, extended by a blocking
	// command's own block time (BLPOP key 5 may wait ReadTimeout + 5 s;
	// BLPOP key 0, XREAD BLOCK 0 and WAIT n 0 wait until their context
	// ends). A connection is discarded only when a reply is overdue under
	// that rule, and then within half a ReadTimeout; the call fails with
	// ErrConnection. Zero: 3 s; negative: no bound (the context alone
	// decides).
	//
	// Sent means written whole — the upload of a big value over a thin
	// link is not counted — and, on plain TCP connections on Linux
	// (amd64, arm64), acknowledged by the server's side of the
	// connection, since a write ends once the kernel's send buffer holds
	// the bytes, which may be most of a big request. While a request is
	// being sent there, the peer must acknowledge some of it every
	// ReadTimeout, or the connection fails as for a missing reply (a
	// half-open connection); elsewhere WriteTimeout bounds its write.
	ReadTimeout time.Duration
	// WriteTimeout bounds each write of a request: of a shared
	// (Multiplexed) connection's batch; with Pool, of a request of 16 KiB
	// or more when the call's context has no deadline (a smaller one, or
	// one with a deadline, is written under the call's read deadline).
	// Zero: 3 s; negative: none.
	WriteTimeout time.Duration

	// Retry is the policy for retrying an operation that failed for want
	// of a connection: which operations, how often, with what backoff
	// (see Retry). The zero value is the default, 3 attempts with 10 ms to
	// 200 ms between them; Retry{MaxAttempts: 1} switches retries off.
	Retry Retry

	// TTLJitter shortens the ttl of each value GetOrLoad stores by a random
	// fraction up to TTLJitter, so that keys loaded together do not all
	// expire (and reload) together. Between 0 and 1. Zero: none.
	TTLJitter float64
	// StaleWhileRevalidate, when positive, lets GetOrLoad keep serving a
	// value for this long after its ttl while one background load
	// refreshes it: values are stored for ttl + StaleWhileRevalidate, and a
	// read in that last stretch returns the value at once and starts the
	// refresh (one per key at a time). It needs a strategy that reports
	// TTLs (strategy.TTLGetter: all of this module's do); without one it
	// is ignored. Zero: off — a value is reloaded only once it is gone.
	StaleWhileRevalidate time.Duration

	// LoadTimeout bounds each load of GetOrLoad: the loader and the
	// store of its value, under the load's own context. Zero: no bound of
	// its own — the load lasts as long as someone waits for it, that is
	// until the last caller sharing it has given up (its context ended),
	// whatever the loader does; a stale-while-revalidate refresh, which
	// no caller waits for, is then bounded by 30 s. Set it when the
	// source of truth may hang, for instance to the longest time a value
	// is worth waiting for.
	LoadTimeout time.Duration

	// PubSubBuffer is the number of messages a Subscription holds for a
	// reader that falls behind; beyond it the oldest are dropped (and
	// counted in Stats.PubSubDropped). Zero: DefaultPubSubBuffer (1000).
	PubSubBuffer int

	// OpenTelemetry. redisx uses the OpenTelemetry API only; the SDK (or
	// any other implementation) is the application's choice, installed
	// through these providers or the global ones. Attributes follow the
	// stable database conventions. Keys, values and credentials are never
	// recorded.

	// MeterProvider receives the client's metrics. Nil: the global
	// provider (otel.GetMeterProvider), which discards them until the
	// application installs an SDK.
	//
	// Every call of a Client method (Get, AppendGet, Set, Del, MGet,
	// MSet, GetOrLoad, Do, Ping) is measured in
	// db.client.operation.duration, a histogram in seconds with buckets
	// from 100 µs to 10 s, with the attributes db.system.name=redis;
	// db.operation.name: GET (Get and AppendGet), SET, DEL, MGET, MSET,
	// GETORLOAD, PING, and for Do the uppercased command name — bounded:
	// a name that is not 1 to 32 letters, digits, '.', '_' or '-', or
	// that comes after 128 distinct others, is OTHER; db.namespace (the DB
	// index); server.address and server.port (of the first address); and
	// when the call failed, error.type: for a server error reply its
	// prefix (ERR, WRONGTYPE, MOVED… — one Redis documents, else _OTHER),
	// also in db.response.status_code, otherwise one of load, closed,
	// auth, invalid_argument, unsupported, timeout, canceled, connection or
	// _OTHER. A miss is not a failure. GetOrLoad is measured as a whole;
	// its own GET and SET are not measured apart. Cost: with no SDK
	// installed the global provider's histogram reports itself disabled,
	// and a call pays that one check — no clock read, no allocation; with
	// an SDK, two clock reads and one Record with attributes built in
	// advance, still no allocation: a few hundred nanoseconds per call on
	// the (busy, 2-core) development machine, at 1 and at 1000
	// goroutines, next to tens of microseconds for a round trip to a
	// local server. BenchmarkClientGetMetrics measures both against a
	// client without instrumentation.
	//
	// The other instruments are observable: read from Stats once per
	// collection, in a single callback registered by New (NewFromBackend
	// installs no instrumentation) and removed by Close, so they cost
	// nothing on the call path. Their attributes are db.system.name and
	// db.client.connection.pool.name = ClientName, or the first address
	// when ClientName is empty. Instruments: db.client.connection.count
	// ({connection}, attribute db.client.connection.state = idle or used;
	// a multiplexed connection counts as used),
	// db.client.connection.max ({connection}),
	// db.client.connection.pending_requests ({request}),
	// redisx.pool.acquire.wait (s, the total time callers waited for a
	// pooled connection), redisx.cluster.redirects,
	// redisx.cluster.topology_refreshes, redisx.near.hits,
	// redisx.near.misses, redisx.near.invalidations, redisx.near.bytes
	// (By), redisx.loads, redisx.loads.shared and redisx.stale_served.
	// The conventions' db.client.connection.wait_time histogram is not
	// recorded: a pool wait happens inside the strategy, below the
	// facade's measurements, and the strategy contract has no per-acquire
	// hook; redisx.pool.acquire.wait gives the total instead.
	MeterProvider metric.MeterProvider
	// TracerProvider, when set, traces every call of a Client method with
	// a client span named after its db.operation.name (see MeterProvider)
	// with the same attributes, plus db.operation.batch.size for Del, MGet
	// and MSet; GetOrLoad's span has child spans for its own GET and SET.
	// Errors are recorded on the span, with error.type and
	// db.response.status_code as in the duration metric, except a miss
	// (ErrNotFound). Nil: no tracing at all. Spans are opt-in: unlike
	// metrics, tracing does not fall back to the global provider, because
	// starting a span allocates on every call even when the global
	// provider samples nothing, which would break this package's bound of
	// at most two allocations per Get; set it (for instance to
	// otel.GetTracerProvider()) to opt in.
	TracerProvider trace.TracerProvider
}

// config validates o and turns it into the settings strategies share.
func (o *Options) config() (strategy.Config, error) {
	cfg := strategy.Config{
		Addrs:        append([]string(nil), o.Addrs...),
		Username:     o.Username,
		Password:     o.Password,
		Credentials:  o.Credentials,
		MaxConnAge:   o.MaxConnAge,
		DB:           o.DB,
		TLS:          o.TLS,
		ClientName:   o.ClientName,
		DialTimeout:  o.DialTimeout,
		ReadTimeout:  o.ReadTimeout,
		WriteTimeout: o.WriteTimeout,
		ReadFrom:     o.ReadFrom,
	}
	if len(cfg.Addrs) == 0 {
		cfg.Addrs = []string{"127.0.0.1:6379"}
	}
	if o.Sentinel != nil {
		if err := o.sentinelConfig(&cfg); err != nil {
			return cfg, err
		}
	}
	for _, a := range cfg.Addrs {
		if _, _, err := net.SplitHostPort(a); err != nil {
			return cfg, fmt.Errorf("%w: address %q is not host:port", ErrInvalidArgument, a)
		}
	}
	if cfg.DB < 0 {
		return cfg, fmt.Errorf("%w: DB %d is negative", ErrInvalidArgument, cfg.DB)
	}
	if strings.ContainsFunc(cfg.ClientName, func(r rune) bool { return r < '!' || r > '~' }) {
		// CLIENT SETNAME refuses them: every dial would fail.
		return cfg, fmt.Errorf("%w: ClientName %q holds a space, a control or a non-ASCII character, which a server refuses", ErrInvalidArgument, cfg.ClientName)
	}
	if cfg.Password == "" && cfg.Username != "" {
		return cfg, fmt.Errorf("%w: Username without Password", ErrInvalidArgument)
	}
	if cfg.Credentials != nil && cfg.Password != "" {
		return cfg, fmt.Errorf("%w: both Credentials and Username/Password: set one", ErrInvalidArgument)
	}
	if cfg.MaxConnAge < 0 {
		return cfg, fmt.Errorf("%w: MaxConnAge %v is negative", ErrInvalidArgument, cfg.MaxConnAge)
	}
	if _, err := o.Retry.policy(); err != nil {
		return cfg, err
	}
	if cfg.DialTimeout < 0 {
		return cfg, fmt.Errorf("%w: DialTimeout %v is negative", ErrInvalidArgument, cfg.DialTimeout)
	}
	if o.TTLJitter < 0 || o.TTLJitter >= 1 {
		return cfg, fmt.Errorf("%w: TTLJitter %v outside [0, 1)", ErrInvalidArgument, o.TTLJitter)
	}
	if o.StaleWhileRevalidate < 0 {
		return cfg, fmt.Errorf("%w: StaleWhileRevalidate %v is negative", ErrInvalidArgument, o.StaleWhileRevalidate)
	}
	if o.PubSubBuffer < 0 {
		return cfg, fmt.Errorf("%w: PubSubBuffer %d is negative", ErrInvalidArgument, o.PubSubBuffer)
	}
	if o.LoadTimeout < 0 {
		return cfg, fmt.Errorf("%w: LoadTimeout %v is negative", ErrInvalidArgument, o.LoadTimeout)
	}
	if cfg.DialTimeout == 0 {
		cfg.DialTimeout = 5 * time.Second
	}
	if cfg.ReadTimeout == 0 {
		cfg.ReadTimeout = 3 * time.Second
	}
	if cfg.WriteTimeout == 0 {
		cfg.WriteTimeout = 3 * time.Second
	}
	return cfg, nil
}
