// Package kit is redisx kit: one cache API for Go services over
// interchangeable Redis client strategies. The module also holds the
// benchmarks that show which strategy to choose at a given concurrency.
// This package holds documentation only.
//
// # Map of the module
//
//   - redisx: the facade services import — Client with Get, AppendGet,
//     Set, Del, MGet, MSet, GetOrLoad, Do and Ping; Options; ParseURL; the
//     errors.
//   - strategy: the contract between the facade and the transports
//     (Strategy, Backend, the optional interfaces, Capabilities and Find,
//     re-exporting Config, Stats, the errors) and the strategy values
//     Multiplexed, Pool and SlotGrouped, with Redis Cluster routing built
//     in; strategy/goredis adapts a go-redis client (only its importers link
//     go-redis); strategy/strategytest checks any Backend against the
//     contract, fault scenarios included.
//   - backend: the values the contract passes around (Config, Stats,
//     Result, Dedicated, NodeError, the errors), defined once and
//     documented in full there; strategy and redisx name them by aliases
//     whose doc comments list each type's fields and methods.
//   - localcache: Near, an in-process ristretto cache in front of any
//     strategy, kept coherent by Redis's invalidation messages.
//   - redisxtest: real redis-server processes for users' tests, and the
//     facade-level conformance suite.
//   - benchmarks: the measurement harness (the redisx-bench CLI, its
//     renderers in benchmarks/report, and its go test -bench suite),
//     comparing the strategies with rueidis, redigo and go-redis on the
//     user's own workload.
//   - examples: small runnable programs.
//   - internal: the transports (mux, pool) and their contract with what
//     routes over them (transport), cluster routing (cluster) and the
//     cluster's layout (topology), Sentinel (sentinel), the dial (dial),
//     commands as bytes and replies as values (wire) over the RESP codec
//     (resp), the command table (command), the errors' classification
//     (failure), URL parameter values (param), the launcher of real
//     redis-server processes and the fault proxy.
//
// # Choosing a strategy
//
// The curves cross. One shared, auto-pipelined connection
// (strategy.Multiplexed, the default) batches more the busier it gets and
// uses the fewest connections; a pool of blocking connections
// (strategy.Pool) gives each call a socket of its own. Which is faster at
// your concurrency, on your server, is a measurement: run `make bench` or
// `make bars` and read the ratios, then switch with one option:
//
//	redisx.New(ctx, redisx.Options{Strategy: strategy.Pool{Size: 32}})
//
// or with one URL parameter: redis://host:6379/0?strategy=pool&size=32.
package kit
