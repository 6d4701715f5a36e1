package benchmarks

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/redisx-go/kit/benchmarks/verdict"
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

// The SLO search (see searchRate).
const (
	// sloStartShare is the share of the workload's fastest median QPS
	// (any target, any level) every target's search starts from.
	sloStartShare = 0.01
	// sloResolution is where the bisection stops: the first failing
	// rate within 5% of the last passing one.
	sloResolution = 0.05
	// sloHolds is the number of probes a rate must pass to be confirmed:
	// the search's, and re-runs. A probe is one stretch of the machine's
	// time: a rate near a target's limit passes it in a quiet stretch,
	// and the search keeps the rates that were lucky (with three in a
	// row and probes of six samples each held, a re-run at the rate
	// found held 2 of 3 times in only 4 of 5 tries of bar H2's test,
	// 2026-12-02); four in a row.
	sloHolds = 4
	// sloConfirms bounds the probes that re-run the rate found.
	sloConfirms = 5
)

// sloStart returns the rate every target's search of a workload starts
// from: a hundredth of peak, the fastest median QPS measured on it, and
// no less than sloFloor for the percentile pct.
func sloStart(peak, pct float64) float64 {
	return max(sloStartShare*peak, sloFloor(pct))
}

// sloFound is the outcome of one target's search.
type sloFound struct {
	maxRate, firstFailing float64
	confirmed             bool
	probes                []verdict.SLOProbe
	note                  string
}

// sloHistory is the probes of one search so far.
type sloHistory []verdict.SLOProbe

// firstFailing is the lowest rate a probe failed at; 0 if none did.
func (h sloHistory) firstFailing() float64 {
	lo := 0.0
	for _, p := range h {
		if !p.Passed && (lo == 0 || p.Rate < lo) {
			lo = p.Rate
		}
	}
	return lo
}

// best is the highest rate below the first failing one at which every
// probe passed; 0 if none.
func (h sloHistory) best() float64 {
	ff, b := h.firstFailing(), 0.0
	for _, p := range h {
		if p.Passed && p.Rate > b && (ff == 0 || p.Rate < ff) && h.passes(p.Rate) == h.runs(p.Rate) {
			b = p.Rate
		}
	}
	return b
}

func (h sloHistory) runs(rate float64) int {
	n := 0
	for _, p := range h {
		if p.Rate == rate {
			n++
		}
	}
	return n
}

func (h sloHistory) passes(rate float64) int {
	n := 0
	for _, p := range h {
		if p.Rate == rate && p.Passed {
			n++
		}
	}
	return n
}

// searchRate finds the highest rate that passes probe, in at most steps
// + bisects + sloConfirms probes:
//
//   - bracket: from start, the rate doubles while probes pass (halves
//     while they fail, down to floor, which is probed last), steps
//     probes at most;
//   - bisect: between the last passing and the first failing rate, at
//     their geometric mean, until they are within sloResolution of each
//     other, bisects probes at most;
//   - confirm: the rate found is probed again until it passed sloHolds
//     probes; if one fails, that rate becomes the first failing rate and
//     the next lower rate that passed is confirmed instead, sloConfirms
//     probes at most.
//
// It reports as maxRate the highest rate below every failing one at which
// every probe passed (0: none), as firstFailing the lowest rate any probe
// failed at (0: none, within the ramp), and confirmed when maxRate passed
// sloHolds probes. A probe error (a cancelled run) ends the search.
func searchRate(start, floor float64, steps, bisects int, probe func(rate float64) (probeResult, error)) (sloFound, error) {
	var h sloHistory
	var confirmFailed []float64
	run := func(rate float64) (bool, error) {
		r, err := probe(rate)
		if err != nil {
			return false, err
		}
		h = append(h, r.record(rate))
		return r.ok, nil
	}
	found := func() sloFound {
		f := sloFound{maxRate: h.best(), firstFailing: h.firstFailing(), probes: h}
		f.confirmed = f.maxRate > 0 && h.passes(f.maxRate) >= sloHolds
		if len(confirmFailed) > 0 {
			var s []string
			for _, r := range confirmFailed {
				s = append(s, si(r)+"/s")
			}
			f.note = fmt.Sprintf("the re-run at %s failed; stepped down to %s/s", strings.Join(s, ", then "), si(f.maxRate))
		}
		return f
	}

	rate := start
	ok, err := run(rate)
	if err != nil {
		return found(), err
	}
	for i := 1; i < steps; i++ {
		next := rate * 2
		if !ok {
			next = rate / 2
		}
		if next < floor && (ok || rate <= floor) {
			break
		}
		next = max(next, floor)
		rate = next
		was := ok
		if ok, err = run(rate); err != nil {
			return found(), err
		}
		if ok != was {
			break
		}
	}
	for i := 0; i < bisects; i++ {
		lo, hi := h.best(), h.firstFailing()
		if lo == 0 || hi == 0 || hi <= lo*(1+sloResolution) {
			break
		}
		if _, err := run(math.Sqrt(lo * hi)); err != nil {
			return found(), err
		}
	}
	for i := 0; i < sloConfirms; i++ {
		c := h.best()
		if c == 0 || h.passes(c) >= sloHolds {
			break
		}
		ok, err := run(c)
		if err != nil {
			return found(), err
		}
		if !ok {
			confirmFailed = append(confirmFailed, c)
		}
	}
	return found(), nil
}
