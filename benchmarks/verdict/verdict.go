package verdict

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Recommend returns, for every workload and level of cells, the redisx
// target to use, the samples looked at once (benchmarks.Run looks at them
// several times: see Sampling). Peers are compared with but never
// recommended: the recommendation is a configuration of this library,
// and its Peer and PeerRatio say how it fares against the fastest peer.
//
// Every verdict has one of three outcomes, decided on the interval of the
// ratio of two targets' scores (throughputs; in open loop, inverse p99s):
// the Hodges–Lehmann interval that inverts the Mann–Whitney rank test
// the p-value comes from (see RatioInterval). The leader is the redisx
// target with the highest median score among the cells that did not fail
// (see score).
//
//   - Significant: the leader beats every other target with p < alpha and
//     the lower end of the 1-alpha interval of the ratio at least
//     1 + margin (margin 0.05: 5%), so a lead of 6% in the medians of two
//     noisy samples is not a win. It is named.
//   - Equivalent: no win, and every target the leader does not beat so is
//     equivalent to it: the 1-2·alpha interval of the ratio lies inside
//     [1/(1+margin), 1+margin] (two one-sided tests at alpha; -4.8% to +5%
//     for a 5% margin). Only then does a tie-break choose among them:
//     toward a coherent target before one whose reads may be stale up to
//     a TTL (Cell.Stale: a near-cache without tracking), then the
//     fewest connections the server saw, then the lowest
//     bound on the connections the target may open, then the higher
//     score — skipping a target not shown equivalent to every other one,
//     or significantly slower (p < alpha, its interval below 1) than any
//     target of the cell. TieBreak says so.
//   - Undecided: neither. No target is named (Strategy is empty);
//     Contenders lists the leader and every target it could not be told
//     apart from within the margin, and SuggestedMaxRepeats about how many
//     samples would tell.
//
// So no verdict names a target that another redisx target of its cell is
// significantly faster than (a peer may be: see PeerRatio). When the target named holds more
// connections than another that is significantly slower, Alternative
// offers that one with what it costs.
//
// Margin, its interval and PValue compare the target named (the leader
// when undecided) with RunnerUp: the runner-up of a win, the leader (or,
// when the leader is named, the next of the equivalent ones) for an
// equivalent verdict, the first other contender when undecided.
// IntervalLevel is the interval's level: 1-alpha, or 1-2·alpha for an
// equivalent verdict.
//
// URL and Go are left empty; benchmarks.Run fills them from the targets.
func Recommend(cells []Cell, alpha, margin float64) []Recommendation {
	return recommend(cells, singleLook(alpha, margin))
}

func recommend(cells []Cell, ru rule) []Recommendation {
	var recs []Recommendation
	for _, g := range groupCells(cells) {
		cands, peer := candidates(g)
		if len(cands) == 0 {
			continue
		}
		rec := decide(cands, ru)
		if peer != nil && score(*peer) > 0 && rec.Strategy != "" {
			rec.Peer = peer.Target
			rec.PeerRatio = scoreOf(cands, rec.Strategy) / score(*peer)
		}
		recs = append(recs, rec)
	}
	return recs
}

// candidates returns the redisx cells of one workload and level that can
// be recommended (none failed, each with samples), by score, highest
// first; and the peer of the highest score, nil when none.
func candidates(g []Cell) (cands []Cell, peer *Cell) {
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
	slices.SortStableFunc(cands, func(a, b Cell) int { return cmp.Compare(score(b), score(a)) })
	return cands, peer
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
// verdict between them (the levels between, equivalent or undecided, are
// named in Text). An equivalent or undecided verdict never makes a
// crossover: identical targets do not cross.
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
		var ties []string        // levels without a significant verdict since
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
					x.Text += fmt.Sprintf(" (no significant winner at %s)", strings.Join(ties, ", "))
				}
				out = append(out, x)
			}
			last, ties = r, nil
		}
	}
	return out
}
