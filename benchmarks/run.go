package benchmarks

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/redisx-go/kit/benchmarks/load"
	"github.com/redisx-go/kit/benchmarks/target"
	"github.com/redisx-go/kit/benchmarks/verdict"
	"github.com/redisx-go/kit/benchmarks/workload"
	"github.com/redisx-go/kit/redisx"
)

// Run measures plan p on the servers s and returns the report, writing
// progress to progress (nil: none).
//
// Every workload runs at each of its levels on every target that applies:
// first a warm-up of each target (discarded), then p.Repeats rounds in
// which every target runs one sample, in an order shuffled per round
// (seeded by p.Seed), so that drift of the machine spreads over all
// targets instead of favouring one. The targets of a workload stay open
// across its levels; each one's connections are counted on the
// server by client name (CLIENT LIST, summed over the masters of a
// cluster) right after each sample, once its clock has stopped, so that
// the count costs the server nothing while it is measured.
//
// The report names the answer (Report.Answer): the verdict of the first
// workload that runs at p.At, added to its levels when missing.
//
// Run refuses a database holding keys outside KeyPrefix unless s.Force,
// skips the workloads whose deployment is missing (Report.Skipped), and
// deletes the keys under KeyPrefix when it ends. When ctx is cancelled it
// stops, deletes its keys and returns the cells measured so far in a
// report marked Partial, with ctx's error.
func Run(ctx context.Context, p Plan, s Servers, progress io.Writer) (*Report, error) {
	p = p.withDefaults()
	if progress == nil {
		progress = io.Discard
	}
	if err := p.validate(); err != nil {
		return nil, err
	}
	if err := resolveSentinel(ctx, &s); err != nil {
		return nil, err
	}
	r := &runner{
		plan:    p,
		servers: s,
		out:     progress,
		rng:     rand.New(rand.NewPCG(uint64(p.Seed), 0x5eed)),
		deps:    map[bool]*deployment{},
		own:     map[string]*deployment{},
		looks:   map[levelKey]int{},
	}
	r.report = &Report{
		Version: verdict.ReportVersion,
		Started: time.Now().UTC(),
		Machine: verdict.Machine{
			GOMAXPROCS: runtime.GOMAXPROCS(0),
			CPUs:       runtime.NumCPU(),
			GoVersion:  runtime.Version(),
			CPUModel:   cpuModel(),
			OS:         runtime.GOOS,
			Arch:       runtime.GOARCH,
			Standalone: s.Standalone,
			Cluster:    s.Cluster,
			Sentinel:   sentinelName(s.Sentinel),
		},
		Settings: verdict.Settings{
			Levels: p.Levels, Duration: p.Duration, Warmup: p.Warmup, Repeats: p.Repeats,
			MaxRepeats: p.MaxRepeats, Looks: p.sampling().Looks(), LookAlpha: p.sampling().LookAlpha(),
			Mode: "closed", Rate: p.Rate, Alpha: p.Alpha, Margin: p.Margin, Seed: p.Seed,
		},
		Cells:           []verdict.Cell{},
		Recommendations: []verdict.Recommendation{},
		Crossovers:      []verdict.Crossover{},
	}
	if p.Rate > 0 {
		r.report.Settings.Mode = "open"
	}
	if p.SLO != nil {
		r.report.Settings.SLO = p.SLO.String()
	}
	if w := p.sampling().PowerWarning(); w != "" {
		r.report.Warnings = append(r.report.Warnings, w)
		fmt.Fprintln(r.out, "warning:", w)
	}
	defer r.closeDeployments()
	if err := r.connect(ctx); err != nil {
		r.report.Finished = time.Now().UTC()
		return r.report, err
	}
	r.prepareAnswer()
	err := r.runAll(ctx)
	r.cleanup()
	r.conclude()
	if err != nil {
		r.report.Partial = true
	}
	r.report.Finished = time.Now().UTC()
	return r.report, err
}

// validate rejects a plan Run cannot measure.
func (p Plan) validate() error {
	seen := map[string]bool{}
	for _, t := range p.Targets {
		if t.Name == "" || t.Open == nil {
			return fmt.Errorf("benchmarks: a target needs a Name and an Open function (%q)", t.Name)
		}
		if seen[t.Name] {
			return fmt.Errorf("benchmarks: two targets named %q", t.Name)
		}
		seen[t.Name] = true
	}
	for _, w := range p.Workloads {
		if w.Name == "" || w.Op == nil {
			return fmt.Errorf("benchmarks: a workload needs a Name and an Op function (%q)", w.Name)
		}
		for _, l := range p.LevelsOf(w) {
			if l < 1 {
				return fmt.Errorf("benchmarks: workload %s: level %d is not a positive number of goroutines", w.Name, l)
			}
		}
	}
	if p.Rate < 0 {
		return fmt.Errorf("benchmarks: negative rate %v", p.Rate)
	}
	return nil
}

// runner is the state of one Run.
type runner struct {
	plan    Plan
	servers Servers
	out     io.Writer
	rng     *rand.Rand
	report  *Report
	deps    map[bool]*deployment   // by "is a cluster"
	own     map[string]*deployment // of targets with Servers of their own, by name (ownservers.go)
	// answerWorkload is the workload of Report.Answer.
	answerWorkload string
	// looks are the looks each workload and level's verdict made;
	// moreBudget the time for the sequential sampling, moreLeft what is
	// left of it.
	looks                map[levelKey]int
	moreBudget, moreLeft time.Duration

	hists      []*hdr.Histogram // one per worker, reused
	sampleHist *hdr.Histogram
	late       load.LateHists // the open loop's send lateness

	opened   int // targets opened so far, for unique client names
	total    int // samples planned
	done     int // samples run
	cell     int // cells finished
	cells    int // cells planned
	began    time.Time
	lastNote time.Time
	sloDone  int // SLO searches started
	sloTotal int // SLO searches planned
}

// connect opens the deployments the plan needs (the run's, then the
// targets' own), checks they hold no foreign keys, and notes the
// workloads it must skip.
func (r *runner) connect(ctx context.Context) error {
	var needStandalone, needCluster bool
	for _, w := range r.plan.Workloads {
		if !slices.ContainsFunc(r.plan.targetsOf(w), func(t Target) bool { return t.Servers == nil }) {
			continue // only targets with servers of their own, if any
		}
		needCluster = needCluster || w.Cluster && r.servers.Cluster != nil
		needStandalone = needStandalone || !w.Cluster && r.servers.Standalone != ""
	}
	for _, need := range []struct {
		on      bool
		cluster bool
		addrs   []string
	}{{needStandalone, false, []string{r.servers.Standalone}}, {needCluster, true, r.servers.Cluster}} {
		if !need.on {
			continue
		}
		d, err := openDeployment(ctx, need.addrs, need.cluster, r.servers)
		if err != nil {
			return err
		}
		r.deps[need.cluster] = d
		if r.report.Machine.RedisVersion == "" {
			r.report.Machine.RedisVersion = d.version
		}
		if !r.servers.Force {
			if err := d.checkForeign(); err != nil {
				return err
			}
		}
	}
	if err := r.openOwnServers(ctx); err != nil {
		return err
	}
	r.report.Machine.TargetServers = r.ownAddrs()
	var run []string
	for _, w := range r.plan.Workloads {
		if len(r.targetsOf(w)) > 0 {
			run = append(run, w.Name)
			continue
		}
		switch {
		case len(r.plan.targetsOf(w)) == 0:
			r.skip(fmt.Sprintf("%s skipped: no target applies", w.Name))
		case w.Cluster:
			r.skip(fmt.Sprintf("%s skipped: it needs a cluster (-cluster, or no address for the embedded one)", w.Name))
		default:
			r.skip(fmt.Sprintf("%s skipped: it needs a standalone server (-addr, or no address for the embedded one)", w.Name))
		}
	}
	r.report.Settings.Workloads = run
	for _, w := range r.plan.Workloads {
		if slices.Contains(run, w.Name) {
			r.report.Workloads = append(r.report.Workloads, infoOf(w))
		}
	}
	for _, t := range r.plan.Targets {
		if slices.ContainsFunc(r.plan.Workloads, func(w Workload) bool {
			return slices.Contains(run, w.Name) && slices.ContainsFunc(r.targetsOf(w), func(u Target) bool { return u.Name == t.Name })
		}) {
			r.report.Settings.Targets = append(r.report.Settings.Targets, t.Name)
		}
	}
	for _, d := range r.allDeployments() {
		if r.report.Machine.RedisVersion == "" {
			r.report.Machine.RedisVersion = d.version
		}
	}
	return nil
}

func (r *runner) skip(msg string) {
	r.report.Skipped = append(r.report.Skipped, msg)
	fmt.Fprintln(r.out, msg)
}

func (r *runner) runnable(w Workload) bool {
	return slices.Contains(r.report.Settings.Workloads, w.Name)
}

// runAll measures every runnable workload.
func (r *runner) runAll(ctx context.Context) error {
	est := r.plan.Estimate(r.deps[false] != nil || r.ownKind(false), r.deps[true] != nil || r.ownKind(true))
	r.total, r.cells = est.Samples, est.Cells
	mode := "closed loop"
	if r.plan.Rate > 0 {
		mode = fmt.Sprintf("open loop at %.0f/s", r.plan.Rate)
	}
	fmt.Fprintf(r.out, "plan: %d cells × (%d samples of %v + a %v warm-up), %s: about %v\n",
		est.Cells, r.plan.Repeats, r.plan.Duration, r.plan.Warmup, mode, est.Duration.Round(time.Second))
	if k := r.plan.sampling().Looks(); k > 1 {
		fmt.Fprintf(r.out, "undecided verdicts: their contenders up to %d samples, %d looks at p < %.3g each (alpha %v over %d looks): at most %v more\n",
			r.plan.MaxRepeats, k, r.plan.sampling().LookAlpha(), r.plan.Alpha, k, est.MoreAtMost.Round(time.Second))
		r.moreBudget, r.moreLeft = est.MoreAtMost, est.MoreAtMost
	}
	if r.plan.SLO != nil {
		r.sloTotal = r.sloSearches()
		probes, most := r.plan.sloBudget()
		fmt.Fprintf(r.out, "SLO %s: then %d searches (workload × target), each at most %d probes of a %v warm-up and up to %d samples of at least %v (%d operations, then doubling): at most %v more\n",
			r.plan.SLO, r.sloTotal, probes, r.plan.Warmup, sloLooks, r.plan.Duration, sloFirstOps(r.plan.SLO.Percentile), (time.Duration(r.sloTotal) * most).Round(time.Second))
	}
	r.warnOneP()
	r.began = time.Now()
	for _, w := range r.plan.Workloads {
		if r.runnable(w) {
			if err := r.runWorkload(ctx, w); err != nil {
				return err
			}
		}
	}
	return nil
}

// opened is a target connected for a workload.
type opened struct {
	t      Target
	c      Client // nil when Open failed
	err    error
	prefix string      // client name prefix of its connections
	d      *deployment // the servers it measures
	setup  error       // of the workload's Setup on d
}

// clientNameChars are the characters kept in a client name (CLIENT
// SETNAME refuses spaces).
var clientNameChars = regexp.MustCompile(`[^A-Za-z0-9._:-]`)

// open connects t to d, the run's deployment for the workload at hand,
// or to t's own servers if it has some.
func (r *runner) open(ctx context.Context, t Target, d *deployment) opened {
	r.opened++
	prefix := fmt.Sprintf("redisx-bench-%d.", r.opened)
	d = r.deploymentOf(t, d)
	s := d.servers
	env := Env{
		Addrs: d.addrs, Cluster: d.cluster, Sentinel: target.CloneSentinel(s.Sentinel),
		Username: s.Username, Password: s.Password, TLS: s.TLS, DB: s.DB,
		ClientName: prefix + clientNameChars.ReplaceAllString(t.Name, "_"),
	}
	octx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	c, err := t.Open(octx, env)
	if err != nil {
		c = nil // a typed nil from a user's Open would not compare equal to nil
		err = fmt.Errorf("open %s: %w", t.Name, err)
		fmt.Fprintf(r.out, "%v\n", err)
	}
	return opened{t: t, c: c, err: err, prefix: prefix, d: d}
}

// runWorkload measures w at each of its levels on every target that
// applies. The targets are opened for w and stay open across its levels
// (so a pool keeps the connections an earlier level made it open, as a
// service's would), then closed; isolated ones are opened for each of
// their samples only (see Target.Isolated).
func (r *runner) runWorkload(ctx context.Context, w Workload) error {
	d := r.deps[w.Cluster] // nil when only targets with servers of their own run w
	var ts []opened
	for _, t := range r.targetsOf(w) {
		if t.Isolated {
			ts = append(ts, opened{t: t, d: r.deploymentOf(t, d)})
			continue
		}
		ts = append(ts, r.open(ctx, t, d))
	}
	defer func() {
		for _, o := range ts {
			if o.c != nil {
				_ = o.c.Close()
			}
		}
	}()
	r.setUp(ctx, w, ts)
	for _, level := range r.plan.LevelsOf(w) {
		if err := r.runLevel(ctx, d, w, level, ts); err != nil {
			return err
		}
	}
	if r.plan.SLO != nil && !slices.ContainsFunc(ts, func(o opened) bool { return o.setup != nil }) {
		return r.searchSLO(ctx, w, ts)
	}
	return nil
}

// runLevel measures the cells of w at one level: a warm-up of every
// target, then Repeats rounds of one sample per target in shuffled order;
// then, while the level's verdict is undecided and MaxRepeats allows,
// more rounds for its contenders only (see Plan.MaxRepeats).
func (r *runner) runLevel(ctx context.Context, d *deployment, w Workload, level int, ts []opened) error {
	accs := make([]*cellAcc, len(ts))
	ops := make([]Op, len(ts))
	var live []int // indexes of the targets that can run
	for i, o := range ts {
		accs[i] = newCellAcc(w, o.t, level, r.plan.Rate)
		switch {
		case o.err != nil:
			accs[i].fail(o.err)
		case o.setup != nil:
			accs[i].fail(o.setup)
		case o.t.Isolated:
			live = append(live, i) // opened for each sample
		default:
			ops[i] = w.Op(o.c, level)
			live = append(live, i)
		}
	}
	finish := func() {
		for _, a := range accs {
			if a.cell.Samples > 0 || a.cell.Failed {
				r.report.Cells = append(r.report.Cells, a.finish())
			}
		}
	}
	defer finish()
	for _, i := range r.shuffled(live) {
		if err := ctx.Err(); err != nil {
			return err
		}
		if ts[i].t.Isolated {
			continue // warmed up before each sample
		}
		r.measure(ctx, d, ts[i], ops[i], level, r.plan.Warmup, r.plan.Rate, false)
		r.note(false, "%s %s ×%d warm-up", w.Name, ts[i].t.Name, level)
	}
	s := levelSampler{r: r, d: d, w: w, level: level, ts: ts, ops: ops, accs: accs}
	if err := s.rounds(ctx, live, r.plan.Repeats, fmt.Sprint(r.plan.Repeats)); err != nil {
		return err
	}
	looked, err := s.lookAgain(ctx, live)
	if err != nil {
		return err
	}
	r.looks[levelKey{w.Name, level}] = looked
	r.cell += len(ts)
	r.note(true, "%s ×%d done", w.Name, level)
	return nil
}

// shuffled returns idx in a random order of the run's seeded source.
func (r *runner) shuffled(idx []int) []int {
	out := slices.Clone(idx)
	r.rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// workerHists returns n reset histograms, one per worker.
func (r *runner) workerHists(n int) []*hdr.Histogram {
	for len(r.hists) < n {
		r.hists = append(r.hists, load.NewHistogram())
	}
	for _, h := range r.hists[:n] {
		h.Reset()
	}
	return r.hists[:n]
}

// measure runs op on level workers for d (closed loop, or open loop at
// rate) and returns the sample and its merged latency histogram, valid
// until the next call. With conns, it counts the target's connections
// once the sample is over (they stay open: a pool keeps its idle ones),
// so that CLIENT LIST never runs while the server is measured.
func (r *runner) measure(ctx context.Context, d *deployment, o opened, op Op, level int, dur time.Duration, rate float64, conns bool) (sample, *hdr.Histogram) {
	if o.d != nil {
		d = o.d // the servers o was opened on
	}
	hists := r.workerHists(level)
	st, hasStats := o.c.(interface{ Stats() redisx.Stats })
	var before redisx.Stats
	if hasStats {
		before = st.Stats()
	}
	u0 := readUsage()
	var l load.Outcome
	if rate > 0 {
		l = load.Open(ctx, level, dur, rate, op, hists, r.late.Workers(level))
	} else {
		l = load.Closed(ctx, level, dur, op, hists)
	}
	u := readUsage().since(u0)
	s := sample{Outcome: l, cpu: u.cpu, mallocs: u.mallocs, bytes: u.bytes}
	if rate > 0 {
		s.late = r.late.Merged(level)
	}
	if l.Elapsed > 0 {
		s.qps = float64(l.Ops) / l.Elapsed.Seconds()
	}
	if conns && ctx.Err() == nil {
		s.conns, _ = d.clients(o.prefix)
	}
	if hasStats {
		after := st.Stats()
		s.hits, s.misses = after.LocalHits-before.LocalHits, after.LocalMisses-before.LocalMisses
		s.received = after.InvalidationsReceived - before.InvalidationsReceived
		s.localBytes = after.LocalBytes
		s.lanes = after.Lanes
	}
	if r.sampleHist == nil {
		r.sampleHist = load.NewHistogram()
	}
	r.sampleHist.Reset()
	for _, h := range hists {
		r.sampleHist.Merge(h)
	}
	return s, r.sampleHist
}

// note writes a progress line: always when force, otherwise at most one
// a second. It counts one sample unless force.
func (r *runner) note(force bool, format string, args ...any) {
	if !force {
		r.done++
	}
	now := time.Now()
	if !force && now.Sub(r.lastNote) < time.Second {
		return
	}
	r.lastNote = now
	eta := "?"
	if r.done > 0 {
		left := time.Duration(float64(now.Sub(r.began)) / float64(r.done) * float64(max(r.total-r.done, 0)))
		eta = left.Round(time.Second).String()
	}
	fmt.Fprintf(r.out, "[cell %d/%d, sample %d/%d, ETA %s] %s\n", min(r.cell+1, r.cells), r.cells, r.done, r.total, eta, fmt.Sprintf(format, args...))
}

// si writes x with a k or M suffix.
func si(x float64) string {
	switch {
	case x >= 1e6:
		return fmt.Sprintf("%.2fM", x/1e6)
	case x >= 1e3:
		return fmt.Sprintf("%.1fk", x/1e3)
	}
	return fmt.Sprintf("%.0f", x)
}

// prime runs w's Prime, if any, on o, an isolated target just opened.
func (r *runner) prime(ctx context.Context, w Workload, o opened) error {
	if w.Prime == nil {
		return nil
	}
	pctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := w.Prime(pctx, o.c); err != nil {
		return fmt.Errorf("priming %s for %s: %w", o.t.Name, w.Name, err)
	}
	return nil
}

// cleanup deletes the harness's keys, even after a cancellation.
func (r *runner) cleanup() {
	for _, d := range r.allDeployments() {
		n, err := d.cleanup()
		if err != nil {
			fmt.Fprintf(r.out, "cleanup: %v\n", err)
		}
		if n > 0 {
			fmt.Fprintf(r.out, "deleted %d keys under %s on %s\n", n, KeyPrefix, strings.Join(d.addrs, ","))
		}
	}
}

func (r *runner) closeDeployments() {
	for _, d := range r.allDeployments() {
		d.close()
	}
}

// infoOf is w as the report describes it.
func infoOf(w Workload) verdict.WorkloadInfo {
	i := verdict.WorkloadInfo{Name: w.Name, Description: w.Description}
	if c := w.Custom; c != nil {
		i.Mix, i.Keys, i.KeyDist, i.Value = c.Mix.String(), c.Keys, c.KeyDist.String(), c.Value.String()
		i.Batch, i.TTL, i.Source = c.Batch, workload.FormatDuration(c.TTL), c.Source
	}
	return i
}
