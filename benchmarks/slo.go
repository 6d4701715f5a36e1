package benchmarks

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// SLO is a latency bound: the Percentile (0–100) of the latencies must not
// exceed Bound.
type SLO struct {
	Percentile float64
	Bound      time.Duration
}

// ParseSLO reads "p99=2ms", "p99.9=10ms" or "p50=500us".
func ParseSLO(s string) (SLO, error) {
	name, bound, ok := strings.Cut(s, "=")
	pct, err := strconv.ParseFloat(strings.TrimPrefix(name, "p"), 64)
	if !ok || !strings.HasPrefix(name, "p") || err != nil || pct <= 0 || pct > 100 {
		return SLO{}, fmt.Errorf("benchmarks: SLO %q: want pNN=DURATION, such as p99=2ms", s)
	}
	d, err := time.ParseDuration(bound)
	if err != nil || d <= 0 {
		return SLO{}, fmt.Errorf("benchmarks: SLO %q: bound %q is not a positive duration", s, bound)
	}
	return SLO{Percentile: pct, Bound: d}, nil
}

// String is the form ParseSLO reads.
func (s SLO) String() string {
	return "p" + strconv.FormatFloat(s.Percentile, 'f', -1, 64) + "=" + s.Bound.String()
}

// probeResult is one open-loop run at a rate.
type probeResult struct {
	latency time.Duration // the SLO's percentile
	ok      bool          // under the bound, no error, nothing left unsent
}

// searchRate finds the highest rate that passes probe with a fixed budget
// of probes: from start, the rate doubles while it passes (at most steps
// probes), then bisects between the last rate that passed and the first
// that failed (bisects probes). When start fails already, the bisection
// runs between 0 and start. It returns the best rate that passed (0 if
// none) and its probe's latency.
func searchRate(start float64, steps, bisects int, probe func(rate float64) probeResult) (best float64, lat time.Duration) {
	lo, hi := 0.0, 0.0
	rate := start
	for i := 0; i < steps; i++ {
		r := probe(rate)
		if !r.ok {
			hi = rate
			break
		}
		lo, lat = rate, r.latency
		rate *= 2
	}
	if hi == 0 {
		return lo, lat // never failed within the ramp
	}
	for i := 0; i < bisects; i++ {
		mid := (lo + hi) / 2
		if r := probe(mid); r.ok {
			lo, lat = mid, r.latency
		} else {
			hi = mid
		}
	}
	return lo, lat
}

// markSLOWinners sets Winner and Headroom on the SLO results of every
// workload: the redisx target with the highest sustained rate wins (peers
// are listed, as in the verdicts, but not chosen), and its Headroom is its
// rate over the next redisx target's, less 1.
func markSLOWinners(results []SLOResult, peers map[string]bool) {
	byWorkload := map[string][]int{}
	var order []string
	for i, r := range results {
		if _, ok := byWorkload[r.Workload]; !ok {
			order = append(order, r.Workload)
		}
		byWorkload[r.Workload] = append(byWorkload[r.Workload], i)
	}
	for _, w := range order {
		var idx []int
		for _, i := range byWorkload[w] {
			if !peers[results[i].Target] && results[i].Rate > 0 {
				idx = append(idx, i)
			}
		}
		if len(idx) == 0 {
			continue
		}
		slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(results[b].Rate, results[a].Rate) })
		win := &results[idx[0]]
		win.Winner = true
		if len(idx) > 1 {
			win.Headroom = ratio(win.Rate, results[idx[1]].Rate)
		}
	}
}

// searchSLO finds, for every target of w, the highest open-loop rate its
// SLO percentile stays under the bound, at w's highest level of workers.
// An isolated target is open for its own search only.
func (r *runner) searchSLO(ctx context.Context, w Workload, ts []opened) error {
	d := r.deps[w.Cluster]
	for _, o := range ts {
		if o.t.Isolated && o.err == nil {
			if o = r.open(ctx, o.t, d); o.c != nil {
				if err := r.prime(ctx, w, o); err != nil {
					fmt.Fprintf(r.out, "SLO %s %s: %v\n", w.Name, o.t.Name, err)
					_ = o.c.Close()
					continue
				}
			}
		}
		if o.c == nil {
			continue
		}
		err := r.searchTargetSLO(ctx, w, o)
		if o.t.Isolated {
			_ = o.c.Close()
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// searchTargetSLO is searchSLO for one open target.
func (r *runner) searchTargetSLO(ctx context.Context, w Workload, o opened) error {
	slo := *r.plan.SLO
	workers := slices.Max(r.plan.LevelsOf(w))
	d := r.deps[w.Cluster]
	peak := 0.0
	for _, c := range r.report.Cells {
		if c.Workload == w.Name && c.Target == o.t.Name {
			if c.Failed {
				return nil
			}
			peak = max(peak, c.QPS)
		}
	}
	start := 1000.0
	if peak > 0 {
		start = peak / 4
	}
	op := w.Op(o.c, workers)
	var probeErr error
	best, lat := searchRate(start, r.plan.SLOSteps, r.plan.SLOBisects, func(rate float64) probeResult {
		if probeErr = ctx.Err(); probeErr != nil {
			return probeResult{}
		}
		s, h := r.measure(ctx, d, o, op, workers, r.plan.Duration, rate, false)
		got := time.Duration(h.ValueAtQuantile(slo.Percentile))
		ok := s.errs == 0 && s.behind == 0 && got <= slo.Bound
		r.note(true, "SLO %s %s %s ×%d at %s/s: %s %v", slo, w.Name, o.t.Name, workers, si(rate), map[bool]string{true: "pass", false: "fail"}[ok], got.Round(time.Microsecond))
		return probeResult{latency: got, ok: ok}
	})
	if probeErr != nil {
		return probeErr
	}
	r.report.SLO = append(r.report.SLO, SLOResult{
		Workload: w.Name, Target: o.t.Name, Concurrency: workers,
		Rate: best, Latency: float64(lat) / 1e6,
	})
	return nil
}
