package benchmarks

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/redisx-go/kit/benchmarks/load"
	"github.com/redisx-go/kit/benchmarks/target"
	"github.com/redisx-go/kit/benchmarks/workload"
)

// KeyPrefix starts every key the harness writes (see workload.KeyPrefix).
const KeyPrefix = workload.KeyPrefix

// Client is an opened target: what a workload's operations call. It is
// workload.Client, an interface of four methods, safe for concurrent
// use:
//
//   - Get(ctx context.Context, key string) ([]byte, error): a missing key
//     is redisx.ErrNotFound and nil.
//   - Set(ctx context.Context, key string, value []byte, ttl
//     time.Duration) error.
//   - MGet(ctx context.Context, keys ...string) ([][]byte, error): one
//     value per key, in order, nil where a key is missing; on a cluster
//     the keys may lie in different slots.
//   - Close() error.
//
// *redisx.Client implements it; the peers are adapted to it. The custom
// workload's del and mset ops also need workload.Deleter and
// workload.MSetter.
type Client = workload.Client

// Op is one operation of a workload (see load.Op).
type Op = load.Op

// Workload is what the targets are measured doing. It is
// workload.Workload, where its fields are documented in full; in one
// line each:
//
//   - Name string: "family" or "family/variant" ("get",
//     "values/set-32KiB").
//   - Description string: what one operation is, for the reports.
//   - Cluster bool: run on the cluster rather than the standalone server.
//   - Levels []int: when set, replaces the plan's levels.
//   - Targets []string: when set, the targets it runs; nil: every one
//     that applies.
//   - Setup func(ctx, *redisx.Client) error: stores the data the
//     operations read, once before the workload's cells.
//   - Op func(c Client, workers int) Op: the operation on c for a run
//     of workers goroutines.
//   - Prime func(ctx, Client) error: brings an isolated target to the
//     state of a long-lived client, before its warm-up.
//   - Custom *workload.Custom: the user's workload this one was made
//     from, if any.
//   - Writes float64: the share of the ops that write.
//
// Its method:
//
//   - Family() string: the part of the name before the first "/".
type Workload = workload.Workload

// Env is what a target connects to: the servers of one workload and the
// shared connection settings. It is target.Env, a struct of fields
// Addrs (the standalone server, or the cluster's seeds), Cluster,
// Sentinel (*redisx.SentinelOptions, when the target should follow the
// sentinels), Username, Password, TLS, DB and ClientName (which every
// connection the target opens must set: the harness counts connections
// by it), with one method:
//
//   - Options(s strategy.Strategy) redisx.Options: the redisx options
//     that connect s to the Env.
type Env = target.Env

// Target is one client configuration under measurement. It is
// target.Target, where its fields are documented in full; in one line
// each:
//
//   - Name string: identifies the target in cells and verdicts
//     ("pool-32").
//   - Open func(ctx, Env) (Client, error): connects to the Env; the
//     caller closes the Client.
//   - Conns int: the connections it may open per server, for the record.
//   - Peer bool: a client that is not redisx, never recommended.
//   - Stale bool: its reads may be stale up to a TTL; a tie never goes
//     to it.
//   - Topology: AnyTopology, StandaloneOnly or ClusterOnly.
//   - Only []string: when set, the workload families it runs in.
//   - Isolated bool: open only while measured, opened afresh for each
//     sample.
//   - URL, Go string: the target as a redisx URL and as a Go expression;
//     empty for a peer.
//   - Servers *Servers: when set, a deployment of its own to measure
//     instead of the run's.
//
// Its method:
//
//   - RunsIn(w Workload) bool: whether it applies to w on the
//     deployment w needs.
type Target = target.Target

// Servers are the deployments a run measures, and how to reach them. It
// is target.Servers, a struct of fields Standalone (a standalone
// server's "host:port"; empty: the workloads that need one are skipped),
// Cluster (a Redis Cluster's seeds; nil: the cluster workloads are
// skipped), Sentinel (the sentinels that manage the standalone server),
// Username, Password, TLS, DB, and Force (run even when a database holds
// keys outside KeyPrefix).
type Servers = target.Servers

// Topologies of a Target.
const (
	AnyTopology    = target.AnyTopology
	StandaloneOnly = target.StandaloneOnly
	ClusterOnly    = target.ClusterOnly
)

// DefaultLevels are the concurrency levels (goroutines) of the default
// plan.
var DefaultLevels = []int{1, 10, 50, 100, 500, 1000}

// Plan is what a run measures: every workload at each of its levels on
// every target that applies.
type Plan struct {
	Levels    []int
	Targets   []Target
	Workloads []Workload
	// Duration is the length of one sample; Warmup runs each target at
	// each level before its samples, discarded. Repeats is the number of
	// samples per cell: at least verdict.MinRepeats of the look's alpha (5 at
	// 0.05 over three looks) for a verdict to be significant, 6 for a 95%
	// interval of the median.
	Duration time.Duration
	Warmup   time.Duration
	Repeats  int
	// MaxRepeats is the most samples per cell: a verdict still undecided
	// after Repeats samples gets Repeats more for each of its contenders
	// (the targets it could not tell apart), and again, up to MaxRepeats;
	// each round ends with a look at the samples, which stops when it
	// decides. Every look tests at Alpha over the number of looks (a
	// Bonferroni split: see verdict.Sampling), so more looks cost every look
	// some power. Zero: three looks (3 × Repeats, 18 by default), which
	// narrow an undecided pair's interval by about 1.4x at the last look,
	// against a single look at Alpha; at most Repeats: one look. The
	// rounds get a tenth of the plan's estimated time (at least 30 s), in
	// the plan's order; verdicts beyond it stay undecided.
	MaxRepeats int
	// Rate, when positive, runs open loop: requests are scheduled at this
	// total rate per second, sent by the level's workers (at most one in
	// flight each), and each latency is measured from the request's
	// intended send time, so it includes any wait behind a slow reply —
	// and the client's own lateness in sending, reported per cell
	// (verdict.Cell.LatenessP99ms): a saturated client machine shows up as
	// latency. Zero: closed loop.
	Rate float64
	// SLO, when set, also searches, for every workload and target, the
	// highest open-loop rate that keeps the latency percentile under the
	// bound, at the workload's highest level of workers (see Run).
	SLO *SLO
	// SLOSteps and SLOBisects bound the probes of that search: a ramp of
	// doubling rates from a start shared by every target, then a
	// bisection between the last rate that passed and the first that
	// failed, to 5%; up to 4 more probes confirm the result (see Run's
	// package documentation).
	SLOSteps   int
	SLOBisects int
	// Alpha is the significance level of the verdicts over all their
	// looks (each look tests at Alpha over the looks); Margin the least
	// relative difference that counts as a win and the most that counts
	// as equivalent.
	Alpha  float64
	Margin float64
	// Seed seeds the shuffle of the targets' order in each repeat.
	Seed int64
	// At is the user's concurrency: Report.Answer names the one
	// configuration for the plan's first workload that runs (put the
	// user's own first) at this level, which is added to that workload's
	// levels when they miss it. Zero: its highest level.
	At int
}

// DefaultPlan is the full matrix: DefaultLevels × DefaultTargets ×
// DefaultWorkloads, 6 samples of 500 ms per cell, closed loop. It runs in
// about a quarter of an hour (Plan.Estimate).
func DefaultPlan() Plan {
	return Plan{
		Levels:     slices.Clone(DefaultLevels),
		Targets:    target.DefaultTargets(),
		Workloads:  workload.DefaultWorkloads(),
		Duration:   defaultDuration,
		Warmup:     defaultDuration / 2,
		Repeats:    defaultRepeats,
		SLOSteps:   defaultSLOSteps,
		SLOBisects: defaultSLOBisects,
		Alpha:      defaultAlpha,
		Margin:     defaultMargin,
		Seed:       1,
	}
}

// QuickPlan is a small matrix that runs in about a minute on two cores:
// levels 1, 10 and 100, fewer targets and variants, 6 samples of 100 ms,
// 12 for the contenders of a verdict undecided after 6 (two looks).
func QuickPlan() Plan {
	p := DefaultPlan()
	p.MaxRepeats = 2 * p.Repeats
	p.Levels = []int{1, 10, 100}
	p.Duration = 100 * time.Millisecond
	p.Warmup = 50 * time.Millisecond
	std := []string{"multiplexed", "pool-32", "rueidis", "redigo-pool-100", "go-redis", "goredis-autopipeline"}
	small := []string{"multiplexed", "pool-32", "rueidis"}
	quick := map[string][]string{
		"get":              std,
		"setget":           small,
		"mget":             {"multiplexed", "slotgrouped", "rueidis"},
		"values/get-4KiB":  small,
		"values/set-32KiB": small,
		"near/w1":          {"near-multiplexed", "multiplexed", "rueidis"},
		"near/w10":         {"near-multiplexed", "multiplexed", "rueidis"},
	}
	var ws []Workload
	for _, w := range p.Workloads {
		if ts, ok := quick[w.Name]; ok {
			w.Targets, w.Levels = ts, nil
			ws = append(ws, w)
		}
	}
	p.Workloads = ws
	return p
}

// AddTarget adds t to the plan, or replaces the target of the same name
// in place. A new target joins every workload it applies to, including
// those whose Targets list it is not on.
func (p *Plan) AddTarget(t Target) {
	for i := range p.Targets {
		if p.Targets[i].Name == t.Name {
			p.Targets[i] = t
			return
		}
	}
	p.Targets = append(p.Targets, t)
	for i := range p.Workloads {
		if w := &p.Workloads[i]; w.Targets != nil {
			w.Targets = append(slices.Clone(w.Targets), t.Name)
		}
	}
}

// RemovePeers drops the targets that are not redisx.
func (p *Plan) RemovePeers() {
	p.Targets = slices.DeleteFunc(slices.Clone(p.Targets), func(t Target) bool { return t.Peer })
}

// SelectTargets keeps the targets named, peers included, in the plan's
// order; a name the plan does not have is an error that lists those it
// has.
func (p *Plan) SelectTargets(names []string) error {
	for _, n := range names {
		if !slices.ContainsFunc(p.Targets, func(t Target) bool { return t.Name == n }) {
			var known []string
			for _, t := range p.Targets {
				known = append(known, t.Name)
			}
			return fmt.Errorf("benchmarks: unknown target %q (known: %s)", n, strings.Join(known, ", "))
		}
	}
	p.Targets = slices.DeleteFunc(slices.Clone(p.Targets), func(t Target) bool { return !slices.Contains(names, t.Name) })
	return nil
}

// SelectWorkloads keeps the workloads named: a family ("values") keeps
// all its variants, a full name ("values/get-4KiB") one.
func (p *Plan) SelectWorkloads(names []string) error {
	var keep []Workload
	for _, n := range names {
		found := false
		for _, w := range p.Workloads {
			if w.Name != n && w.Family() != n {
				continue
			}
			found = true
			if !slices.ContainsFunc(keep, func(k Workload) bool { return k.Name == w.Name }) {
				keep = append(keep, w)
			}
		}
		if !found {
			var known []string
			for _, w := range p.Workloads {
				known = append(known, w.Name)
			}
			return fmt.Errorf("benchmarks: unknown workload %q (known: %s)", n, strings.Join(known, ", "))
		}
	}
	p.Workloads = keep
	return nil
}

// LevelsOf returns the levels w runs at under p.
func (p Plan) LevelsOf(w Workload) []int {
	if w.Levels != nil {
		return w.Levels
	}
	return p.Levels
}

// targetsOf returns the targets of p that run w.
func (p Plan) targetsOf(w Workload) []Target {
	var ts []Target
	for _, t := range p.Targets {
		if t.RunsIn(w) {
			ts = append(ts, t)
		}
	}
	return ts
}

// Defaults of a Plan's zero fields.
const (
	defaultDuration   = 500 * time.Millisecond
	defaultRepeats    = 6
	defaultSLOSteps   = 10 // from 1% of the peak: up to 5x the peak
	defaultSLOBisects = 4  // a factor of 2 down to 5%
	defaultAlpha      = 0.05
	defaultMargin     = 0.05
)

// withDefaults fills the zero knobs of p: DefaultLevels, and DefaultPlan's
// duration, repeats, SLO probes and alpha.
func (p Plan) withDefaults() Plan {
	if p.Levels == nil {
		p.Levels = slices.Clone(DefaultLevels)
	}
	if p.Duration <= 0 {
		p.Duration = defaultDuration
	}
	p.Warmup = max(p.Warmup, 0)
	if p.Repeats <= 0 {
		p.Repeats = defaultRepeats
	}
	if p.MaxRepeats == 0 {
		p.MaxRepeats = 3 * p.Repeats
	}
	p.MaxRepeats = max(p.MaxRepeats, p.Repeats)
	if p.SLOSteps <= 0 {
		p.SLOSteps = defaultSLOSteps
	}
	p.SLOBisects = max(p.SLOBisects, 0)
	if p.Alpha <= 0 {
		p.Alpha = defaultAlpha
	}
	p.Margin = max(p.Margin, 0)
	return p
}

// Estimate is the size of a plan on given servers.
type Estimate struct {
	Cells    int
	Samples  int // warm-ups included
	Duration time.Duration
	// MoreAtMost is the most the sequential sampling can add: every
	// redisx target of every cell taking MaxRepeats samples (it takes
	// them only for the contenders of undecided verdicts), within its
	// budget (a tenth of Duration, at least 30 s: see Plan.MaxRepeats).
	MoreAtMost time.Duration
}

// sampleOverhead is the time a sample costs beyond its duration (starting
// and stopping the workers, counting connections, reading MemStats),
// measured on a busy 2-core machine.
const sampleOverhead = 40 * time.Millisecond

// Estimate returns how many cells and samples p measures with a
// standalone server and/or a cluster, and about how long it takes before
// any sample the sequential sampling adds (SLO search not included).
func (p Plan) Estimate(standalone, cluster bool) Estimate {
	p = p.withDefaults()
	var e Estimate
	for _, w := range p.Workloads {
		if (w.Cluster && !cluster) || (!w.Cluster && !standalone) {
			continue
		}
		levels := len(p.LevelsOf(w))
		for _, t := range p.targetsOf(w) {
			e.Cells += levels
			warmups := 1
			if t.Isolated {
				warmups = p.Repeats // one before each sample
			}
			e.Samples += levels * (p.Repeats + warmups)
			e.Duration += time.Duration(levels) * (time.Duration(warmups)*(p.Warmup+sampleOverhead) + time.Duration(p.Repeats)*(p.Duration+sampleOverhead))
			if more := p.MaxRepeats - p.Repeats; more > 0 && !t.Peer {
				each := p.Duration + sampleOverhead
				if t.Isolated {
					each += p.Warmup + sampleOverhead
				}
				e.MoreAtMost += time.Duration(levels*more) * each
			}
		}
	}
	e.MoreAtMost = min(e.MoreAtMost, sequentialBudget(e.Duration))
	return e
}

// sequentialBudget is the most time the sequential sampling may add to a
// plan whose samples take base: a tenth of it, at least 30 s, so that the
// full plan (about 18 minutes) stays within 20 and -quick (about one)
// within two. Verdicts it cannot reach stay undecided.
func sequentialBudget(base time.Duration) time.Duration {
	return max(base/10, 30*time.Second)
}
