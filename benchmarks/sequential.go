package benchmarks

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Sequential sampling: a verdict still undecided after a cell's samples
// gets more of them, for its contenders only, in rounds of Plan.Repeats,
// up to Plan.MaxRepeats; each round ends with a look at every sample so
// far, and the first look that decides stops the sampling.
//
// Looking again at data that grow inflates the chance of a false
// decision: five looks at the 5% level each are wrong about 14% of the
// time, not 5% (Armitage, McPherson & Rowe, "Repeated significance tests
// on accumulating data", J. R. Statist. Soc. A 132, 1969). So each look
// tests at alpha divided by the number of looks planned — a Bonferroni
// split, by the union bound valid whatever the dependence between looks
// and whatever the samples' distribution. Pocock's group-sequential
// boundaries ("Group sequential methods in the design and analysis of
// clinical trials", Biometrika 64, 1977) spend a little more of alpha per
// look (0.0221 for three looks against 0.0167), but assume normal
// statistics with independent increments, which rank tests of six
// samples are not. With an even split, every look has the same level:
// the verdict of the final samples at that level is the verdict the
// sampling stopped at, so Recommend's rule, given the look's level,
// reproduces it.

// looks is the most looks of a plan whose cells take repeats samples at
// a time up to maxRepeats.
func looks(repeats, maxRepeats int) int {
	if repeats <= 0 || maxRepeats <= repeats {
		return 1
	}
	return 1 + (maxRepeats-repeats+repeats-1)/repeats
}

// looks is the most looks of p's verdicts.
func (p Plan) looks() int { return looks(p.Repeats, p.MaxRepeats) }

// rule is the verdict rule of p: Alpha split evenly over its looks.
func (p Plan) rule() rule {
	return rule{alpha: p.Alpha, look: p.Alpha / float64(p.looks()), margin: p.Margin, repeats: p.Repeats}
}

// nextLook returns the verdict of one workload and level (cells) under
// p's rule, and the targets that are to get more samples for the next
// look: the contenders of an undecided verdict, when more samples could
// plausibly decide it — its SuggestedMaxRepeats, projected from the
// samples so far, at most twice p.MaxRepeats (a projection from six
// samples is rough: their estimate of the ratio moves by about as much as
// their interval is wide). A verdict more samples are unlikely to decide
// stays undecided at once, which spends the time on the verdicts that can
// be decided: fewer decided, none decided worse (the looks' level does
// not depend on when the sampling stops).
func (p Plan) nextLook(cells []Cell) (Recommendation, []string) {
	cands, _ := candidates(cells)
	if len(cands) < 2 {
		return Recommendation{}, nil
	}
	rec := decide(cands, p.rule())
	if rec.Confidence != Undecided || rec.SuggestedMaxRepeats == 0 || rec.SuggestedMaxRepeats > futility*p.MaxRepeats {
		return rec, nil
	}
	return rec, rec.Contenders
}

// futility is how far beyond the budget a projection may reach and still
// get more samples (see nextLook). On synthetic pairs of twins of 5%
// spread, 2 decides 21% of them at 9 samples a target on average, against
// 13% at 7.5 with 1, and 29% at 11 with 4.
const futility = 2

// lookSamples is the samples per contender at look k (1-based) of p:
// Repeats more at each, the last look at MaxRepeats.
func (p Plan) lookSamples(k int) int {
	return min(k*p.Repeats, max(p.MaxRepeats, p.Repeats))
}

// lookAgain looks at the samples of the targets at live, and while their
// verdict is undecided and more samples could decide it, within
// MaxRepeats and the time left, takes another round of its contenders
// and looks again. It returns the looks made.
func (s *levelSampler) lookAgain(ctx context.Context, live []int) (int, error) {
	r, w, level, accs, ts := s.r, s.w, s.level, s.accs, s.ts
	looked := 1
	for ; looked < r.plan.looks(); looked++ {
		cells := make([]Cell, 0, len(live))
		for _, i := range live {
			cells = append(cells, accs[i].finish())
		}
		rec, names := r.plan.nextLook(cells)
		if names == nil {
			if rec.Confidence == Undecided {
				r.note(true, "%s ×%d: undecided between %s after %d samples; %s", w.Name, level,
					strings.Join(rec.Contenders, ", "), rec.Samples, unlikely(rec, r.plan.MaxRepeats))
			}
			break
		}
		var more []int
		for _, i := range live {
			if slices.Contains(names, ts[i].t.Name) && !accs[i].cell.Failed {
				more = append(more, i)
			}
		}
		target := r.plan.lookSamples(looked + 1)
		if cost := s.cost(more, target); cost > r.moreLeft {
			r.note(true, "%s ×%d: undecided between %s after %d samples; the time for more samples (%v) is spent",
				w.Name, level, strings.Join(names, ", "), rec.Samples, r.moreBudget.Round(time.Second))
			break
		}
		r.total += s.planned(more, target)
		r.note(true, "%s ×%d: undecided between %s after %d samples; up to %d each (look %d of %d)",
			w.Name, level, strings.Join(names, ", "), rec.Samples, target, looked+1, r.plan.looks())
		began := time.Now()
		if err := s.upTo(ctx, more, target); err != nil {
			return looked, err
		}
		r.moreLeft -= time.Since(began)
	}
	return looked, nil
}

// unlikely says why an undecided verdict gets no more samples.
func unlikely(rec Recommendation, maxRepeats int) string {
	if rec.SuggestedMaxRepeats == 0 {
		return "more samples are unlikely to decide it"
	}
	return fmt.Sprintf("about %d samples each might decide it, far more than -max-repeats %d", rec.SuggestedMaxRepeats, maxRepeats)
}

// levelKey names a workload at a level.
type levelKey struct {
	workload string
	level    int
}

// levelSampler takes the samples of one workload at one level.
type levelSampler struct {
	r     *runner
	d     *deployment
	w     Workload
	level int
	ts    []opened
	ops   []Op
	accs  []*cellAcc
}

// rounds runs n rounds of one sample of each target at idx, in an order
// shuffled per round; of is the total the progress lines count to.
func (s *levelSampler) rounds(ctx context.Context, idx []int, n int, of string) error {
	for rep := 1; rep <= n; rep++ {
		for _, i := range s.r.shuffled(idx) {
			if err := s.sample(ctx, i, fmt.Sprintf("r%d/%s", s.accs[i].cell.Samples+1, of)); err != nil {
				return err
			}
		}
	}
	return nil
}

// upTo runs rounds of the targets at idx, in shuffled order, until each
// has target samples (or failed).
func (s *levelSampler) upTo(ctx context.Context, idx []int, target int) error {
	for {
		var need []int
		for _, i := range idx {
			if s.accs[i].cell.Samples < target && !s.accs[i].cell.Failed {
				need = append(need, i)
			}
		}
		if len(need) == 0 {
			return nil
		}
		if err := s.rounds(ctx, need, 1, fmt.Sprint(target)); err != nil {
			return err
		}
	}
}

// planned is the samples (warm-ups included) upTo takes for idx.
func (s *levelSampler) planned(idx []int, target int) int {
	n := 0
	for _, i := range idx {
		k := max(target-s.accs[i].cell.Samples, 0)
		if s.ts[i].t.Isolated {
			k *= 2 // a warm-up before each sample
		}
		n += k
	}
	return n
}

// cost is about the time upTo takes for idx.
func (s *levelSampler) cost(idx []int, target int) time.Duration {
	p, d := s.r.plan, time.Duration(0)
	for _, i := range idx {
		k := time.Duration(max(target-s.accs[i].cell.Samples, 0))
		d += k * (p.Duration + sampleOverhead)
		if s.ts[i].t.Isolated {
			d += k * (p.Warmup + sampleOverhead)
		}
	}
	return d
}

// sample runs one sample of target i into its cell; an isolated target
// is opened, primed and warmed up for it, and closed after it.
func (s *levelSampler) sample(ctx context.Context, i int, label string) error {
	r, w, level := s.r, s.w, s.level
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.accs[i].cell.Failed {
		return nil // an isolated target that failed to open
	}
	o, op := s.ts[i], s.ops[i]
	if o.t.Isolated {
		if o = r.open(ctx, o.t, s.d); o.err != nil {
			s.accs[i].fail(o.err)
			return nil
		}
		if err := r.prime(ctx, w, o); err != nil {
			_ = o.c.Close()
			s.accs[i].fail(err)
			return nil
		}
		op = w.Op(o.c, level)
		r.measure(ctx, s.d, o, op, level, r.plan.Warmup, r.plan.Rate, false)
		r.note(false, "%s %s ×%d %s warm-up", w.Name, o.t.Name, level, label)
	}
	smp, h := r.measure(ctx, s.d, o, op, level, r.plan.Duration, r.plan.Rate, true)
	s.accs[i].add(smp, h)
	if o.t.Isolated {
		_ = o.c.Close()
	}
	r.note(false, "%s %s ×%d %s: %s ops/s", w.Name, o.t.Name, level, label, si(smp.qps))
	return nil
}
