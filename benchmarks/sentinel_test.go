package benchmarks_test

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redisx-go/kit/benchmarks"
	"github.com/redisx-go/kit/benchmarks/target"
	"github.com/redisx-go/kit/internal/launcher"
	"github.com/redisx-go/kit/redisx"
)

// getCalls is the number of GETs s has served (INFO commandstats).
func getCalls(t *testing.T, s *launcher.Server) int {
	t.Helper()
	info, err := s.CLI(context.Background(), "INFO", "commandstats")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`cmdstat_get:calls=(\d+)`).FindStringSubmatch(info)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// A run through Sentinel measures the master the sentinels name, with
// every target: redisx, rueidis and go-redis through the sentinels,
// redigo's pool at that master; a read_from=replica target reads from the
// replicas; the answer is a redis-sentinel URL.
func TestRunThroughSentinel(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	g := launcher.SentinelForTest(t, launcher.SentinelOptions{Replicas: 2})
	master, err := g.Master(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sentinels := strings.Join(g.SentinelAddrs(), ",")
	replica, err := target.URLTarget("replica", "redis-sentinel://"+sentinels+"/"+g.Name()+"?read_from=replica")
	if err != nil {
		t.Fatal(err)
	}
	p := tinyPlan("get")
	p.Levels = []int{2}
	p.Targets = append(p.Targets, target.RueidisTarget(), target.GoRedisTarget(), target.GoRedisAutoPipelineTarget(),
		target.RedigoPoolTarget(4), replica)

	replicaGets := func() (n int) {
		for _, s := range g.Nodes() {
			if s.Addr() != master.Addr() {
				n += getCalls(t, s)
			}
		}
		return n
	}
	before := replicaGets()
	var progress strings.Builder
	s := benchmarks.Servers{Sentinel: &redisx.SentinelOptions{Master: g.Name(), Addrs: g.SentinelAddrs()}}
	rep, err := benchmarks.Run(ctx, p, s, &progress)
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, progress.String())
	}
	if rep.Machine.Standalone != master.Addr() || rep.Machine.Sentinel != g.Name()+"@"+sentinels {
		t.Errorf("report says standalone %q through %q; want %s through %s@%s", rep.Machine.Standalone, rep.Machine.Sentinel, master.Addr(), g.Name(), sentinels)
	}
	measured := map[string]bool{}
	for _, c := range rep.Cells {
		measured[c.Target] = true
		if c.Errors > 0 {
			t.Errorf("%s at %d: %d errors, the first: %s", c.Target, c.Concurrency, c.Errors, c.FirstError)
		}
	}
	for _, tg := range p.Targets {
		if !measured[tg.Name] {
			t.Errorf("target %s not measured\n%s", tg.Name, progress.String())
		}
	}
	if after := replicaGets(); after <= before {
		t.Errorf("the replicas served %d GETs before the run and %d after: the read_from=replica target did not read there", before, after)
	}
	if a := rep.Answer; a == nil || a.URL != "" && !strings.HasPrefix(a.URL, "redis-sentinel://"+sentinels+"/"+g.Name()) {
		t.Errorf("answer %+v; want a redis-sentinel URL of %s@%s", a, g.Name(), sentinels)
	}
}
