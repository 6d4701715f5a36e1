// Package strategy defines the client strategies behind the redisx facade.
// It holds the contract between the facade and the strategies, and the
// option types of this module's strategies; their machinery lives in
// internal packages.
//
// A user picks a strategy value — [Multiplexed], [Pool], [SlotGrouped],
// localcache.Near, goredis.Strategy — and hands it to redisx.New as
// Options.Strategy. The facade calls the value's Open method with the
// shared connection settings ([Config]) and gets a running [Backend].
// The values of this package are plain structs whose zero value is a
// good default.
//
// # The contract
//
// [Backend] is small: Get, Set, Del and Close. Everything else is an
// optional interface with a documented fallback when a backend lacks it:
// [Appender], [MultiGetter], [MultiSetter], [Doer], [MultiDoer]
// (pipelines), [Dedicator] (transactions), [SessionDialer] (Pub/Sub),
// [NodeDoer], [TTLGetter], [Statser], [SelfRetrier], [MasterFollower] and
// [Unwrapper]. They are discovered in one place: [Capabilities] finds them
// once and holds the fallbacks, [Find] walks the Unwrap chain for those a
// decorator need not implement. Decorators (such as localcache.Near) wrap
// any Backend and expose the wrapped one through Unwrap. The values the
// contract passes around — [Config], [Stats], [Result], [Dedicated],
// [NodeError], the errors — are defined in package backend, which the
// transports import too, and named here by aliases: go doc shows an
// alias's own comment only, so each of them lists the fields and methods
// of its type, one line each; backend documents them in full.
//
// # Choosing
//
// [Multiplexed] shares a few auto-pipelined connections per node among
// all goroutines: while callers are fewer than connections, a caller
// that finds one with nothing in flight uses it as a pooled connection
// would, and under load callers join a pipeline (the Jedis model when
// callers are few,
// the Lettuce model under load; Conns fixes one connection per key, the
// Lettuce model throughout); [Pool] lends each call a connection of its
// own (the Jedis model); [SlotGrouped] wraps either and sends
// multi-key calls as one pipelined round trip per node, nodes in parallel
// (the Codis proxy model). The benchmarks package measures where the
// curves cross on your own server.
//
// # Redis Cluster
//
// Multiplexed and Pool detect a cluster and route by slot, one node per
// master; redisx's package doc describes what that means for calls
// (redirects, reloads, retries, cross-slot keys, Do's routing).
//
// # Errors
//
// Errors returned by backends wrap the sentinels of this package
// ([ErrNotFound], [ErrClosed], [ErrInvalidArgument], [ErrConnection],
// [ErrUnsupported], [ErrAuth]); the redisx package re-exports them.
// Errors never contain values or passwords.
package strategy
