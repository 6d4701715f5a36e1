package goredis_test

import (
	"context"
	"testing"

	redisv9 "github.com/redis/go-redis/v9"
	"github.com/redisx-go/kit/strategy"
	"github.com/redisx-go/kit/strategy/goredis"
	"github.com/redisx-go/kit/strategy/strategytest"
)

// TestGoRedisBackendContract runs the Backend-level suite, fault scenarios (R5)
// included, over a go-redis client made from the suite's settings as a
// service would make it: contexts' deadlines honoured
// (ContextTimeoutEnabled), the suite's timeouts, and the client closed
// with the backend.
func TestGoRedisBackendContract(t *testing.T) {
	strategytest.RunBackend(t, func(ctx context.Context, cfg strategy.Config) (strategy.Backend, error) {
		rdb := redisv9.NewClient(&redisv9.Options{
			Addr:                  cfg.Addrs[0],
			DialTimeout:           cfg.DialTimeout,
			ReadTimeout:           cfg.ReadTimeout,
			WriteTimeout:          cfg.WriteTimeout,
			ContextTimeoutEnabled: true,
			MaxRetries:            -1,
			DisableIdentity:       true,
		})
		b, err := goredis.Strategy{Client: rdb, CloseClient: true}.Open(ctx, cfg)
		if err != nil {
			rdb.Close()
			return nil, err
		}
		return b, nil
	})
}
