package benchmarks

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
)

// Recommend returns, for every workload and level of cells, the redisx
// target to use. Peers are compared with but never recommended: the
// recommendation is a configuration of this library, and its Peer and
// PeerRatio say how it fares against the fastest peer.
//
// The leader (highest median QPS among the redisx targets whose cell did
// not fail; in open loop, the lowest median of the samples' p99s — see
// score) wins only when it beats the runner-up significantly (a
// Mann-Whitney U test over the samples, p < alpha) and by a margin the
// samples support: the lower end of the 95% interval of the ratio of the
// two targets' scores (throughputs; in open loop, inverse p99s: the Hodges–Lehmann interval that inverts the
// same rank test) must be at least 1 + margin (margin 0.05: 5%), so a
// lead of 6% in the medians of two noisy samples is not a win. Otherwise
// the verdict is a tie among the leader and every target it does not
// beat that way, broken toward the fewest connections the server saw
// (then the lower bound on connections the target may open, then the
// higher QPS), and TieBreak says so. A tie whose interval is wider than
// the margin is Underpowered. Margin, its interval and PValue compare
// the recommended target with RunnerUp: for a tie-break away from the
// leader, RunnerUp is the leader and Margin is negative.
//
// URL and Go are left empty; Run fills them from the targets.
func Recommend(cells []Cell, alpha, margin float64) []Recommendation {
	var recs []Recommendation
	for _, g := range groupCells(cells) {
		var cands []Cell
		var peer *Cell
		for i, c := range g {
			switch {
			case c.Failed || c.Samples == 0:
			case c.Peer:
				if peer == nil || score(c) > score(*peer) {
					peer = &g[i]
				}
			default:
				cands = append(cands, c)
			}
		}
		if len(cands) == 0 {
			continue
		}
		slices.SortStableFunc(cands, func(a, b Cell) int { return cmp.Compare(score(b), score(a)) })
		rec := decide(cands, alpha, margin)
		if peer != nil && score(*peer) > 0 {
			rec.Peer = peer.Target
			rec.PeerRatio = scoreOf(cands, rec.Strategy) / score(*peer)
		}
		recs = append(recs, rec)
	}
	return recs
}

// groupCells groups cells by workload and level: workloads in order of
// first appearance, levels ascending.
func groupCells(cells []Cell) [][]Cell {
	type key struct {
		w string
		l int
	}
	var order []key
	groups := map[key][]Cell{}
	for _, c := range cells {
		k := key{c.Workload, c.Concurrency}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], c)
	}
	first := map[string]int{}
	for i, k := range order {
		if _, ok := first[k.w]; !ok {
			first[k.w] = i
		}
	}
	slices.SortStableFunc(order, func(a, b key) int {
		return cmp.Or(cmp.Compare(first[a.w], first[b.w]), cmp.Compare(a.l, b.l))
	})
	out := make([][]Cell, len(order))
	for i, k := range order {
		out[i] = groups[k]
	}
	return out
}

func scoreOf(cells []Cell, target string) float64 {
	for _, c := range cells {
		if c.Target == target {
			return score(c)
		}
	}
	return 0
}

// decide applies the verdict rule to candidates sorted by score, highest
// first.
func decide(cands []Cell, alpha, margin float64) Recommendation {
	lead := cands[0]
	rec := Recommendation{Workload: lead.Workload, Concurrency: lead.Concurrency, Strategy: lead.Target, Confidence: Tie}
	if len(cands) == 1 {
		rec.PValue = 1
		rec.TieBreak = "the only redisx target measured"
		return rec
	}
	vs := make([]versus, len(cands))
	for i, c := range cands[1:] {
		vs[i+1] = against(lead, c, alpha, margin)
	}
	if vs[1].beaten {
		rec.Confidence = Significant
		rec.RunnerUp = cands[1].Target
		vs[1].fill(&rec)
		return rec
	}
	tied := []Cell{lead}
	for i, c := range cands[1:] {
		if !vs[i+1].beaten {
			tied = append(tied, c)
		}
	}
	// Fewest connections seen first, then the lowest bound on them, then
	// the highest QPS; an unknown count (0) sorts last.
	known := func(n int) int {
		if n <= 0 {
			return math.MaxInt
		}
		return n
	}
	pick := slices.MinFunc(tied, func(a, b Cell) int {
		return cmp.Or(cmp.Compare(known(a.Conns), known(b.Conns)), cmp.Compare(known(a.MaxConns), known(b.MaxConns)), cmp.Compare(score(b), score(a)))
	})
	names := make([]string, len(tied))
	for i, c := range tied {
		names[i] = fmt.Sprintf("%s (%d conns)", c.Target, c.Conns)
	}
	rec.Strategy = pick.Target
	verdict := vs[1]
	rec.RunnerUp = cands[1].Target
	if pick.Target != lead.Target {
		verdict = against(pick, lead, alpha, margin)
		rec.RunnerUp = lead.Target
	}
	verdict.fill(&rec)
	rec.Underpowered = !(rec.MarginHi-rec.MarginLo <= margin)
	why := fmt.Sprintf("p=%.3f", vs[1].p)
	if vs[1].p < alpha {
		why = fmt.Sprintf("%s but the interval of the margin [%.1f%%, %.1f%%] does not clear %.0f%%",
			why, 100*(vs[1].lo-1), 100*(vs[1].hi-1), 100*margin)
	}
	rec.TieBreak = fmt.Sprintf("tie (%s: %s over %s) among %s; picked the fewest connections (then the lowest bound on them): %s",
		why, lead.Target, cands[1].Target, strings.Join(names, ", "), pick.Target)
	return rec
}

// versus is one target compared with another: the rank test's p-value,
// the ratio of the medians less 1, the interval of the ratio, and whether
// the first beats the second by the verdict rule.
type versus struct {
	p, m, lo, hi float64
	beaten       bool
}

func against(a, b Cell, alpha, margin float64) versus {
	as, bs := scoreSamples(a), scoreSamples(b)
	v := versus{p: compare(as, bs, alpha), m: ratio(score(a), score(b))}
	v.lo, v.hi = ratioInterval(as, bs, alpha)
	v.beaten = v.p < alpha && v.lo-1 >= margin
	return v
}

func (v versus) fill(rec *Recommendation) {
	rec.Margin, rec.PValue, rec.MarginLo, rec.MarginHi = v.m, v.p, v.lo-1, v.hi-1
}

// ratio is a/b - 1; 0 when b is 0.
func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a/b - 1
}

// FindCrossovers returns where the winning target changes as
// concurrency grows, per workload: between two levels whose verdicts are
// both significant and name different targets, with no significant
// verdict between them (the levels between are ties, named in Text).
// A tie never makes a crossover: identical targets do not cross.
// Computed from the verdicts, so among redisx targets only.
func FindCrossovers(recs []Recommendation) []Crossover {
	byWorkload := map[string][]Recommendation{}
	var order []string
	for _, r := range recs {
		if _, ok := byWorkload[r.Workload]; !ok {
			order = append(order, r.Workload)
		}
		byWorkload[r.Workload] = append(byWorkload[r.Workload], r)
	}
	var out []Crossover
	for _, w := range order {
		rs := slices.Clone(byWorkload[w])
		slices.SortStableFunc(rs, func(a, b Recommendation) int { return cmp.Compare(a.Concurrency, b.Concurrency) })
		var last *Recommendation // the last significant verdict
		var ties []string        // levels of the ties since
		for i := range rs {
			r := &rs[i]
			if r.Confidence != Significant || r.Strategy == "" {
				ties = append(ties, fmt.Sprint(r.Concurrency))
				continue
			}
			if last != nil && last.Strategy != r.Strategy {
				x := Crossover{
					Workload: w, From: last.Strategy, To: r.Strategy,
					Between: [2]int{last.Concurrency, r.Concurrency}, Below: last.Concurrency, Above: r.Concurrency,
					Confidence: Significant,
					Text:       fmt.Sprintf("%s overtakes %s between %d and %d goroutines", r.Strategy, last.Strategy, last.Concurrency, r.Concurrency),
				}
				if len(ties) > 0 {
					x.Text += fmt.Sprintf(" (ties at %s)", strings.Join(ties, ", "))
				}
				out = append(out, x)
			}
			last, ties = r, nil
		}
	}
	return out
}
