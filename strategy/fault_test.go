package strategy_test

import (
	"testing"

	"github.com/redisx-go/kit/internal/faultproxy"
	"github.com/redisx-go/kit/internal/faultproxy/faulttest"
	"github.com/redisx-go/kit/strategy"
)

// The fault tests (R5): each scenario of package faulttest, through a
// fault-injecting proxy, for each transport.

var faultStrategies = []struct {
	name string
	s    strategy.Strategy
}{
	{"multiplexed", strategy.Multiplexed{}},
	{"pool-size=4", strategy.Pool{Size: 4}},
}

func TestFaultSlowServer(t *testing.T) {
	for _, tc := range faultStrategies {
		t.Run(tc.name, func(t *testing.T) { faulttest.SlowServer(t, tc.s) })
	}
}

func TestFaultHalfOpenConnection(t *testing.T) {
	for _, tc := range faultStrategies {
		t.Run(tc.name, func(t *testing.T) { faulttest.HalfOpen(t, tc.s) })
	}
}

func TestFaultHalfOpenAfterLongDeadline(t *testing.T) {
	for _, tc := range faultStrategies {
		t.Run(tc.name, func(t *testing.T) {
			faulttest.HalfOpenAfterLongDeadline(t, tc.s)
		})
	}
}

func TestFaultCutMidPipeline(t *testing.T) {
	for _, tc := range faultStrategies {
		for _, dir := range []faultproxy.Direction{faultproxy.Downstream, faultproxy.Upstream} {
			t.Run(tc.name+"/"+dir.String(), func(t *testing.T) { faulttest.CutMidPipeline(t, tc.s, dir) })
		}
	}
}

func TestFaultPoolExhaustion(t *testing.T) {
	faulttest.PoolExhaustion(t, strategy.Pool{Size: 2}, 2)
}

func TestFaultCloseWithBlockedCall(t *testing.T) {
	for _, tc := range faultStrategies {
		for _, blackhole := range []bool{false, true} {
			name := tc.name + "/blpop"
			if blackhole {
				name = tc.name + "/blackhole"
			}
			t.Run(name, func(t *testing.T) {
				faulttest.CloseWithBlockedCall(t, tc.s, blackhole)
			})
		}
	}
}
