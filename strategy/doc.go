// Package strategy holds the contract between the redisx facade and the
// client strategies behind it, and the option types of this module's
// strategies; their machinery lives in internal packages.
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
// optional interface the facade discovers by type assertion, with a
// documented fallback when a backend lacks it: [MultiGetter],
// [MultiSetter], [Doer], [MultiDoer] (pipelines), [Dedicator]
// (transactions), [SessionDialer] (Pub/Sub), [NodeDoer], [Statser] and
// [Unwrapper]. Decorators (such as
// localcache.Near) wrap any Backend and expose the wrapped one through
// Unwrap.
//
// # Choosing
//
// [Multiplexed] shares a few auto-pipelined connections per node among
// all goroutines: a caller that finds one with nothing in flight uses it
// as a pooled connection would, and callers join the least loaded one's
// pipeline when every one is busy (the Jedis model when callers are few,
// the Lettuce model under load; Conns fixes one connection per key, the
// Lettuce model throughout); [Pool] lends each call a connection of its
// own (the Jedis model); [SlotGrouped] wraps either and sends
// multi-key calls as one pipelined round trip per node, nodes in parallel
// (the Codis proxy model). The benchmarks package measures where the
// curves cross on your own server.
//
// # Redis Cluster
//
// Multiplexed and Pool detect a cluster from the first seed that answers
// (CLUSTER SHARDS, or CLUSTER SLOTS before Redis 7) and open one node —
// shared connections or a pool — per master. Keys are routed by slot
// (CRC16 with {hash tags}); MOVED updates the slot map, ASK sends ASKING
// and the command to the importing node; the map is reloaded, single
// flighted, on redirects, on connection failures and every 15 s. Backends
// do not retry: TRYAGAIN, CLUSTERDOWN, LOADING and connection failures
// are returned ([Temporary] and [Unsent] tell what they allow), and
// redisx.Client retries them by its one policy (redisx.Retry), so a
// master failover costs the calls in its window, not an outage. A
// cross-slot MGet, MSet or Del on a plain transport runs one command per
// slot, one after another; SlotGrouped groups them per node instead.
//
// Do routes a command by its keys as the server's command table defines
// them (EVALSHA sha 1 key goes to the master of key), refuses keys in
// different slots with ErrInvalidArgument, sends keyless commands such as
// DBSIZE, KEYS, FLUSHALL and SCRIPT LOAD to every master and combines the
// replies, and refuses with ErrUnsupported those each master answers for
// itself (SCAN, INFO): [NodeDoer] runs them on a master the caller names.
// Nodes that leave the slot map (a demoted master, a seed that is no
// master) are closed once their calls in flight end. With Config.TLS the
// client dials the nodes' TLS ports.
//
// # Errors
//
// Errors returned by backends wrap the sentinels of this package
// ([ErrNotFound], [ErrClosed], [ErrInvalidArgument], [ErrConnection],
// [ErrUnsupported], [ErrAuth]); the redisx package re-exports them.
// Errors never contain values or passwords.
package strategy
