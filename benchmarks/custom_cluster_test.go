package benchmarks_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redisx-go/kit/benchmarks"
	"github.com/redisx-go/kit/internal/cluster"
	"github.com/redisx-go/kit/internal/launcher"
	"github.com/redisx-go/kit/strategy"
)

// runEveryOp runs a custom workload of every op, with a TTL, on the
// targets given and fails a cell that failed.
func runEveryOp(t *testing.T, s benchmarks.Servers, targets ...benchmarks.Target) {
	t.Helper()
	c := custom(t, "get:40,set:20,del:10,mget:15,mset:15", "zipf:0.99", "64:80,4096:20", 2000)
	c.Batch, c.TTL, c.Cluster = 20, time.Minute, s.Cluster != nil
	p := benchmarks.DefaultPlan()
	p.Levels, p.Duration, p.Warmup, p.Repeats = []int{4}, 50*time.Millisecond, 10*time.Millisecond, 1
	p.Workloads = []benchmarks.Workload{c.Workload()}
	p.Targets = targets
	var progress strings.Builder
	rep, err := benchmarks.Run(context.Background(), p, s, &progress)
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, progress.String())
	}
	if len(rep.Cells) != len(targets) {
		t.Fatalf("%d cells; want %d targets at one level\n%s", len(rep.Cells), len(targets), progress.String())
	}
	for _, cell := range rep.Cells {
		if cell.Failed || cell.Ops == 0 {
			t.Errorf("%s: %d ops, %d errors, first %q; want ops and no error", cell.Target, cell.Ops, cell.Errors, cell.FirstError)
		}
	}
	if !strings.Contains(progress.String(), "deleted") {
		t.Errorf("no cleanup in the progress:\n%s", progress.String())
	}
}

func TestCustomWorkloadRunsEveryOpOnEveryTarget(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	runEveryOp(t, benchmarks.Servers{Standalone: srv.Addr()},
		benchmarks.StrategyTarget("multiplexed-1", strategy.Multiplexed{}),
		benchmarks.StrategyTarget("pool-8", strategy.Pool{Size: 8}),
		benchmarks.RueidisTarget(), benchmarks.RedigoPoolTarget(8), benchmarks.GoRedisTarget())
}

func TestCustomWorkloadRunsOnAClusterWithEveryOpAndTarget(t *testing.T) {
	c := benchmarks.DefaultCustom()
	// Keys hashed as a service's are: no hash tag, so over the slots.
	slots := map[int]bool{}
	for i := range c.Keys {
		slots[cluster.Slot(benchmarks.KeyPrefix+"custom:"+strconv.Itoa(i))] = true
	}
	if len(slots) < 1500 {
		t.Errorf("the %d keys lie in %d slots; want them spread", c.Keys, len(slots))
	}

	runEveryOp(t, benchmarks.Servers{Cluster: clusterSeeds(t)},
		benchmarks.StrategyTarget("multiplexed-1", strategy.Multiplexed{}),
		benchmarks.StrategyTarget("pool-8", strategy.Pool{Size: 8}),
		benchmarks.StrategyTarget("slotgrouped", strategy.SlotGrouped{}),
		benchmarks.RueidisTarget(), benchmarks.GoRedisTarget())
}
