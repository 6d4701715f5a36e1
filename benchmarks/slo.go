package benchmarks

import (
	"cmp"
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
