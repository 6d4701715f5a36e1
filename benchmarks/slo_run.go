package benchmarks

import (
	"cmp"
	"context"
	"fmt"
	"runtime"
	"slices"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// sloBudget is the longest an SLO search of plan p can take for one
// workload and target: every probe a warm-up and Repeats samples, each
// drained for up to another duration.
func (p Plan) sloBudget() (probes int, d time.Duration) {
	probes = p.SLOSteps + p.SLOBisects + sloConfirms
	probe := p.Warmup + sampleOverhead + time.Duration(p.Repeats)*(2*p.Duration+sampleOverhead)
	return probes, time.Duration(probes) * probe
}

// sloSearches counts the SLO searches of the runnable workloads.
func (r *runner) sloSearches() int {
	n := 0
	for _, w := range r.plan.Workloads {
		if r.runnable(w) {
			n += len(r.plan.targetsOf(w))
		}
	}
	return n
}

// searchSLO finds, for every target of w, the highest open-loop rate its
// SLO percentile holds under the bound, at w's highest level of
// workers, every target's search starting from the same rate. An
// isolated target is open for its own search only.
func (r *runner) searchSLO(ctx context.Context, w Workload, ts []opened) error {
	d := r.deps[w.Cluster]
	peak := 0.0
	for _, c := range r.report.Cells {
		if c.Workload == w.Name && !c.Failed {
			peak = max(peak, c.QPS)
		}
	}
	start := sloStart(peak, r.plan.Duration)
	for _, o := range ts {
		r.sloDone++
		if o.t.Isolated && o.err == nil {
			if o = r.open(ctx, o.t, d); o.c != nil {
				if err := r.prime(ctx, w, o); err != nil {
					fmt.Fprintf(r.out, "SLO %s %s: %v\n", w.Name, o.t.Name, err)
					_ = o.c.Close()
					continue
				}
			}
		}
		if o.c == nil || slices.ContainsFunc(r.report.Cells, func(c Cell) bool { return c.Workload == w.Name && c.Target == o.t.Name && c.Failed }) {
			continue
		}
		err := r.searchTargetSLO(ctx, w, o, start)
		if o.t.Isolated {
			_ = o.c.Close()
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// searchTargetSLO is searchSLO for one open target, from start.
func (r *runner) searchTargetSLO(ctx context.Context, w Workload, o opened, start float64) error {
	slo := *r.plan.SLO
	workers := slices.Max(r.plan.LevelsOf(w))
	d := r.deps[w.Cluster]
	op := w.Op(o.c, workers)
	budget, _ := r.plan.sloBudget()
	n := 0
	found, err := searchRate(start, sloMinRequests/r.plan.Duration.Seconds(), r.plan.SLOSteps, r.plan.SLOBisects, func(rate float64) (probeResult, error) {
		n++
		res, err := r.probeSLO(ctx, d, o, op, workers, rate)
		if err != nil {
			return res, err
		}
		verdict := "holds"
		if !res.ok {
			verdict = "fails: " + res.why
		}
		fmt.Fprintf(r.out, "[SLO search %d/%d, probe %d/≤%d] %s %s %s ×%d at %s/s: %s (worst sample %v, send lateness p99 %v)\n",
			r.sloDone, r.sloTotal, n, budget, slo, w.Name, o.t.Name, workers, si(rate), verdict,
			res.worst.Round(time.Microsecond), res.lateness.Round(time.Microsecond))
		return res, nil
	})
	if err != nil {
		return err
	}
	res := SLOResult{
		Workload: w.Name, Target: o.t.Name, BoundMs: float64(slo.Bound) / 1e6, Concurrency: workers,
		MaxRate: found.maxRate, FirstFailingRate: found.firstFailing, Confirmed: found.confirmed,
		Note: found.note, Probes: found.probes,
	}
	for _, p := range found.probes {
		if p.Rate == found.maxRate {
			res.Latency = max(res.Latency, p.WorstMs)
		}
	}
	if worst := slices.MaxFunc(found.probes, func(a, b SLOProbe) int { return cmp.Compare(a.LatenessP99ms, b.LatenessP99ms) }); worst.LatenessP99ms > res.BoundMs/10 {
		msg := fmt.Sprintf("SLO %s %s: the client sent late by %.3f ms (p99) at %s/s, more than a tenth of the %s bound: the rates found are partly the client's limit, not the server's",
			w.Name, o.t.Name, worst.LatenessP99ms, si(worst.Rate), slo)
		r.warn(msg)
		res.Note = joinNote(res.Note, "client late: see the warnings")
	}
	r.report.SLO = append(r.report.SLO, res)
	first := "none up to the end of the ramp"
	if found.firstFailing > 0 {
		first = si(found.firstFailing) + "/s"
	}
	fmt.Fprintf(r.out, "SLO %s %s %s: max rate %s/s (confirmed: %v), first failing %s%s\n",
		slo, w.Name, o.t.Name, si(found.maxRate), found.confirmed, first, map[bool]string{true: "; " + found.note, false: ""}[found.note != ""])
	return nil
}

// probeSLO runs one probe at rate: a warm-up (discarded), then the
// samples of probeSamples.
func (r *runner) probeSLO(ctx context.Context, d *deployment, o opened, op Op, workers int, rate float64) (probeResult, error) {
	if r.plan.Warmup > 0 {
		r.measure(ctx, d, o, op, workers, r.plan.Warmup, rate, false)
	}
	res := probeSamples(*r.plan.SLO, r.plan.Repeats, func() (sample, *hdr.Histogram) {
		return r.measure(ctx, d, o, op, workers, r.plan.Duration, rate, false)
	})
	return res, ctx.Err()
}

// probeSamples runs up to repeats samples with next and passes when the
// SLO's percentile of every one of them is within the bound, with no
// error and nothing left unsent; it stops at the first that is not.
//
// Every sample, not the median of them or their merge: a rate holds only
// if it held in each window of the length of a sample. (At the default
// 6 samples the 95% interval of the median of the samples' percentiles
// reaches the highest one anyway; with more samples an interval's upper
// end would admit rates at which some windows broke the bound.)
func probeSamples(slo SLO, repeats int, next func() (sample, *hdr.Histogram)) (res probeResult) {
	late := newHistogram()
	defer func() { res.lateness = time.Duration(late.ValueAtQuantile(99)) }()
	for range repeats {
		s, h := next()
		got := time.Duration(h.ValueAtQuantile(slo.Percentile))
		res.samples++
		res.worst = max(res.worst, got)
		if s.late != nil {
			late.Merge(s.late)
		}
		switch {
		case s.errs > 0:
			res.why = fmt.Sprintf("%d errors, the first: %v", s.errs, s.first)
		case s.behind > 0:
			res.why = fmt.Sprintf("%d requests still unsent after the drain: the rate was not sustained", s.behind)
		case got > slo.Bound:
			res.why = fmt.Sprintf("sample %d's p%v %v is over the bound", res.samples, slo.Percentile, got.Round(time.Microsecond))
		}
		if res.why != "" {
			return res
		}
	}
	res.ok = true
	return res
}

// warnLateOpenLoop warns about every open-loop cell whose client sent
// late by more than a tenth of the SLO bound (with an SLO only).
func (r *runner) warnLateOpenLoop() {
	if r.plan.SLO == nil {
		return
	}
	tenth := float64(r.plan.SLO.Bound) / 1e6 / 10
	for _, c := range r.report.Cells {
		if c.Rate > 0 && c.LatenessP99ms > tenth {
			r.warn(fmt.Sprintf("%s %s ×%d at %s/s: the client sent late by %.3f ms (p99), more than a tenth of the %s bound: its latencies are partly the client's",
				c.Workload, c.Target, c.Concurrency, si(c.Rate), c.LatenessP99ms, r.plan.SLO))
		}
	}
}

// warnOneP warns about an open loop on a single P: its pacer holds the
// P while it spins, so the workers and replies wait for its sends.
func (r *runner) warnOneP() {
	if (r.plan.Rate > 0 || r.plan.SLO != nil) && runtime.GOMAXPROCS(0) < 2 {
		r.warn("open loop with GOMAXPROCS=1: the pacer holds the only P while it waits for each send, so replies wait too; the latencies are partly the client's")
	}
}

// warn records a warning in the report and writes it to the progress.
func (r *runner) warn(msg string) {
	r.report.Warnings = append(r.report.Warnings, msg)
	fmt.Fprintln(r.out, "warning:", msg)
}

// joinNote joins two parts of a note with "; ", either possibly empty.
func joinNote(a, b string) string {
	if a == "" || b == "" {
		return a + b
	}
	return a + "; " + b
}
