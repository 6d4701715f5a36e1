// Package kit is redisx kit: one cache API for Go services over
// interchangeable Redis client strategies, and the benchmarks that show
// which strategy to choose at a given concurrency. This package holds
// documentation only.
//
// # Map of the module
//
//   - redisx: the facade services import — Client with Get, AppendGet,
//     Set, Del, MGet, MSet, GetOrLoad, Do and Ping; Options; ParseURL; the
//     errors.
//   - strategy: the contract between the facade and the transports, and
//     the transports: Multiplexed, Pool, SlotGrouped, GoRedis, with Redis
//     Cluster routing built in.
//   - localcache: Near, an in-process ristretto cache in front of any
//     strategy, kept coherent by Redis's invalidation messages.
//   - benchmarks: the measurement harness and its go test -bench suite,
//     comparing the strategies with rueidis, redigo and go-redis.
//   - examples: small runnable programs.
//   - internal: the RESP codec of the hot path, the launcher that starts
//     real redis-server processes for tests and benchmarks, and the
//     conformance suite every strategy passes.
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
