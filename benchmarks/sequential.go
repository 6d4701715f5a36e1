package benchmarks

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/redisx-go/kit/benchmarks/verdict"
)

// Sequential sampling (see verdict.Sampling): a verdict still undecided
// after a cell's samples gets more of them, for its contenders only, in
// rounds of Plan.Repeats, up to Plan.MaxRepeats.

// sampling is p's sequential sampling: its looks and their rule.
func (p Plan) sampling() verdict.Sampling {
	return verdict.Sampling{Alpha: p.Alpha, Margin: p.Margin, Repeats: p.Repeats, MaxRepeats: p.MaxRepeats}
}

// lookAgain looks at the samples of the targets at live, and while their
// verdict is undecided and more samples could decide it, within
// MaxRepeats and the time left, takes another round of its contenders
// and looks again. It returns the looks made.
func (s *levelSampler) lookAgain(ctx context.Context, live []int) (int, error) {
	r, w, level, accs, ts := s.r, s.w, s.level, s.accs, s.ts
	looked := 1
	for ; looked < r.plan.sampling().Looks(); looked++ {
		cells := make([]verdict.Cell, 0, len(live))
		for _, i := range live {
			cells = append(cells, accs[i].finish())
		}
		rec, names := r.plan.sampling().NextLook(cells)
		if names == nil {
			if rec.Confidence == verdict.Undecided {
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
		target := r.plan.sampling().LookSamples(looked + 1)
		if cost := s.cost(more, target); cost > r.moreLeft {
			r.note(true, "%s ×%d: undecided between %s after %d samples; the time for more samples (%v) is spent",
				w.Name, level, strings.Join(names, ", "), rec.Samples, r.moreBudget.Round(time.Second))
			break
		}
		r.total += s.planned(more, target)
		r.note(true, "%s ×%d: undecided between %s after %d samples; up to %d each (look %d of %d)",
			w.Name, level, strings.Join(names, ", "), rec.Samples, target, looked+1, r.plan.sampling().Looks())
		began := time.Now()
		if err := s.upTo(ctx, more, target); err != nil {
			return looked, err
		}
		r.moreLeft -= time.Since(began)
	}
	return looked, nil
}

// unlikely says why an undecided verdict gets no more samples.
func unlikely(rec verdict.Recommendation, maxRepeats int) string {
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
