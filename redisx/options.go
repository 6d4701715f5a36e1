package redisx

import (
	"crypto/tls"
	"fmt"
	"net"
	"time"

	"github.com/redisx-go/kit/strategy"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// Options configures a Client. The zero value connects to 127.0.0.1:6379
// with the Multiplexed strategy. New copies Options; later changes to the
// struct have no effect.
type Options struct {
	// Addrs are the seed nodes, "host:port". Zero: 127.0.0.1:6379.
	Addrs []string
	// Strategy is any strategy value: strategy.Multiplexed{},
	// strategy.Pool{Size: 32}, strategy.GoRedis{Client: rdb},
	// localcache.Near{…}. Zero: strategy.Multiplexed{}.
	Strategy strategy.Strategy

	// Username and Password authenticate every connection (AUTH; an ACL
	// user when Username is set). They never appear in errors.
	Username string
	Password string
	// DB is the database index to select. Zero: 0.
	DB int
	// TLS, when set, makes every connection a TLS connection (rediss://).
	TLS *tls.Config
	// ClientName is set with CLIENT SETNAME on every connection.
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
	ReadTimeout time.Duration
	// WriteTimeout bounds each write of a shared (Multiplexed)
	// connection; with Pool a request is written under its call's read
	// deadline. Zero: 3 s; negative: none.
	WriteTimeout time.Duration

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

	// OpenTelemetry. redisx uses the OpenTelemetry API only; the SDK (or
	// any other implementation) is the application's choice, installed
	// through these providers or the global ones. Attributes follow the
	// stable database conventions: db.system.name=redis, and
	// db.client.connection.pool.name = ClientName, or the first address
	// when ClientName is empty. Keys, values and credentials are never
	// recorded.

	// MeterProvider receives the client's metrics. Nil: the global
	// provider (otel.GetMeterProvider), which discards them until the
	// application installs one. All instruments are observable: they are
	// read from Stats once per collection, in a single callback
	// registered by New (not NewFromBackend) and removed by Close, so
	// metrics cost nothing on the call path. Instruments:
	// db.client.connection.count ({connection}, attribute
	// db.client.connection.state = idle or used; a multiplexed
	// connection counts as used), db.client.connection.max
	// ({connection}), db.client.connection.pending_requests ({request}),
	// redisx.pool.acquire.wait (s, the total time callers waited for a
	// pooled connection, in place of the conventions'
	// db.client.connection.wait_time histogram, which would cost a
	// measurement per call), redisx.cluster.redirects,
	// redisx.cluster.topology_refreshes, redisx.near.hits,
	// redisx.near.misses, redisx.near.invalidations, redisx.near.bytes
	// (By), redisx.loads, redisx.loads.shared and redisx.stale_served.
	MeterProvider metric.MeterProvider
	// TracerProvider, when set, traces every call of Get, Set, Del, MGet,
	// MSet, GetOrLoad and Do with a client span named after the
	// operation ("GET", "MGET", …; for Do the uppercased command name),
	// with db.system.name, db.operation.name, server.address and
	// server.port (of the first address), and db.operation.batch.size
	// for Del, MGet and MSet. Errors are recorded on the span, except a
	// miss (ErrNotFound). Nil: no tracing at all. Unlike metrics, tracing
	// does not fall back to the global provider, because starting a span
	// allocates on every call even when the global provider samples
	// nothing, which would break this package's bound of at most two
	// allocations per Get; set it (for instance to
	// otel.GetTracerProvider()) to opt in.
	TracerProvider trace.TracerProvider
}

// config validates o and turns it into the settings strategies share.
func (o *Options) config() (strategy.Config, error) {
	cfg := strategy.Config{
		Addrs:        append([]string(nil), o.Addrs...),
		Username:     o.Username,
		Password:     o.Password,
		DB:           o.DB,
		TLS:          o.TLS,
		ClientName:   o.ClientName,
		DialTimeout:  o.DialTimeout,
		ReadTimeout:  o.ReadTimeout,
		WriteTimeout: o.WriteTimeout,
	}
	if len(cfg.Addrs) == 0 {
		cfg.Addrs = []string{"127.0.0.1:6379"}
	}
	for _, a := range cfg.Addrs {
		if _, _, err := net.SplitHostPort(a); err != nil {
			return cfg, fmt.Errorf("%w: address %q is not host:port", ErrInvalidArgument, a)
		}
	}
	if cfg.DB < 0 {
		return cfg, fmt.Errorf("%w: DB %d is negative", ErrInvalidArgument, cfg.DB)
	}
	if cfg.Password == "" && cfg.Username != "" {
		return cfg, fmt.Errorf("%w: Username without Password", ErrInvalidArgument)
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
