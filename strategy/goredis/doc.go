// Package goredis adopts a go-redis client (github.com/redis/go-redis/v9)
// a service already has as a redisx strategy: [Strategy]. It is a package
// of its own so that only the programs that import it link go-redis; a
// service on strategy.Multiplexed or strategy.Pool does not.
package goredis
