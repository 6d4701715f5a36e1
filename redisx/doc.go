// Package redisx is the cache API of redisx kit over Redis. It offers Get,
// AppendGet, Set, Del, MGet, MSet and GetOrLoad, plus Do for any other
// command, DoMulti for pipelines, Watch for optimistic transactions,
// Subscribe, PSubscribe and SSubscribe for Pub/Sub, and Ping for health
// checks, backed by an interchangeable client strategy chosen with one
// option.
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
// The strategy values live in package strategy: Multiplexed (a few
// auto-pipelined connections per node shared by every goroutine, used as
// a pool's when callers are few and pipelined under load; the default), Pool (a connection per call from a bounded pool), SlotGrouped
// (multi-key calls grouped per cluster node) and goredis.Strategy (an existing
// go-redis client); localcache.Near puts a near-cache in front of any of
// them. ParseURL reads the strategy from a URL so that a configuration
// file can switch it without a code change. The benchmarks package
// measures which one wins at your concurrency.
//
// # Redis Cluster
//
// Multiplexed and Pool detect a cluster from the first seed that answers
// (CLUSTER SHARDS, or CLUSTER SLOTS before Redis 7) and open one node —
// shared connections or a pool — per master. Keys are routed by slot
// (CRC16 with {hash tags}); MOVED updates the slot map, ASK sends ASKING
// and the command to the importing node; the map is reloaded, single
// flighted, on redirects, on connection failures (by any call: Get, MGet,
// DoMulti, Ping…; then again, every 100–400 ms, until the map changes,
// so that a master's successor is known within moments of its
// promotion) and every 15 s. Backends
// do not retry: TRYAGAIN, CLUSTERDOWN, LOADING and connection failures
// are returned (strategy.Temporary and strategy.Unsent tell what they
// allow), and Client retries them by its one policy (Retry), so a master
// failover costs the calls in its window, not an outage. A cross-slot
// MGet, MSet or Del on a plain transport runs one command per slot, one
// after another; SlotGrouped groups them per node instead.
//
// Do routes a command by its keys as the server's command table defines
// them (EVALSHA sha 1 key goes to the master of key), refuses keys in
// different slots with ErrInvalidArgument, sends keyless commands such as
// DBSIZE, KEYS, FLUSHALL and SCRIPT LOAD to every master and combines the
// replies, and refuses with ErrUnsupported those each master answers for
// itself (SCAN, INFO): the backend's strategy.NodeDoer (Client.Backend)
// runs them on a master the caller names. Nodes that leave the slot map
// (a demoted master, a seed that is no master) are closed once their calls
// in flight end. With Options.TLS the client dials the nodes' TLS ports.
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
