// Package verdicttest checks verdicts in tests against bars V1 and V2. For
// V1 it checks the rule that no verdict names a target another beats; for
// V2's rates it keeps a tally of outcomes over many verdicts.
package verdicttest

import (
	"fmt"
	"slices"
	"testing"

	"github.com/redisx-go/kit/benchmarks/verdict"
)

// NamesNoSlower fails t when rec names a target another target of cells
// beats with p < 0.05 (and an interval of the ratio above 1): bar V1,
// which the rule keeps even among equivalent targets.
func NamesNoSlower(t testing.TB, rec verdict.Recommendation, cells []verdict.Cell) {
	t.Helper()
	if rec.Strategy == "" {
		return
	}
	i := slices.IndexFunc(cells, func(c verdict.Cell) bool { return c.Target == rec.Strategy })
	for _, c := range cells {
		if c.Target == rec.Strategy {
			continue
		}
		p := verdict.RankP(c.QPSSamples, cells[i].QPSSamples, 0.05)
		if lo, _ := verdict.RatioInterval(c.QPSSamples, cells[i].QPSSamples, 0.05); p < 0.05 && lo > 1 {
			t.Errorf("%s named (%s) though %s beats it: p = %.4f, interval of the ratio from %.3f", rec.Strategy, rec.Confidence, c.Target, p, lo)
		}
	}
}

// Outcomes counts verdicts by outcome, and how many named each target.
type Outcomes struct {
	N                                  int
	Significant, Equivalent, Undecided int
	Named                              map[string]int
	Samples                            int // of every target, summed
}

// Add counts rec, the verdict of cells.
func (o *Outcomes) Add(rec verdict.Recommendation, cells []verdict.Cell) {
	if o.Named == nil {
		o.Named = map[string]int{}
	}
	o.N++
	switch rec.Confidence {
	case verdict.Significant:
		o.Significant++
	case verdict.Equivalent:
		o.Equivalent++
	case verdict.Undecided:
		o.Undecided++
	}
	o.Named[rec.Strategy]++
	for _, c := range cells {
		o.Samples += c.Samples
	}
}

// Rate is k over the verdicts counted.
func (o Outcomes) Rate(k int) float64 { return float64(k) / float64(max(o.N, 1)) }

func (o Outcomes) String() string {
	pct := func(k int) string { return fmt.Sprintf("%.1f%%", 100*o.Rate(k)) }
	return fmt.Sprintf("%d verdicts: significant %s, equivalent %s, undecided %s; named %v; %.1f samples per verdict",
		o.N, pct(o.Significant), pct(o.Equivalent), pct(o.Undecided), o.Named, float64(o.Samples)/float64(max(o.N, 1)))
}
