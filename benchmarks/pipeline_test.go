package benchmarks_test

import (
	"context"
	"strings"
	"testing"

	"github.com/redisx-go/kit/benchmarks"
	"github.com/redisx-go/kit/benchmarks/target"
	"github.com/redisx-go/kit/internal/launcher"
)

// The pipeline workloads run on redisx's strategies and on the peers
// (rueidis DoMulti, go-redis Pipelined), every GET reading back a value
// of the size written.
func TestPipelineWorkloadsRunOnEveryClient(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	p := tinyPlan("pipeline")
	p.Levels = []int{4}
	p.Targets = append(p.Targets, target.RueidisTarget(), target.GoRedisTarget())
	var progress strings.Builder
	rep, err := benchmarks.Run(context.Background(), p, benchmarks.Servers{Standalone: srv.Addr()}, &progress)
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, progress.String())
	}
	seen := map[string]int{}
	for _, c := range rep.Cells {
		seen[c.Workload]++
		if c.Errors > 0 || c.QPS <= 0 {
			t.Errorf("%s %s: %d errors (%s), %.0f ops/s", c.Workload, c.Target, c.Errors, c.FirstError, c.QPS)
		}
	}
	if seen["pipeline/10"] != len(p.Targets) || seen["pipeline/100"] != len(p.Targets) {
		t.Errorf("cells by workload %v; want %d of pipeline/10 and of pipeline/100", seen, len(p.Targets))
	}
}
