// Package redisx is the cache API of redisx kit: Get, Set, Del, MGet,
// MSet and GetOrLoad over Redis, backed by an interchangeable client
// strategy chosen with one option.
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
// default), Pool (a connection per call from a bounded pool) and GoRedis
// (an existing go-redis client). ParseURL reads the strategy from a URL so
// that a configuration file can switch it without a code change. The
// benchmarks package measures which one wins at your concurrency.
//
// # Errors
//
// Errors wrap the sentinels below, compared with errors.Is: ErrNotFound
// for a missing key, ErrClosed after Close, ErrInvalidArgument for input
// refused before anything is sent, ErrConnection for network and protocol
// failures, ErrUnsupported for commands a strategy cannot run, ErrLoad
// for a GetOrLoad loader's failure. A server's error reply is wrapped
// too and can be extracted with errors.As into a redis.Error (redigo's
// type). Context errors are returned as they are. No error contains a
// value or a password.
package redisx
