package strategy_test

import (
	"context"
	"testing"

	"github.com/redisx-go/kit/strategy"
	"github.com/redisx-go/kit/strategy/strategytest"
)

// TestBackendContract runs the Backend-level suite, fault scenarios (R5)
// included, for each transport on a standalone server, and for
// SlotGrouped over one of them: the faults meet Grouped's layer and then
// the transport's node, whose handling of them the transport's own run
// checks, so SlotGrouped over Pool would run no line the others do not.
func TestBackendContract(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    strategy.Strategy
	}{
		{"multiplexed", strategy.Multiplexed{}},
		{"pool-size=4", strategy.Pool{Size: 4}},
		{"slot-grouped", strategy.SlotGrouped{}},
	} {
		t.Run(tc.name, func(t *testing.T) { strategytest.RunBackend(t, tc.s.Open) })
	}
}

// bare hides every optional interface of the Backend it wraps, so that
// the fallbacks of strategy.Capabilities run against a real server.
type bare struct{ strategy.Backend }

// TestFallbacksOnARealServer runs the contract checks over a Backend
// that has none of the optional interfaces.
func TestFallbacksOnARealServer(t *testing.T) {
	strategytest.RunContract(t, func(ctx context.Context, cfg strategy.Config) (strategy.Backend, error) {
		b, err := strategy.Multiplexed{}.Open(ctx, cfg)
		if err != nil {
			return nil, err
		}
		return bare{b}, nil
	})
}
