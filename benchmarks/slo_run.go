package benchmarks

import (
	"cmp"
	"context"
	"fmt"
	"runtime"
	"slices"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/redisx-go/kit/benchmarks/verdict"
)

// sloBudget is the longest an SLO search of plan p can take for one
// workload and target: every probe a warm-up and sloLooks looks, the
// first of at most sloLongestFirstLook (at the lowest rate) or a sample
// duration, the others doubling the operations pooled, and one drained
// for up to its own length (a look with requests unsent ends the probe).
func (p Plan) sloBudget() (probes int, d time.Duration) {
	probes = p.SLOSteps + p.SLOBisects + sloConfirms
	first := max(p.Duration, sloLongestFirstLook)
	looks := first << (sloLooks - 1) // first, first, 2 first, 4 first…
	probe := p.Warmup + sampleOverhead + time.Duration(sloLooks)*sampleOverhead + looks + looks/2
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
	start := sloStart(peak, r.plan.SLO.Percentile)
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
		if o.c == nil || slices.ContainsFunc(r.report.Cells, func(c verdict.Cell) bool { return c.Workload == w.Name && c.Target == o.t.Name && c.Failed }) {
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
	found, err := searchRate(start, sloFloor(slo.Percentile), r.plan.SLOSteps, r.plan.SLOBisects, func(rate float64) (probeResult, error) {
		n++
		res, err := r.probeSLO(ctx, d, o, op, workers, rate)
		if err != nil {
			return res, err
		}
		verdict := res.outcome
		if !res.ok && res.outcome == probeFails {
			verdict += ": " + res.why
		}
		fmt.Fprintf(r.out, "[SLO search %d/%d, probe %d/≤%d] %s %s %s ×%d at %s/s: %s (p%v %v in %s over %d operations, %d samples; send lateness p99 %v)\n",
			r.sloDone, r.sloTotal, n, budget, slo, w.Name, o.t.Name, workers, si(rate), verdict,
			slo.Percentile, res.pct.Round(time.Microsecond), res.interval(), res.ops, res.samples, res.lateness.Round(time.Microsecond))
		return res, nil
	})
	if err != nil {
		return err
	}
	res := verdict.SLOResult{
		Workload: w.Name, Target: o.t.Name, BoundMs: float64(slo.Bound) / 1e6, Concurrency: workers,
		MaxRate: found.maxRate, FirstFailingRate: found.firstFailing, Confirmed: found.confirmed,
		Note: found.note, Probes: found.probes,
	}
	for _, p := range found.probes {
		if p.Rate == found.maxRate {
			res.Latency = max(res.Latency, p.PercentileMs)
		}
	}
	if worst := slices.MaxFunc(found.probes, func(a, b verdict.SLOProbe) int { return cmp.Compare(a.LatenessP99ms, b.LatenessP99ms) }); worst.LatenessP99ms > res.BoundMs/10 {
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
// looks of probeQuantile, each at least a sample's duration long.
func (r *runner) probeSLO(ctx context.Context, d *deployment, o opened, op Op, workers int, rate float64) (probeResult, error) {
	if r.plan.Warmup > 0 {
		r.measure(ctx, d, o, op, workers, r.plan.Warmup, rate, false)
	}
	res := probeQuantile(*r.plan.SLO, rate, r.plan.Duration, func(dur time.Duration) (sample, *hdr.Histogram) {
		return r.measure(ctx, d, o, op, workers, dur, rate, false)
	})
	return res, ctx.Err()
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
