package verdict_test

import (
	"slices"
	"testing"

	"github.com/redisx-go/kit/benchmarks/verdict"
)

func TestSLOWinnerIsTheRedisxTargetThatHeldWhereTheOthersFailed(t *testing.T) {
	rs := []verdict.SLOResult{
		{Workload: "get", Target: "multiplexed-1", MaxRate: 120_000, FirstFailingRate: 126_000, Confirmed: true},
		{Workload: "get", Target: "pool-32", MaxRate: 100_000, FirstFailingRate: 105_000, Confirmed: true},
		{Workload: "get", Target: "rueidis", MaxRate: 200_000, FirstFailingRate: 210_000, Confirmed: true},
		{Workload: "mget", Target: "slotgrouped", MaxRate: 0, FirstFailingRate: 100},
		// Within the search's resolution of each other: no winner.
		{Workload: "setget", Target: "multiplexed-1", MaxRate: 50_000, FirstFailingRate: 52_000, Confirmed: true},
		{Workload: "setget", Target: "pool-32", MaxRate: 49_000, FirstFailingRate: 51_000, Confirmed: true},
		// The leader's rate did not hold in its re-run: no winner.
		{Workload: "values", Target: "multiplexed-1", MaxRate: 50_000, FirstFailingRate: 52_000},
		{Workload: "values", Target: "pool-32", MaxRate: 10_000, FirstFailingRate: 11_000, Confirmed: true},
	}
	verdict.MarkSLOWinners(rs, map[string]bool{"rueidis": true})
	var winners []string
	for _, r := range rs {
		if r.Winner {
			winners = append(winners, r.Workload+" "+r.Target)
		}
	}
	if !slices.Equal(winners, []string{"get multiplexed-1"}) {
		t.Fatalf("winners %v; want get multiplexed-1 only (a peer never wins, nor a rate of 0, a tie or an unconfirmed rate)", winners)
	}
	if h := rs[0].Headroom; h < 0.199 || h > 0.201 {
		t.Errorf("headroom = %v; want 0.20 over pool-32", h)
	}
}
