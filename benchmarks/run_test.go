package benchmarks_test

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	redigo "github.com/gomodule/redigo/redis"
	"github.com/redisx-go/kit/benchmarks"
	"github.com/redisx-go/kit/benchmarks/target"
	"github.com/redisx-go/kit/benchmarks/verdict"
	"github.com/redisx-go/kit/internal/launcher"
	"github.com/redisx-go/kit/strategy"
)

// tinyPlan is a plan of a few short samples on two redisx targets.
func tinyPlan(workloads ...string) benchmarks.Plan {
	p := benchmarks.DefaultPlan()
	p.Levels = []int{1, 3}
	// Two samples and no sequential sampling: a run of fixed size.
	p.Duration, p.Warmup, p.Repeats, p.MaxRepeats = 30*time.Millisecond, 10*time.Millisecond, 2, 2
	p.Targets = []benchmarks.Target{
		target.StrategyTarget("multiplexed", strategy.Multiplexed{}),
		target.StrategyTarget("pool-4", strategy.Pool{Size: 4}),
	}
	if err := p.SelectWorkloads(workloads); err != nil {
		panic(err)
	}
	for i := range p.Workloads {
		p.Workloads[i].Levels, p.Workloads[i].Targets = nil, nil
	}
	return p
}

func dbsize(t *testing.T, s *launcher.Server) string {
	t.Helper()
	n, err := s.CLI(context.Background(), "DBSIZE")
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestRunMeasuresEveryCellAndCleansUp(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	p := tinyPlan("get", "mget")
	var progress strings.Builder
	rep, err := benchmarks.Run(context.Background(), p, benchmarks.Servers{Standalone: srv.Addr()}, &progress)
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, progress.String())
	}
	if rep.Partial || rep.Version != verdict.ReportVersion || rep.Machine.RedisVersion == "" || rep.Machine.GOMAXPROCS == 0 {
		t.Errorf("report header: partial %v, version %d, machine %+v", rep.Partial, rep.Version, rep.Machine)
	}
	if _, err := os.Stat("/proc/cpuinfo"); err == nil && rep.Machine.CPUModel == "" {
		t.Errorf("Machine.CPUModel is empty; want the processor of /proc/cpuinfo")
	}
	// 2 samples a side can never reach p < 0.05: the report says so.
	if len(rep.Warnings) != 1 || !strings.Contains(rep.Warnings[0], "cannot reach significance") ||
		!strings.Contains(rep.Warnings[0], "at least 4") || !strings.Contains(progress.String(), "warning: 2 samples") {
		t.Errorf("Warnings = %q; want one saying 2 samples cannot reach significance (4 needed)", rep.Warnings)
	}
	if len(rep.Skipped) != 1 || !strings.Contains(rep.Skipped[0], "mget") {
		t.Errorf("Skipped = %q; want mget, which needs a cluster", rep.Skipped)
	}
	if len(rep.Cells) != 4 {
		t.Fatalf("%d cells; want 2 targets × 2 levels of get", len(rep.Cells))
	}
	for _, c := range rep.Cells {
		if c.Workload != "get" || c.Failed || c.Errors != 0 || c.Samples != 2 || len(c.QPSSamples) != 2 || c.Ops == 0 {
			t.Errorf("cell %+v: want get, 2 samples, no error", c)
		}
		if c.QPS <= 0 || c.QPSLow > c.QPS || c.QPSHigh < c.QPS || c.P50ms <= 0 || c.P99ms < c.P50ms || c.MaxMs < c.P99ms {
			t.Errorf("cell %s/%d: QPS %v [%v, %v], p50 %v p99 %v max %v", c.Target, c.Concurrency, c.QPS, c.QPSLow, c.QPSHigh, c.P50ms, c.P99ms, c.MaxMs)
		}
		if c.AllocsPerOp <= 0 || c.CPUPerOp <= 0 {
			t.Errorf("cell %s/%d: %v allocs/op, %v µs CPU/op; want both measured", c.Target, c.Concurrency, c.AllocsPerOp, c.CPUPerOp)
		}
		switch {
		case c.Target == "multiplexed" && c.Concurrency == 1 && (c.Conns != 1 || c.Lanes != 1):
			// The adaptive lanes: one caller, one connection.
			t.Errorf("multiplexed at 1: the server saw %d connections, %d lanes reported; want 1", c.Conns, c.Lanes)
		case c.Target == "multiplexed" && (c.Lanes < 1 || c.Lanes > c.Concurrency):
			t.Errorf("multiplexed at %d: %d lanes reported; want 1..%d", c.Concurrency, c.Lanes, c.Concurrency)
		case c.Target == "multiplexed" && (c.Conns < 1 || c.Conns > c.Concurrency):
			t.Errorf("multiplexed at %d: the server saw %d connections; want 1..%d", c.Concurrency, c.Conns, c.Concurrency)
		case c.Target == "pool-4" && (c.Conns < 1 || c.Conns > c.Concurrency):
			t.Errorf("pool-4 at %d: the server saw %d connections; want 1..%d", c.Concurrency, c.Conns, c.Concurrency)
		}
	}
	if len(rep.Recommendations) != 2 {
		t.Fatalf("recommendations = %+v; want one per level", rep.Recommendations)
	}
	for _, r := range rep.Recommendations {
		// Two samples can never reach p < 0.05, nor an interval: undecided
		// by construction, naming no target.
		if r.Confidence != verdict.Undecided || r.Strategy != "" || r.URL != "" || r.Go != "" || len(r.Contenders) != 2 {
			t.Errorf("verdict %+v: want undecided between both targets with 2 samples, no URL", r)
		}
	}
	if n := dbsize(t, srv); n != "0" {
		t.Errorf("DBSIZE after Run = %s; want the harness's keys deleted", n)
	}
	if !strings.Contains(progress.String(), "ETA") {
		t.Errorf("progress = %q; want ETA lines", progress.String())
	}
}

func TestRunSamplesAnUndecidedVerdictsContendersAgain(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	p := tinyPlan("get")
	p.Levels, p.Repeats, p.MaxRepeats = []int{1}, 2, 6 // three looks, at 2, 4 and 6 samples
	peer := target.StrategyTarget("peer", strategy.Pool{Size: 4})
	peer.Peer = true
	p.Targets = append(p.Targets, peer)
	var progress strings.Builder
	rep, err := benchmarks.Run(context.Background(), p, benchmarks.Servers{Standalone: srv.Addr()}, &progress)
	if err != nil {
		t.Fatal(err)
	}
	if s := rep.Settings; s.MaxRepeats != 6 || s.Looks != 3 || s.LookAlpha != 0.05/3 {
		t.Errorf("settings: max repeats %d, %d looks at %v; want 6, 3 at 0.05/3", s.MaxRepeats, s.Looks, s.LookAlpha)
	}
	// Two samples a side decide nothing and make no interval: the
	// contenders get two more at least; the peer, never a contender,
	// keeps its two.
	for _, c := range rep.Cells {
		switch {
		case c.Peer && c.Samples != 2:
			t.Errorf("the peer has %d samples; want 2", c.Samples)
		case !c.Peer && (c.Samples < 4 || c.Samples > 6 || c.Samples%2 != 0 || len(c.QPSSamples) != c.Samples):
			t.Errorf("%s has %d samples (%d listed); want 4 or 6", c.Target, c.Samples, len(c.QPSSamples))
		}
	}
	if len(rep.Recommendations) != 1 || rep.Recommendations[0].Looks < 2 {
		t.Fatalf("recommendations %+v; want one, after 2 or 3 looks", rep.Recommendations)
	}
	if !strings.Contains(progress.String(), "get ×1: undecided between") || !strings.Contains(progress.String(), "up to 4 each (look 2 of 3)") {
		t.Errorf("progress does not say the verdict is sampled again:\n%s", progress.String())
	}
}

func TestRunNamesTheOnlyTargetWithItsURL(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	p := tinyPlan("get")
	p.Levels, p.Targets = []int{1}, p.Targets[1:] // pool-4
	rep, err := benchmarks.Run(context.Background(), p, benchmarks.Servers{Standalone: srv.Addr()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Recommendations) != 1 {
		t.Fatalf("recommendations = %+v; want one", rep.Recommendations)
	}
	r := rep.Recommendations[0]
	if r.Strategy != "pool-4" || r.Confidence != verdict.Significant || r.RunnerUp != "" {
		t.Errorf("verdict %+v; want pool-4, the only target", r)
	}
	if !strings.HasPrefix(r.URL, "redis://"+srv.Addr()+"?strategy=pool") || !strings.Contains(r.Go, srv.Addr()) {
		t.Errorf("verdict URL %q, Go %q; want them on %s", r.URL, r.Go, srv.Addr())
	}
	if a := rep.Answer; a == nil || a.Strategy != "pool-4" || a.URL == "" {
		t.Errorf("answer %+v; want pool-4 with its URL", a)
	}
}

func TestRunRefusesADatabaseWithOtherKeys(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	if _, err := srv.CLI(context.Background(), "SET", "someone:else", "v"); err != nil {
		t.Fatal(err)
	}
	p := tinyPlan("get")
	p.Levels = []int{1}
	_, err := benchmarks.Run(context.Background(), p, benchmarks.Servers{Standalone: srv.Addr()}, nil)
	if !errors.Is(err, benchmarks.ErrForeignKeys) {
		t.Fatalf("Run on a database with another key: %v; want ErrForeignKeys", err)
	}
	rep, err := benchmarks.Run(context.Background(), p, benchmarks.Servers{Standalone: srv.Addr(), Force: true}, nil)
	if err != nil || len(rep.Cells) != 2 {
		t.Fatalf("Run with Force: %v, %d cells; want 2", err, len(rep.Cells))
	}
	if v, err := srv.CLI(context.Background(), "GET", "someone:else"); err != nil || v != "v" {
		t.Errorf("the other key after Run = %q, %v; want it untouched", v, err)
	}
	if n := dbsize(t, srv); n != "1" {
		t.Errorf("DBSIZE after Run = %s; want only the other key left", n)
	}
}

func TestRunCancelledReturnsAPartialReport(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	p := tinyPlan("get")
	p.Duration, p.Repeats = 100*time.Millisecond, 6 // about 3 s in all
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The operation cancels the run after 150 calls: past the warm-ups
	// (10 ms of 1 ms calls each), inside the first round of samples.
	var calls atomic.Int64
	get := p.Workloads[0].Op
	p.Workloads[0].Op = func(c benchmarks.Client, workers int) benchmarks.Op {
		op := get(c, workers)
		return func(ctx context.Context, w, i int) error {
			if calls.Add(1) == 150 {
				cancel()
			}
			time.Sleep(time.Millisecond)
			return op(ctx, w, i)
		}
	}
	rep, err := benchmarks.Run(ctx, p, benchmarks.Servers{Standalone: srv.Addr()}, nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run cancelled: %v; want context.Canceled", err)
	}
	if !rep.Partial || len(rep.Cells) != 2 {
		t.Fatalf("partial %v, %d cells; want a partial report with the first level's 2 cells", rep.Partial, len(rep.Cells))
	}
	for _, c := range rep.Cells {
		if c.Concurrency != 1 || c.Samples < 1 || c.Samples >= 6 {
			t.Errorf("cell %s at %d: %d samples; want level 1 with the few measured before the cancel", c.Target, c.Concurrency, c.Samples)
		}
	}
	if n := dbsize(t, srv); n != "0" {
		t.Errorf("DBSIZE after a cancelled Run = %s; want the keys deleted anyway", n)
	}
}

func TestRunOpenLoopAndSLO(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	p := tinyPlan("get")
	p.Targets = p.Targets[:1]
	p.Levels = []int{4}
	p.Rate, p.Duration = 2000, 100*time.Millisecond
	slo, _ := benchmarks.ParseSLO("p99=1s") // generous: the machine is shared, this checks the mechanics
	p.SLO, p.SLOSteps, p.SLOBisects = &slo, 2, 1
	rep, err := benchmarks.Run(context.Background(), p, benchmarks.Servers{Standalone: srv.Addr()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Settings.Mode != "open" || rep.Settings.Rate != 2000 || rep.Settings.SLO != "p99=1s" {
		t.Errorf("settings %+v; want open loop at 2000/s, SLO p99=1s", rep.Settings)
	}
	if len(rep.Cells) != 1 || rep.Cells[0].Rate != 2000 || rep.Cells[0].Ops == 0 {
		t.Fatalf("cells %+v; want one open-loop cell at 2000/s", rep.Cells)
	}
	// 2000/s for 100 ms: 200 requests scheduled per sample.
	if c := rep.Cells[0]; c.Ops+c.Unsent != 400 || c.Errors != 0 {
		t.Errorf("ops %d + unsent %d over 2 samples, %d errors; want the 400 scheduled, no error", c.Ops, c.Unsent, c.Errors)
	}
	if len(rep.SLO) != 1 {
		t.Fatalf("SLO results %+v; want one", rep.SLO)
	}
	if s := rep.SLO[0]; s.Target != "multiplexed" || s.Concurrency != 4 || s.MaxRate <= 0 || s.BoundMs != 1000 || len(s.Probes) < 2 || !s.Winner {
		t.Errorf("SLO result %+v; want multiplexed-1 with 4 workers holding a rate, the winner", s)
	}
	if c := rep.Cells[0]; c.LatenessP99ms <= 0 || len(c.P99Samples) != 2 {
		t.Errorf("open-loop cell: lateness p99 %v ms, p99 samples %v; want the lateness measured, one p99 per sample", c.LatenessP99ms, c.P99Samples)
	}
}

// TestRunTargetThatFailsToOpen checks that a broken target fails its cells
// without stopping the others.
func TestRunTargetThatFailsToOpen(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	p := tinyPlan("get")
	p.Levels = []int{1}
	p.AddTarget(benchmarks.Target{Name: "broken", Open: func(context.Context, benchmarks.Env) (benchmarks.Client, error) {
		return nil, errors.New("no such thing")
	}})
	rep, err := benchmarks.Run(context.Background(), p, benchmarks.Servers{Standalone: srv.Addr()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var broken, ok int
	for _, c := range rep.Cells {
		if c.Target == "broken" && c.Failed && strings.Contains(c.FirstError, "no such thing") {
			broken++
		} else if !c.Failed {
			ok++
		}
	}
	if broken != 1 || ok != 2 {
		t.Errorf("cells %+v; want the broken one failed, the 2 others measured", rep.Cells)
	}
}

// watchedClient is a Client whose calls check, while the other targets
// run, that no isolated target is open.
type watchedClient struct {
	benchmarks.Client
	isolated     bool
	openIsolated *atomic.Int64 // isolated clients open now
	overlaps     *atomic.Int64 // calls of a target made while an isolated one was open
}

func (c *watchedClient) Get(ctx context.Context, key string) ([]byte, error) {
	if !c.isolated && c.openIsolated.Load() > 0 {
		c.overlaps.Add(1)
	}
	return c.Client.Get(ctx, key)
}

func (c *watchedClient) Close() error {
	if c.isolated {
		c.openIsolated.Add(-1)
	}
	return c.Client.Close()
}

func TestRunOpensIsolatedTargetsForTheirOwnSamplesOnly(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	p := tinyPlan("get")
	var openIsolated, overlaps, opens atomic.Int64
	watch := func(tg benchmarks.Target, isolated bool) benchmarks.Target {
		open := tg.Open
		tg.Isolated = isolated
		tg.Open = func(ctx context.Context, env benchmarks.Env) (benchmarks.Client, error) {
			c, err := open(ctx, env)
			if err != nil {
				return nil, err
			}
			if isolated {
				opens.Add(1)
				openIsolated.Add(1)
			}
			return &watchedClient{Client: c, isolated: isolated, openIsolated: &openIsolated, overlaps: &overlaps}, nil
		}
		return tg
	}
	p.Targets = []benchmarks.Target{
		watch(p.Targets[0], false),
		watch(target.StrategyTarget("isolated", strategy.Multiplexed{}), true),
	}
	var primes atomic.Int64
	p.Workloads[0].Prime = func(ctx context.Context, c benchmarks.Client) error {
		if wc, ok := c.(*watchedClient); !ok || !wc.isolated {
			t.Errorf("Prime ran on %T, not on the isolated target", c)
		}
		primes.Add(1)
		return nil
	}
	rep, err := benchmarks.Run(context.Background(), p, benchmarks.Servers{Standalone: srv.Addr()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range rep.Cells {
		if c.Failed || c.Samples != p.Repeats {
			t.Errorf("cell %s/%d: failed %v, %d samples; want %d", c.Target, c.Concurrency, c.Failed, c.Samples, p.Repeats)
		}
	}
	if want := int64(len(p.Levels) * p.Repeats); opens.Load() != want {
		t.Errorf("the isolated target was opened %d times; want once per sample, %d", opens.Load(), want)
	}
	if primes.Load() != opens.Load() {
		t.Errorf("Prime ran %d times for %d opens; want once after each", primes.Load(), opens.Load())
	}
	if openIsolated.Load() != 0 || overlaps.Load() != 0 {
		t.Errorf("%d isolated clients left open, %d calls of the other target made while one was open; want 0 and 0", openIsolated.Load(), overlaps.Load())
	}
}

func TestNearTargetsAreIsolated(t *testing.T) {
	for _, tg := range target.DefaultTargets() {
		if want := strings.HasPrefix(tg.Name, "near-"); tg.Isolated != want {
			t.Errorf("%s: Isolated = %v; want %v", tg.Name, tg.Isolated, want)
		}
	}
	u, err := target.URLTarget("mine", "redis://127.0.0.1:6379?strategy=pool&size=4&near=1MiB")
	if err != nil {
		t.Fatal(err)
	}
	if !u.Isolated {
		t.Error("a URL target with a near-cache is not isolated")
	}
}

func TestRunCountsConnectionsOutsideTheSamples(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	side, err := redigo.Dial("tcp", srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer side.Close()
	// clientLists is how many CLIENT LIST the server has run.
	clientLists := func() int64 {
		info, err := redigo.String(side.Do("INFO", "commandstats"))
		if err != nil {
			t.Error(err)
			return -1
		}
		_, rest, ok := strings.Cut(info, "cmdstat_client|list:calls=")
		if !ok {
			return 0
		}
		n, _ := strconv.ParseInt(rest[:strings.IndexByte(rest, ',')], 10, 64)
		return n
	}
	// The workload's one operation reads that count: within a sample
	// (i counts from 0 in each), it must never move.
	var start, moved, samples atomic.Int64
	probe := benchmarks.Workload{Name: "probe", Op: func(benchmarks.Client, int) benchmarks.Op {
		return func(_ context.Context, _, i int) error {
			n := clientLists()
			if i == 0 {
				start.Store(n)
				samples.Add(1)
			} else if n != start.Load() {
				moved.Add(1)
			}
			return nil
		}
	}}
	p := tinyPlan("get")
	p.Workloads, p.Levels = []benchmarks.Workload{probe}, []int{1}
	p.Duration, p.Repeats = 60*time.Millisecond, 3
	rep, err := benchmarks.Run(context.Background(), p, benchmarks.Servers{Standalone: srv.Addr()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if moved.Load() > 0 {
		t.Errorf("CLIENT LIST ran inside a sample (%d operations saw its count move, over %d samples and warm-ups)", moved.Load(), samples.Load())
	}
	for _, c := range rep.Cells {
		if c.Conns < 1 {
			t.Errorf("%s: %d connections counted; want them counted after the samples", c.Target, c.Conns)
		}
	}
}

func TestRunTargetWithItsOwnServerMeasuresIt(t *testing.T) {
	here, there := launcher.Standalone(t, launcher.Options{}), launcher.Standalone(t, launcher.Options{})
	mine, err := target.URLTarget("there", "redis://"+there.Addr()+"?strategy=pool&size=2")
	if err != nil {
		t.Fatal(err)
	}
	conf, err := target.URLTarget("conf", "redis://?strategy=pool&size=3") // no host: the run's server
	if err != nil {
		t.Fatal(err)
	}
	if mine.Servers == nil || mine.Servers.Standalone != there.Addr() || conf.Servers != nil {
		t.Fatalf("URLTarget servers: with a host %+v, without %+v; want %s and none", mine.Servers, conf.Servers, there.Addr())
	}
	p := tinyPlan("get")
	p.Levels = []int{1}
	p.AddTarget(mine)
	p.AddTarget(conf)
	gets := func(s *launcher.Server) string {
		info, err := s.CLI(context.Background(), "INFO", "commandstats")
		if err != nil {
			t.Fatal(err)
		}
		_, rest, _ := strings.Cut(info, "cmdstat_get:calls=")
		n, _, _ := strings.Cut(rest, ",")
		return n
	}
	rep, err := benchmarks.Run(context.Background(), p, benchmarks.Servers{Standalone: here.Addr()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Cells) != 4 {
		t.Fatalf("%d cells; want 4 (multiplexed-1, pool-4, there, conf)", len(rep.Cells))
	}
	for _, c := range rep.Cells {
		if c.Failed || c.Ops == 0 || c.Conns < 1 {
			t.Errorf("cell %s: failed %v (%s), %d ops, %d conns", c.Target, c.Failed, c.FirstError, c.Ops, c.Conns)
		}
	}
	if n := gets(there); n == "" || n == "0" {
		t.Errorf("the target's own server ran %q GETs; want the target's", n)
	}
	if got := rep.Machine.TargetServers["there"]; len(got) != 1 || got[0] != there.Addr() || len(rep.Machine.TargetServers) != 1 {
		t.Errorf("TargetServers = %v; want there on %s only", rep.Machine.TargetServers, there.Addr())
	}
	if dbsize(t, there) != "0" || dbsize(t, here) != "0" {
		t.Errorf("DBSIZE after Run: %s on the target's server, %s on the run's; want both cleaned up", dbsize(t, there), dbsize(t, here))
	}
	// Its server is checked for other keys as the run's is.
	if _, err := there.CLI(context.Background(), "SET", "someone:else", "v"); err != nil {
		t.Fatal(err)
	}
	if _, err := benchmarks.Run(context.Background(), p, benchmarks.Servers{Standalone: here.Addr()}, nil); !errors.Is(err, benchmarks.ErrForeignKeys) {
		t.Errorf("Run with the target's server holding another key: %v; want ErrForeignKeys", err)
	}
}
