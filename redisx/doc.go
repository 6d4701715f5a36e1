// Package redisx is the cache API of redisx kit: Get, AppendGet, Set, Del,
// MGet, MSet and GetOrLoad over Redis, plus Do for any other command,
// DoMulti for pipelines, Watch for optimistic transactions, Subscribe,
// PSubscribe and SSubscribe for Pub/Sub, and Ping for health checks,
// backed by an interchangeable client strategy chosen with one option.
//
//	c, err := redisx.New(ctx, redisx.Options{
//		Addrs:    []string{"127.0.0.1:6379"},
//		Strategy: strategy.Pool{Size: 32}, // zero: strategy.Multiplexed{}
//	})
//	if err != nil { … }
//	defer c.Close()
//
// # Strategies
//
// The strategy values live in package strategy: Multiplexed (one
// auto-pipelined connection per node shared by every goroutine, the
// default), Pool (a connection per call from a bounded pool), SlotGrouped
// (multi-key calls grouped per cluster node) and goredis.Strategy (an existing
// go-redis client); localcache.Near puts a near-cache in front of any of
// them. ParseURL reads the strategy from a URL so that a configuration
// file can switch it without a code change. The benchmarks package
// measures which one wins at your concurrency.
//
// # Ownership and contexts
//
// What a call returns is the caller's to modify and keep, whatever the
// strategy; what a caller passes in (a value, AppendGet's buffer) is not
// kept once the call returns. Every call honours its context and returns
// when it ends. Work shared by several callers — a GetOrLoad load — never
// runs under one caller's context: each caller gives up on its own, and
// the shared work stops when no one waits for it any more (or at
// Options.LoadTimeout).
//
// # Errors
//
// Errors wrap the sentinels below, compared with errors.Is: ErrNotFound
// for a missing key, ErrClosed after Close, ErrInvalidArgument for input
// refused before anything is sent, ErrConnection for network and protocol
// failures, ErrUnsupported for commands a strategy cannot run, ErrLoad
// for a GetOrLoad loader's failure. A server's error reply is wrapped
// too and can be extracted with errors.As into a redis.Error (redigo's
// type). Their text starts with "redisx: " once. A call checks, in this
// order, its input (ErrInvalidArgument), the client (ErrClosed) and its
// context: a call whose context is already done returns the context's
// error as it is, without sending anything, even where no round trip
// would be needed. No error contains a value or a password.
//
// # Observability
//
// Every call is measured in the db.client.operation.duration histogram
// of the OpenTelemetry conventions, on Options.MeterProvider or the
// global provider, where it costs one check and no allocation until an
// SDK is installed; connection, pool, cluster and near-cache figures are
// observable instruments read from Stats. Spans are opt-in, through
// Options.TracerProvider. See Options.MeterProvider for names, attributes
// and costs.
package redisx
