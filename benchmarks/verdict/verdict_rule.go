package verdict

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/aclements/go-moremath/stats"
)

// The rule of a verdict: three outcomes, each decided on the interval of
// the ratio of two targets' scores (see Recommend).

// rule is what a verdict is decided with.
type rule struct {
	// alpha is the plan's significance level: no verdict names a target
	// that another beats with p < alpha (unless the two are equivalent
	// and the other is named as the alternative).
	alpha float64
	// look is the significance level of one look of the sequential
	// sampling (alpha over the looks planned; see Sampling): the
	// win and the equivalence are tested at it.
	look   float64
	margin float64
	// repeats are the samples of a look (Sampling.Repeats), to say how many
	// an undecided verdict would need; 0: the cells' own count.
	repeats int
}

// singleLook is the rule of samples looked at once.
func singleLook(alpha, margin float64) rule {
	return rule{alpha: alpha, look: alpha, margin: margin}
}

// pair compares candidate a with candidate b: a's score over b's.
type pair struct {
	p   float64 // the Mann–Whitney p-value, two-sided
	m   float64 // the ratio of the medians of the scores, less 1
	est float64 // the Hodges–Lehmann estimate of the ratio
	// [lo, hi] is the 1-look interval of the ratio: a win needs lo ≥
	// 1+margin. [elo, ehi] is the 1-2·look interval: the two one-sided
	// tests of equivalence at level look each pass when it lies inside
	// [1/(1+margin), 1+margin]. [glo, ghi] is the 1-alpha interval: a is
	// significantly faster than b when glo > 1 and p < alpha.
	lo, hi, elo, ehi, glo, ghi float64
	// eok says the samples are enough for a 1-2·look interval: with
	// fewer, [elo, ehi] is the range of the ratios, which proves nothing.
	eok bool
	n   int // the fewer samples of the two
}

func newPair(a, b Cell, ru rule) pair {
	as, bs := scoreSamples(a), scoreSamples(b)
	r := newLogRatios(as, bs)
	v := pair{p: RankP(as, bs, ru.alpha), m: ratio(score(a), score(b)), est: r.estimate(), n: min(len(as), len(bs))}
	v.lo, v.hi = r.interval(ru.look)
	v.elo, v.ehi = r.interval(2 * ru.look)
	v.eok = r.covers(2 * ru.look)
	v.glo, v.ghi = r.interval(ru.alpha)
	return v
}

// wins reports whether a beats b by the margin: p < look and the lower
// end of the 1-look interval at least 1+margin.
func (v pair) wins(ru rule) bool { return v.p < ru.look && v.lo >= 1+ru.margin }

// equivalent reports whether a and b are equivalent within the margin:
// the 1-2·look interval inside [1/(1+margin), 1+margin] — two one-sided
// tests at level look, each rejecting a ratio beyond the margin on its
// side (Schuirmann's TOST; on ranks, Hauschke, Steinijans & Diletti,
// "A distribution-free procedure for the statistical analysis of
// bioequivalence studies", Int. J. Clin. Pharmacol. Ther. Toxicol. 28,
// 1990, which uses this very interval of the ratio). The band is
// symmetric on the ratio's logarithm, so that a is equivalent to b
// exactly when b is to a.
func (v pair) equivalent(ru rule) bool {
	return v.eok && v.elo >= 1/(1+ru.margin) && v.ehi <= 1+ru.margin
}

// faster reports whether a is significantly faster than b: p < alpha and
// the 1-alpha interval above 1.
func (v pair) faster(ru rule) bool { return v.p < ru.alpha && v.glo > 1 }

// pairs compares the candidates of one verdict, each pair once.
type pairs struct {
	cands []Cell
	ru    rule
	memo  map[[2]int]pair
}

// of returns candidate i compared with candidate j.
func (ps *pairs) of(i, j int) pair {
	if v, ok := ps.memo[[2]int{i, j}]; ok {
		return v
	}
	v := newPair(ps.cands[i], ps.cands[j], ps.ru)
	ps.memo[[2]int{i, j}] = v
	return v
}

// decide applies the verdict rule to candidates sorted by score, highest
// first (see Recommend).
func decide(cands []Cell, ru rule) Recommendation {
	lead := cands[0]
	rec := Recommendation{Workload: lead.Workload, Concurrency: lead.Concurrency, Samples: len(scoreSamples(lead))}
	if len(cands) == 1 {
		rec.Strategy, rec.Confidence, rec.PValue = lead.Target, Significant, 1
		rec.TieBreak = "the only redisx target measured"
		return rec
	}
	ps := &pairs{cands: cands, ru: ru, memo: map[[2]int]pair{}}
	// The leader and every candidate it does not beat by the margin; of
	// those, the ones not shown equivalent to it.
	near, open := []int{0}, []int{0}
	for j := 1; j < len(cands); j++ {
		switch v := ps.of(0, j); {
		case v.wins(ru):
		case v.equivalent(ru):
			near = append(near, j)
		default:
			near, open = append(near, j), append(open, j)
		}
	}
	switch {
	case len(near) == 1:
		rec.Strategy, rec.Confidence, rec.RunnerUp = lead.Target, Significant, cands[1].Target
		ps.fill(&rec, 0, 1, false)
		rec.Samples = min(rec.Samples, len(scoreSamples(cands[1])))
		return rec
	case len(open) > 1:
		return ps.undecided(rec, open, "")
	}
	// Equivalent: the tie-break may choose among near, the first in its
	// order that is equivalent to every other member and significantly
	// slower than no candidate.
	order := slices.Clone(near)
	slices.SortStableFunc(order, func(i, j int) int { return tieBreak(cands[i], cands[j]) })
	pick, why := -1, []string(nil)
	for _, i := range order {
		if reason := ps.unfit(i, near); reason != "" {
			why = append(why, reason)
			continue
		}
		pick = i
		break
	}
	if pick < 0 {
		return ps.undecided(rec, near, strings.Join(why, "; "))
	}
	rec.Strategy, rec.Confidence = cands[pick].Target, Equivalent
	other := 0
	if pick == 0 {
		other = near[1]
	}
	rec.RunnerUp = cands[other].Target
	ps.fill(&rec, pick, other, true)
	rec.Samples = min(len(scoreSamples(cands[pick])), len(scoreSamples(cands[other])))
	names := make([]string, len(near))
	for k, i := range near {
		names[k] = fmt.Sprintf("%s (%s)", cands[i].Target, connsText(cands[i].Conns))
	}
	m := marginText(ru.margin)
	rec.TieBreak = fmt.Sprintf("equivalent within %s (each one's %s interval against %s inside [%s, +%s]): %s; ",
		m, levelText(2*ru.look), lead.Target, percent(1/(1+ru.margin)-1), m, strings.Join(names, ", "))
	rule := "the fewest connections (then the lowest bound on them)"
	var stale []string
	for _, i := range near {
		if cands[i].Stale {
			stale = append(stale, cands[i].Target)
		}
	}
	if len(stale) > 0 && len(stale) < len(near) {
		rule = fmt.Sprintf("a coherent target before one whose reads may be stale up to its TTL (%s), then %s", strings.Join(stale, ", "), rule)
	}
	if len(why) == 0 {
		rec.TieBreak += "picked " + rule + ": " + cands[pick].Target
	} else {
		rec.TieBreak += fmt.Sprintf("picked %s, %s once passed over: %s",
			cands[pick].Target, rule, strings.Join(why, "; "))
	}
	if order[0] != pick {
		rec.Alternative = ps.alternative(pick, order[0])
	}
	return rec
}

// unfit says why the tie-break may not pick candidate i of near: a
// member it is not shown equivalent to, or a candidate significantly
// faster than it; empty when it may.
func (ps *pairs) unfit(i int, near []int) string {
	name := ps.cands[i].Target
	for j := range ps.cands {
		if j == i {
			continue
		}
		if v := ps.of(j, i); v.faster(ps.ru) {
			return fmt.Sprintf("%s is significantly slower than %s (%s, %s)", name, ps.cands[j].Target, percent(ps.of(i, j).m), PText(v.p))
		}
		if slices.Contains(near, j) && !ps.of(i, j).equivalent(ps.ru) {
			return fmt.Sprintf("%s is not shown within %s of %s", name, marginText(ps.ru.margin), ps.cands[j].Target)
		}
	}
	return ""
}

// fill sets rec's margin, p-value and interval from candidate i against
// candidate j: the win's interval (1-look), or with equivalence the two
// one-sided tests' (1-2·look).
func (ps *pairs) fill(rec *Recommendation, i, j int, equivalence bool) {
	v := ps.of(i, j)
	rec.Margin, rec.PValue = v.m, v.p
	lo, hi, level := v.lo, v.hi, 1-ps.ru.look
	if equivalence {
		lo, hi, level = v.elo, v.ehi, 1-2*ps.ru.look
	}
	rec.MarginLo, rec.MarginHi, rec.IntervalLevel = lo-1, hi-1, level
}

// undecided is rec with no winner: the contenders (indexes into the
// candidates, the leader first) could not be told apart, within the
// margin, by the samples measured.
func (ps *pairs) undecided(rec Recommendation, contenders []int, why string) Recommendation {
	rec.Confidence, rec.Strategy = Undecided, ""
	first, second := contenders[0], contenders[1]
	rec.RunnerUp = ps.cands[second].Target
	ps.fill(&rec, first, second, false)
	rec.Underpowered = !(rec.MarginHi-rec.MarginLo <= ps.ru.margin)
	rec.Samples = math.MaxInt
	need := 0
	for k, i := range contenders {
		rec.Contenders = append(rec.Contenders, ps.cands[i].Target)
		rec.Samples = min(rec.Samples, len(scoreSamples(ps.cands[i])))
		if k == 0 {
			continue
		}
		n := ps.ru.needed(ps.of(first, i))
		if n == 0 || need < 0 {
			need = -1 // one pair unlikely to be decided: no budget will do
			continue
		}
		need = max(need, n)
	}
	rec.SuggestedMaxRepeats = max(need, 0)
	rec.TieBreak = why
	return rec
}

// alternative is the quantified sentence offering candidate best, the
// tie-break's first choice among equivalent targets, passed over for
// candidate pick: when it holds fewer connections and is significantly
// slower, what the fewer connections cost. Empty otherwise.
func (ps *pairs) alternative(pick, best int) string {
	named, alt := ps.cands[pick], ps.cands[best]
	if best == pick || knownConns(alt.Conns) >= knownConns(named.Conns) {
		return ""
	}
	v := ps.of(pick, best)
	if !v.faster(ps.ru) {
		return "" // the fewer connections cost nothing the samples show
	}
	iv := fmt.Sprintf("[%s, %s]", percent(v.glo-1), percent(v.ghi-1))
	if openLoopCell(named) {
		return fmt.Sprintf("%s's p99 is %s higher %s; it holds %s, %s %s",
			alt.Target, percent(v.m), iv, connsText(alt.Conns), named.Target, connsText(named.Conns))
	}
	return fmt.Sprintf("%s is %s faster %s with %s; %s uses %s",
		named.Target, percent(v.m), iv, connsText(named.Conns), alt.Target, connsText(alt.Conns))
}

// tieBreak orders candidates coherent first — a target whose reads may
// be stale up to a TTL (Cell.Stale) is equivalent in speed, not in what
// it serves — then by the fewest connections seen, then the lowest bound
// on them, then the highest score; an unknown count (0) sorts last.
func tieBreak(a, b Cell) int {
	return cmp.Or(staleRank(a)-staleRank(b), cmp.Compare(knownConns(a.Conns), knownConns(b.Conns)),
		cmp.Compare(knownConns(a.MaxConns), knownConns(b.MaxConns)), cmp.Compare(score(b), score(a)))
}

func staleRank(c Cell) int {
	if c.Stale {
		return 1
	}
	return 0
}

func knownConns(n int) int {
	if n <= 0 {
		return math.MaxInt
	}
	return n
}

func connsText(n int) string {
	switch {
	case n <= 0:
		return "connections not counted"
	case n == 1:
		return "1 connection"
	}
	return fmt.Sprintf("%d connections", n)
}

// percent writes a ratio less 1 as a percentage: "+5.0%", "-4.8%".
func percent(x float64) string {
	if math.IsInf(x, 0) || math.IsNaN(x) {
		return "n/a"
	}
	return fmt.Sprintf("%+.1f%%", 100*x)
}

// PText writes a p-value as a clause of a sentence: "p = 0.034", or
// "p < 0.001" below that, or "p n/a" when there is none.
func PText(p float64) string {
	switch {
	case math.IsNaN(p) || math.IsInf(p, 0) || p < 0:
		return "p n/a"
	case p < 0.001:
		return "p < 0.001"
	}
	return "p = " + strconv.FormatFloat(p, 'f', 3, 64)
}

// marginText writes a margin as a percentage: "5%".
func marginText(m float64) string { return strconv.FormatFloat(100*m, 'g', 3, 64) + "%" }

// levelText writes the confidence level 1-alpha: "90%", "98.3%".
func levelText(alpha float64) string {
	return fmt.Sprintf("%s%%", trimFloat(100*(1-alpha)))
}

func trimFloat(x float64) string {
	s := fmt.Sprintf("%.1f", x)
	return strings.TrimSuffix(s, ".0")
}

// needed returns about how many samples a side would decide v, a pair of
// contenders, at the alpha of a look of a plan with that budget, if its
// estimate stayed where it is and its interval narrowed as 1/√n: the
// equivalence when the estimate lies inside the margin, the win when it
// lies beyond. 0 when even 20 looks' worth would not (the estimate sits
// on the margin itself, or the interval is not finite); with too few
// samples for an interval, the next look's count (at least MinRepeats).
func (ru rule) needed(v pair) int {
	step := ru.repeats
	if step <= 0 {
		step = v.n
	}
	if step <= 0 || v.lo <= 0 || v.elo <= 0 || math.IsInf(v.hi, 0) || math.IsInf(v.ehi, 0) || v.est <= 0 {
		return 0
	}
	if !v.eok {
		// Too few samples for an interval at all: nothing to project
		// from; the next look's samples may make one.
		return max((v.n/step+1)*step, MinRepeats(ru.look))
	}
	band, c := math.Log1p(ru.margin), math.Abs(math.Log(v.est))
	half := (math.Log(v.hi) - math.Log(v.lo)) / 2    // of the win's interval
	ehalf := (math.Log(v.ehi) - math.Log(v.elo)) / 2 // of the equivalence's
	z := func(p float64) float64 { return stats.StdNormal.InvCDF(p) }
	zw, ze := z(1-ru.look/2), z(1-ru.look)
	for m := (v.n/step + 1) * step; m <= 20*step; m += step {
		a := ru.alpha / float64(looks(step, m))
		shrink := math.Sqrt(float64(v.n) / float64(m))
		if c < band && ehalf*shrink*z(1-a)/ze <= band-c || c > band && half*shrink*z(1-a/2)/zw <= c-band {
			return m
		}
	}
	return 0
}
