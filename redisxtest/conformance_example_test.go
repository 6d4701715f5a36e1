package redisxtest_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/redisx-go/kit/redisxtest"
	"github.com/redisx-go/kit/strategy"
)

// counting is a strategy of the kind a user might write: a decorator
// that counts the reads of any inner strategy. RunConformance holds it to
// the contract every strategy of this module meets.
type counting struct {
	inner strategy.Strategy
	gets  *atomic.Int64
}

// backend forwards every capability of the inner backend; Get is counted.
type backend interface {
	strategy.Backend
	strategy.MultiGetter
	strategy.MultiSetter
	strategy.Doer
	strategy.Statser
}

type countingBackend struct {
	backend
	gets *atomic.Int64
}

func (c counting) Open(ctx context.Context, cfg strategy.Config) (strategy.Backend, error) {
	b, err := c.inner.Open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return countingBackend{backend: b.(backend), gets: c.gets}, nil
}

func (c countingBackend) Get(ctx context.Context, key string) ([]byte, error) {
	c.gets.Add(1)
	return c.backend.Get(ctx, key)
}

func (c countingBackend) Unwrap() strategy.Backend { return c.backend }

// TestRunConformanceOnAStrategyOfYourOwn is what a user writes to check a
// strategy of their own.
func TestRunConformanceOnAStrategyOfYourOwn(t *testing.T) {
	srv := redisxtest.Start(t, redisxtest.Options{})
	var gets atomic.Int64
	o := srv.Options()
	o.Strategy = counting{inner: strategy.Multiplexed{}, gets: &gets}
	redisxtest.RunConformance(t, o)
	if gets.Load() == 0 {
		t.Error("the suite never called the strategy's Get")
	}
}
