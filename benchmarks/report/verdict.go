package report

// Verdicts, crossovers, baselines and intervals as sentences, shared by
// report.md, report.html and the summary.

import (
	"fmt"
	"math"
	"strings"

	"github.com/redisx-go/kit/benchmarks"
)

// renderInterval is [lo, hi] in format; empty when either end is not a
// number or they are out of order.
func renderInterval(lo, hi float64, format func(float64) string) string {
	if math.IsNaN(lo) || math.IsNaN(hi) || hi < lo {
		return ""
	}
	return "[" + format(lo) + ", " + format(hi) + "]"
}

// renderPercentInterval is an interval of ratios less 1, "[+3.1%, +9.8%]";
// empty when unknown (both ends 0, as in a report from before intervals).
func renderPercentInterval(lo, hi float64) string {
	if lo == 0 && hi == 0 {
		return ""
	}
	return renderInterval(lo, hi, func(x float64) string {
		if math.IsInf(x, 1) {
			return "+∞"
		}
		return renderPercent(x)
	})
}

// renderCrossover is c as a sentence.
func renderCrossover(c benchmarks.Crossover) string {
	if c.Text != "" {
		return c.Text
	}
	return fmt.Sprintf("%s overtakes %s between %d and %d goroutines", c.To, c.From, c.Below, c.Above)
}

// renderVerdict is a verdict as a sentence, honest about ties: the
// margin with its interval, and whether the samples could have told a
// margin-sized difference at all.
func renderVerdict(rec *benchmarks.Recommendation) string {
	margin := func(signed bool) string {
		m := renderPercent(rec.Margin)
		if !signed {
			m = strings.TrimPrefix(m, "+")
		}
		if iv := renderPercentInterval(rec.MarginLo, rec.MarginHi); iv != "" {
			m += " " + iv
		}
		return m
	}
	switch {
	case rec.Strategy == "":
		return "no verdict: no cell succeeded"
	case rec.Confidence == benchmarks.Significant && rec.RunnerUp == "":
		return rec.Strategy + " wins (the only target)"
	case rec.Confidence == benchmarks.Significant:
		return fmt.Sprintf("%s wins over %s by %s (p = %s)", rec.Strategy, rec.RunnerUp, margin(false), renderP(rec.PValue))
	}
	s := fmt.Sprintf("tie between %s and %s (%s, p = %s)", rec.Strategy, rec.RunnerUp, margin(true), renderP(rec.PValue))
	if rec.RunnerUp == "" {
		s = "tie"
	}
	if rec.Underpowered {
		s += "; underpowered: the interval is wider than the margin, so the samples could not tell a margin-sized difference from none"
	}
	if rec.TieBreak != "" {
		s += "; " + rec.Strategy + " by the tie-break: " + rec.TieBreak
	} else {
		s += "; " + rec.Strategy + " named"
	}
	return s
}

// renderBaselineNotes are the sentences that must precede a baseline's
// table: whether the runs are comparable, and whether they have cells in
// common at all.
func renderBaselineNotes(bc *benchmarks.BaselineComparison) []string {
	var out []string
	if !bc.Compatible {
		s := "NOT LIKE WITH LIKE: the two runs differ in"
		if len(bc.Mismatches) == 0 {
			s += " conditions not recorded"
		} else {
			s += " " + strings.Join(bc.Mismatches, "; ")
		}
		out = append(out, s+". A change below may be that difference's, not the code's.")
	}
	if len(bc.Cells) == 0 {
		out = append(out, "No cell in common: no workload, target and level of this run was measured in the baseline, so nothing was compared.")
	}
	return out
}

// renderBaselineQuiet is the count of cells without a significant change.
func renderBaselineQuiet(bc *benchmarks.BaselineComparison) (quiet int, sentence string) {
	for _, d := range bc.Cells {
		if !d.Significant {
			quiet++
		}
	}
	return quiet, fmt.Sprintf("%d of %d cells without a significant change (Benjamini–Hochberg over the %d cells, and the interval of the change beyond the margin).",
		quiet, len(bc.Cells), len(bc.Cells))
}
