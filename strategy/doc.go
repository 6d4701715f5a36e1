// Package strategy holds the contract between the redisx facade and the
// client strategies behind it, and the transports themselves.
//
// A user picks a strategy value — [Multiplexed], [Pool], [GoRedis] — and
// hands it to redisx.New as Options.Strategy. The facade calls the value's
// Open method with the shared connection settings ([Config]) and gets a
// running [Backend]. Every strategy value is a plain struct whose zero value
// is a good default.
//
// # The contract
//
// [Backend] is small: Get, Set, Del and Close. Everything else is an
// optional interface the facade discovers by type assertion, with a
// documented fallback when a backend lacks it: [MultiGetter],
// [MultiSetter], [Doer], [Statser] and [Unwrapper]. Decorators (such as
// localcache.Near) wrap any Backend and expose the wrapped one through
// Unwrap.
//
// # Choosing
//
//   - [Multiplexed] shares one auto-pipelined connection per node among all
//     goroutines (the Lettuce model). It wins at low and moderate
//     concurrency and uses the fewest connections.
//   - [Pool] lends each call a connection of its own from a jackc/puddle
//     pool (the Jedis model): a blocking write and read on the caller's
//     goroutine.
//   - [GoRedis] adopts a go-redis client a service already has.
//
// The benchmarks in the benchmarks package measure where the curves cross on
// your own server.
//
// # Errors
//
// Errors returned by backends wrap the sentinels of this package
// ([ErrNotFound], [ErrClosed], [ErrInvalidArgument], [ErrConnection],
// [ErrUnsupported]); the redisx package re-exports them. Errors never
// contain values or passwords.
package strategy
