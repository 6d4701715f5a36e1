package benchmarks_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redisx-go/kit/benchmarks"
	"github.com/redisx-go/kit/benchmarks/target"
	"github.com/redisx-go/kit/benchmarks/workload"
	"github.com/redisx-go/kit/internal/launcher"
	"github.com/redisx-go/kit/internal/topology"
	"github.com/redisx-go/kit/strategy"
)

// runEveryOp runs a custom workload of every op, with a TTL, on the
// targets given and fails a cell that failed.
func runEveryOp(t *testing.T, s benchmarks.Servers, targets ...benchmarks.Target) {
	t.Helper()
	c := workload.DefaultCustom()
	c.Mix = workload.Mix{{Op: "get", Weight: 40}, {Op: "set", Weight: 20}, {Op: "del", Weight: 10}, {Op: "mget", Weight: 15}, {Op: "mset", Weight: 15}}
	c.KeyDist = workload.KeyDist{Kind: workload.DistZipf, S: 0.99}
	c.Value = workload.ValueSpec{Sizes: []workload.SizeWeight{{Bytes: 64, Weight: 80}, {Bytes: 4096, Weight: 20}}}
	c.Keys, c.Batch, c.TTL, c.Cluster = 2000, 20, time.Minute, s.Cluster != nil
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
		target.StrategyTarget("multiplexed", strategy.Multiplexed{}),
		target.StrategyTarget("pool-8", strategy.Pool{Size: 8}),
		target.RueidisTarget(), target.RedigoPoolTarget(8), target.GoRedisTarget(),
		target.GoRedisAutoPipelineTarget())
}

func TestCustomWorkloadRunsOnAClusterWithEveryOpAndTarget(t *testing.T) {
	c := workload.DefaultCustom()
	// Keys hashed as a service's are: no hash tag, so over the slots.
	slots := map[int]bool{}
	for i := range c.Keys {
		slots[topology.Slot(benchmarks.KeyPrefix+"custom:"+strconv.Itoa(i))] = true
	}
	if len(slots) < 1500 {
		t.Errorf("the %d keys lie in %d slots; want them spread", c.Keys, len(slots))
	}

	runEveryOp(t, benchmarks.Servers{Cluster: clusterSeeds(t)},
		target.StrategyTarget("multiplexed", strategy.Multiplexed{}),
		target.StrategyTarget("pool-8", strategy.Pool{Size: 8}),
		target.StrategyTarget("slotgrouped", strategy.SlotGrouped{}),
		target.RueidisTarget(), target.GoRedisTarget(), target.GoRedisAutoPipelineTarget())
}
