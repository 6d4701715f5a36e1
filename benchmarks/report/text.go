package report

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/redisx-go/kit/benchmarks/verdict"
)

// renderWidth is the terminal width the summary fits.
const renderWidth = 100

// WriteSummary writes the summary of r a person reads at the end of a run,
// fitted to a 100-column terminal: per workload a table of QPS (median and
// 95% confidence interval) by target and concurrency level, failed cells
// marked; then the verdicts, crossovers, SLO results, changes against the
// baseline, and each recommended configuration as a URL and a Go snippet.
func WriteSummary(w io.Writer, r *verdict.Report) error {
	if r == nil {
		return fmt.Errorf("redisx: WriteSummary of a nil report")
	}
	var b strings.Builder
	renderSummary(&b, r)
	_, err := io.WriteString(w, b.String())
	return err
}

func renderSummary(b *strings.Builder, r *verdict.Report) {
	v := newReportView(r)
	renderAnswerText(b, r)
	fmt.Fprintf(b, "redisx-bench, %s\n", renderWhen(r))
	if r.Partial {
		renderWrap(b, "!! "+renderPartial, "   ")
	}
	renderWrap(b, "machine: "+renderMachine(r.Machine)+"; "+renderServers(r.Machine), "  ")
	renderWrap(b, "plan: "+renderPlan(r.Settings), "  ")
	for _, w := range r.Warnings {
		renderWrap(b, "!! warning: "+renderOneLine(w), "   ")
	}

	for _, w := range v.workloads {
		if len(w.targets) == 0 {
			continue
		}
		b.WriteString("\n")
		renderWrap(b, w.name+": QPS by goroutines, median [95% CI] (* winner, = equivalent, ? undecided)", "  ")
		if d := renderWorkloadText(r, w.name); d != "" {
			renderWrap(b, "  "+renderOneLine(d), "  ")
		}
		renderQPSTable(b, w)
		for _, c := range w.failed {
			msg := fmt.Sprintf("  FAILED %s at %d: %d errors", c.Target, c.Concurrency, c.Errors)
			if c.FirstError != "" {
				msg += "; first: " + renderOneLine(c.FirstError)
			}
			renderWrap(b, msg, "      ")
		}
	}

	if len(r.Recommendations) > 0 {
		b.WriteString("\nverdicts (the target named against the runner-up per workload and level)\n")
		// The margin as its interval (the point between its ends is in
		// report.md): a 100-column line has no room for both.
		t := renderTable{right: []bool{false, true, false, false, true, true, false}}
		t.add("workload", "level", "named", "outcome", "interval", "p", "against")
		var notes []string // why, after each row: the tie-break, the alternative, what would decide
		for _, w := range v.workloads {
			for _, l := range w.recLevels {
				rec := w.recs[l]
				named := rec.Strategy
				switch {
				case rec.Confidence == verdict.Undecided:
					named = "-"
				case named == "":
					named = "(none: every cell failed)"
				}
				margin := renderPercentInterval(rec.MarginLo, rec.MarginHi)
				if margin == "" || utf8.RuneCountInString(margin) > 18 {
					margin = renderPercent(rec.Margin)
				}
				t.add(renderTrunc(w.name, 16), strconv.Itoa(l), renderTrunc(named, 16), rec.Confidence,
					margin, renderP(rec.PValue), renderTrunc(rec.RunnerUp, 16))
				var why []string
				switch {
				case rec.Confidence == verdict.Undecided && rec.SuggestedMaxRepeats > 0:
					why = append(why, fmt.Sprintf("undecided between %s; -max-repeats %d might decide, if the estimate holds", renderList(rec.Contenders), rec.SuggestedMaxRepeats))
				case rec.Confidence == verdict.Undecided:
					why = append(why, "undecided between "+renderList(rec.Contenders))
				}
				if rec.TieBreak != "" && rec.Confidence != verdict.Undecided {
					why = append(why, "tie-break: "+renderOneLine(rec.TieBreak))
				}
				if rec.Alternative != "" {
					why = append(why, "alternative: "+renderOneLine(rec.Alternative))
				}
				notes = append(notes, strings.Join(why, "; "))
			}
		}
		lines := t.lines()
		b.WriteString("  " + lines[0] + "\n")
		for i, line := range lines[1:] {
			switch note := notes[i]; {
			case note == "":
				b.WriteString("  " + line + "\n")
			case utf8.RuneCountInString(line)+4+utf8.RuneCountInString(note) <= renderWidth:
				b.WriteString("  " + line + "  " + note + "\n")
			default:
				b.WriteString("  " + line + "\n")
				renderWrap(b, "      "+note, "        ") // the whole reason
			}
		}
		renderWrap(b, "  intervals of the ratio: "+renderIntervalLegend(r.Settings), "    ")
	}

	if len(r.Crossovers) > 0 {
		b.WriteString("\ncrossovers\n")
		for _, w := range v.workloads {
			for _, c := range w.crossovers {
				renderWrap(b, "  "+w.name+": "+renderOneLine(renderCrossover(c)), "      ")
			}
		}
	}

	if len(r.SLO) > 0 {
		fmt.Fprintf(b, "\nSLO %s, open loop: the highest rate each target held the bound at, the lowest it broke it at\n", r.Settings.SLO)
		t := renderTable{right: []bool{false, false, true, true, true, true, false}}
		t.add("workload", "target", "workers", "held/s", "failed/s", "latency", "")
		for _, w := range v.workloads {
			for _, s := range v.slo(w.name) {
				held, failed := renderSLORates(s)
				lat := renderSLOLatency(s)
				if s.MaxRate > 0 {
					lat += " ms"
				}
				t.add(renderTrunc(w.name, 20), renderTrunc(s.Target, 28), strconv.Itoa(s.Concurrency), held, failed,
					lat, renderSLOState(s))
			}
		}
		for _, line := range t.lines() {
			b.WriteString("  " + line + "\n")
		}
		for _, w := range v.workloads {
			for _, s := range v.slo(w.name) {
				if s.Note != "" {
					renderWrap(b, "  "+w.name+" "+s.Target+": "+renderOneLine(s.Note), "      ")
				}
			}
		}
	}

	if bc := r.Baseline; bc != nil {
		renderWrap(b, "\nbaseline "+renderOneLine(bc.File)+" (run "+bc.Started+"): significant changes in QPS", "  ")
		for _, n := range renderBaselineNotes(bc) {
			renderWrap(b, "  !! "+n, "     ")
		}
		t := renderTable{right: []bool{false, false, true, true, true, true, false, true}}
		t.add("workload", "target", "level", "old", "new", "change", "95% interval", "adj. p")
		for _, d := range bc.Cells {
			if d.Significant {
				t.add(renderTrunc(d.Workload, 18), renderTrunc(d.Target, 20), strconv.Itoa(d.Concurrency),
					renderQPS(d.OldQPS), renderQPS(d.NewQPS), renderPercent(d.Change),
					renderPercentInterval(d.ChangeLo, d.ChangeHi), renderP(d.PAdjusted))
			}
		}
		if len(t.rows) > 1 {
			for _, line := range t.lines() {
				b.WriteString("  " + line + "\n")
			}
		}
		if len(bc.Cells) > 0 {
			_, quiet := renderBaselineQuiet(bc)
			renderWrap(b, "  "+quiet, "  ")
		}
		for _, c := range bc.VerdictChanges {
			renderWrap(b, "  verdict changed: "+renderOneLine(c), "      ")
		}
	}

	groups, undecided := v.recommended(), v.undecided()
	if len(groups) > 0 || len(undecided) > 0 {
		b.WriteString("\nrecommended configuration\n")
		for _, g := range groups {
			renderWrap(b, "  "+g.rec.Strategy+", chosen for "+strings.Join(g.where, "; "), "      ")
			if g.rec.URL == "" {
				b.WriteString("    (a peer client, not redisx: no URL)\n")
				continue
			}
			b.WriteString("    url: " + g.rec.URL + "\n")
			if g.rec.Go != "" {
				b.WriteString("    go:\n")
				// Tabs as four spaces: a terminal's eight would push the
				// snippet off to the right.
				for _, line := range strings.Split(strings.TrimRight(g.rec.Go, "\n"), "\n") {
					b.WriteString("      " + strings.ReplaceAll(line, "\t", "    ") + "\n")
				}
			}
			if g.rec.Near != "" {
				renderWrap(b, "    "+renderCapital(g.rec.Near), "      ")
			}
		}
		if len(undecided) > 0 {
			renderWrap(b, "  none, undecided: "+strings.Join(undecided, "; "), "      ")
		}
	}
}

// renderQPSTable writes w's QPS table, split into several tables of
// fewer levels when one would be wider than the terminal.
func renderQPSTable(b *strings.Builder, w *reportWorkload) {
	text := func(t string, l int) string {
		c := w.cell(t, l)
		switch {
		case c == nil:
			return "-"
		case c.Failed:
			return "FAILED"
		}
		s := renderQPS(c.QPS)
		if ci := renderCI(c); ci != "" {
			s += " " + ci
		}
		switch w.mark(t, l) {
		case "win":
			s += "*"
		case "equivalent":
			s += "="
		case "undecided":
			s += "?"
		default:
			s += " "
		}
		return s
	}
	nameW := 0
	for _, t := range w.targets {
		nameW = max(nameW, utf8.RuneCountInString(renderTrunc(t, 28)))
	}
	colW := 0
	for _, l := range w.levels {
		colW = max(colW, len(strconv.Itoa(l)))
		for _, t := range w.targets {
			colW = max(colW, utf8.RuneCountInString(text(t, l)))
		}
	}
	per := max(1, (renderWidth-2-nameW)/(colW+2))
	for start := 0; start < len(w.levels); start += per {
		levels := w.levels[start:min(start+per, len(w.levels))]
		t := renderTable{right: []bool{false}}
		head := []string{"target"}
		for _, l := range levels {
			head = append(head, strconv.Itoa(l)+" ")
			t.right = append(t.right, true)
		}
		t.add(head...)
		for _, tg := range w.targets {
			row := []string{renderTrunc(tg, 28)}
			for _, l := range levels {
				row = append(row, text(tg, l))
			}
			t.add(row...)
		}
		for _, line := range t.lines() {
			b.WriteString("  " + line + "\n")
		}
	}
}

// renderTable aligns columns of text; right marks the right-aligned ones.
type renderTable struct {
	rows  [][]string
	right []bool
}

func (t *renderTable) add(cells ...string) { t.rows = append(t.rows, cells) }

// lines returns the rows with columns two spaces apart, without trailing
// spaces.
func (t *renderTable) lines() []string {
	var widths []int
	for _, row := range t.rows {
		for i, c := range row {
			if i == len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	out := make([]string, 0, len(t.rows))
	for _, row := range t.rows {
		var b strings.Builder
		for i, c := range row {
			if i > 0 {
				b.WriteString("  ")
			}
			pad := strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c))
			if i < len(t.right) && t.right[i] {
				b.WriteString(pad + c)
			} else {
				b.WriteString(c + pad)
			}
		}
		out = append(out, strings.TrimRight(b.String(), " "))
	}
	return out
}

// renderTrunc shortens s to n runes, keeping its head and its tail (where
// names such as multiplexed-1 and multiplexed-4 differ).
func renderTrunc(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	tail := (n - 1) / 2
	return string(r[:n-1-tail]) + "…" + string(r[len(r)-tail:])
}

// renderOneLine replaces the line breaks and tabs of s by spaces.
func renderOneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// renderWrap writes s wrapped at word boundaries to renderWidth columns,
// continuation lines starting with indent.
func renderWrap(b *strings.Builder, s, indent string) {
	for _, para := range strings.Split(s, "\n") {
		lead := para[:len(para)-len(strings.TrimLeft(para, " "))]
		line, n := lead, utf8.RuneCountInString(lead)
		for _, word := range strings.Fields(para) {
			wn := utf8.RuneCountInString(word)
			if n > utf8.RuneCountInString(lead) && n+1+wn > renderWidth {
				b.WriteString(line + "\n")
				line, n = indent+word, utf8.RuneCountInString(indent)+wn
				continue
			}
			if n > utf8.RuneCountInString(lead) {
				line += " "
				n++
			}
			line += word
			n += wn
		}
		b.WriteString(line + "\n")
	}
}
