package report

// Verdicts, crossovers, baselines and intervals as sentences, shared by
// report.md, report.html and the summary.

import (
	"cmp"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/redisx-go/kit/benchmarks/verdict"
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
func renderCrossover(c verdict.Crossover) string {
	if c.Text != "" {
		return c.Text
	}
	return fmt.Sprintf("%s overtakes %s between %d and %d goroutines", c.To, c.From, c.Below, c.Above)
}

// renderLevel is a confidence level as a percentage: "95%", "98.3%";
// empty when unknown (a report from before levels were recorded).
func renderLevel(level float64) string {
	if !(level > 0 && level < 1) {
		return ""
	}
	s := strconv.FormatFloat(100*level, 'f', 1, 64)
	return strings.TrimSuffix(s, ".0") + "%"
}

// renderLeveledInterval is an interval of a ratio, less 1, with its
// level: "95% interval [-1.2%, +7.9%]"; without the level when unknown;
// empty when the interval is.
func renderLeveledInterval(lo, hi, level float64) string {
	iv := renderPercentInterval(lo, hi)
	if l := renderLevel(level); l != "" && iv != "" {
		return l + " interval " + iv
	}
	return iv
}

// renderMargin is a plan's margin as a percentage: "5%".
func renderMargin(margin float64) string {
	return strconv.FormatFloat(100*margin, 'g', 3, 64) + "%"
}

// renderList joins names as "a", "a and b", "a, b and c".
func renderList(names []string) string {
	switch len(names) {
	case 0:
		return ""
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// renderUndecided says why a verdict is undecided and what would decide
// it: "the data cannot tell them apart within 5% (a over b: +3.1%, 95%
// interval [-1.2%, +7.9%]; 18 samples each); run with -max-repeats 36".
func renderUndecided(margin float64, leader, runnerUp string, m, lo, hi, level float64, samples, suggested int) string {
	s := fmt.Sprintf("the data cannot tell them apart within %s (%s over %s: %s", renderMargin(margin), leader, runnerUp, renderPercent(m))
	if iv := renderLeveledInterval(lo, hi, level); iv != "" {
		s += ", " + iv
	}
	if samples > 0 {
		s += fmt.Sprintf("; %d samples each", samples)
	}
	s += ")"
	if suggested > 0 {
		return s + fmt.Sprintf("; run with -max-repeats %d", suggested)
	}
	return s + "; more samples alone are unlikely to: quieten the machine, or lengthen the samples (-duration)"
}

// renderWithInterval is "+3.1% (95% interval [-1.2%, +7.9%])", or the
// percentage alone when the interval is unknown.
func renderWithInterval(m, lo, hi, level float64) string {
	if iv := renderLeveledInterval(lo, hi, level); iv != "" {
		return renderPercent(m) + " (" + iv + ")"
	}
	return renderPercent(m)
}

// renderVerdict is a verdict as a sentence: the outcome, the margin with
// its interval, and what the tie-break chose or what is undecided.
func renderVerdict(rec *verdict.Recommendation, margin float64) string {
	iv := renderWithInterval(rec.Margin, rec.MarginLo, rec.MarginHi, rec.IntervalLevel)
	switch {
	case rec.Confidence == verdict.Undecided:
		return "undecided between " + renderList(rec.Contenders) + ": " + renderUndecided(margin, cmp.Or(first(rec.Contenders), "the leader"),
			rec.RunnerUp, rec.Margin, rec.MarginLo, rec.MarginHi, rec.IntervalLevel, rec.Samples, rec.SuggestedMaxRepeats)
	case rec.Strategy == "":
		return "no verdict: no cell succeeded"
	case rec.Confidence == verdict.Significant && rec.RunnerUp == "":
		return rec.Strategy + " wins (the only target)"
	case rec.Confidence == verdict.Significant:
		return fmt.Sprintf("%s wins over %s by %s, %s", rec.Strategy, rec.RunnerUp, strings.TrimPrefix(iv, "+"), verdict.PText(rec.PValue))
	}
	s := fmt.Sprintf("%s, equivalent to %s within %s: %s, %s", rec.Strategy, rec.RunnerUp, renderMargin(margin), iv, verdict.PText(rec.PValue))
	if rec.Confidence != verdict.Equivalent { // a report of version 2 and its "tie"
		s = fmt.Sprintf("%s, %s with %s: %s, %s", rec.Strategy, rec.Confidence, rec.RunnerUp, iv, verdict.PText(rec.PValue))
	}
	if rec.TieBreak != "" {
		s += "; by the tie-break: " + rec.TieBreak
	}
	if rec.Alternative != "" {
		s += "; alternative: " + rec.Alternative
	}
	return s
}

// renderIntervalLegend says the levels of a report's intervals of the
// ratio: "95% for a win or undecided, 90% (two one-sided tests) for
// equivalent".
func renderIntervalLegend(s verdict.Settings) string {
	look := s.LookAlpha
	if !(look > 0) {
		look = s.Alpha
	}
	return fmt.Sprintf("%s for a win or undecided, %s (two one-sided tests) for equivalent", renderLevel(1-look), renderLevel(1-2*look))
}

func first(ss []string) string {
	if len(ss) == 0 {
		return ""
	}
	return ss[0]
}

// renderBaselineNotes are the sentences that must precede a baseline's
// table: whether the runs are comparable, and whether they have cells in
// common at all.
func renderBaselineNotes(bc *verdict.BaselineComparison) []string {
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
func renderBaselineQuiet(bc *verdict.BaselineComparison) (quiet int, sentence string) {
	for _, d := range bc.Cells {
		if !d.Significant {
			quiet++
		}
	}
	return quiet, fmt.Sprintf("%d of %d cells without a significant change (Benjamini–Hochberg over the %d cells, and the interval of the change beyond the margin).",
		quiet, len(bc.Cells), len(bc.Cells))
}
