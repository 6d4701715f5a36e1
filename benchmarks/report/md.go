package report

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/redisx-go/kit/benchmarks/verdict"
)

// renderMarkdown writes report.md: the run's header, then per workload a
// table of QPS and p99 by target and level with its verdicts, crossovers
// and failures, then SLO results, baseline changes and the recommended
// configurations.
func renderMarkdown(out *bytes.Buffer, r *verdict.Report) error {
	v := newReportView(r)
	var b strings.Builder
	b.WriteString("# redisx-bench report\n\n")
	renderAnswerMD(&b, r)
	if r.Partial {
		b.WriteString("> **" + renderMD(renderPartial) + "**\n\n")
	}
	fmt.Fprintf(&b, "- **Date:** %s\n", renderMD(renderWhen(r)))
	if r.Command != "" {
		fmt.Fprintf(&b, "- **Command:** %s\n", renderMDCode(r.Command))
	}
	fmt.Fprintf(&b, "- **Machine:** %s\n", renderMD(renderMachine(r.Machine)))
	fmt.Fprintf(&b, "- **Servers:** %s\n", renderMD(renderServers(r.Machine)))
	fmt.Fprintf(&b, "- **Plan:** %s\n", renderMD(renderPlan(r.Settings)))
	for _, w := range r.Warnings {
		fmt.Fprintf(&b, "\n> **Warning:** %s\n", renderMD(w))
	}

	for _, w := range v.workloads {
		fmt.Fprintf(&b, "\n## %s\n", renderMD(w.name))
		if d := renderWorkloadText(r, w.name); d != "" {
			fmt.Fprintf(&b, "\n%s\n", renderMD(d))
		}
		if len(w.targets) > 0 {
			b.WriteString("\nQPS (median of the samples) [95% confidence interval] / p99 latency, by goroutines. " +
				"**Bold**: the winner at that level; *equivalent*: no significant winner, the one named by the tie-break " +
				"among targets equivalent within the margin; *undecided*: a contender of a verdict that names none.\n\n")
			b.WriteString("| target |")
			for _, l := range w.levels {
				fmt.Fprintf(&b, " %d |", l)
			}
			b.WriteString("\n|---|")
			b.WriteString(strings.Repeat("--:|", len(w.levels)))
			b.WriteString("\n")
			for _, t := range w.targets {
				b.WriteString("| " + renderMD(t) + " |")
				for _, l := range w.levels {
					b.WriteString(" " + renderMDCell(w, t, l) + " |")
				}
				b.WriteString("\n")
			}
		}
		if len(w.recLevels) > 0 {
			b.WriteString("\nVerdicts (intervals of the ratio: " + renderMD(renderIntervalLegend(r.Settings)) + "):\n\n")
			for _, l := range w.recLevels {
				fmt.Fprintf(&b, "- %s: %s\n", renderGoroutines(l), renderMD(renderVerdict(w.recs[l], r.Settings.Margin)))
			}
		}
		if len(w.crossovers) > 0 {
			b.WriteString("\nCrossovers:\n\n")
			for _, c := range w.crossovers {
				fmt.Fprintf(&b, "- %s\n", renderMD(renderOneLine(renderCrossover(c))))
			}
		}
		if len(w.failed) > 0 {
			b.WriteString("\nFailed cells (they never win):\n\n")
			for _, c := range w.failed {
				fmt.Fprintf(&b, "- %s at %s: %d errors", renderMD(c.Target), renderGoroutines(c.Concurrency), c.Errors)
				if c.FirstError != "" {
					b.WriteString("; first: " + renderMDCode(renderOneLine(c.FirstError)))
				}
				b.WriteString("\n")
			}
		}
	}

	if len(r.SLO) > 0 {
		fmt.Fprintf(&b, "\n## SLO %s\n\nThe highest open-loop rate each target held the bound at, and the lowest it broke it at.\n\n", renderMD(r.Settings.SLO))
		b.WriteString("| workload | target | workers | held/s | failed/s | latency (ms) | |\n|---|---|--:|--:|--:|--:|---|\n")
		for _, w := range v.workloads {
			for _, s := range v.slo(w.name) {
				held, failed := renderSLORates(s)
				fmt.Fprintf(&b, "| %s | %s | %d | %s | %s | %s | %s |\n", renderMD(w.name), renderMD(s.Target),
					s.Concurrency, held, failed, renderSLOLatency(s), renderMD(renderSLONote(s)))
			}
		}
	}

	if bc := r.Baseline; bc != nil {
		fmt.Fprintf(&b, "\n## Against the baseline\n\nBaseline %s, run %s.\n\n", renderMDCode(bc.File), renderMD(bc.Started))
		for _, n := range renderBaselineNotes(bc) {
			fmt.Fprintf(&b, "> **%s**\n\n", renderMD(n))
		}
		var rows strings.Builder
		for _, d := range bc.Cells {
			if d.Significant {
				fmt.Fprintf(&rows, "| %s | %s | %d | %s | %s | %s | %s | %s |\n", renderMD(d.Workload), renderMD(d.Target),
					d.Concurrency, renderQPS(d.OldQPS), renderQPS(d.NewQPS), renderPercent(d.Change),
					renderPercentInterval(d.ChangeLo, d.ChangeHi), renderP(d.PAdjusted))
			}
		}
		if rows.Len() > 0 {
			b.WriteString("Cells whose QPS changed significantly:\n\n")
			b.WriteString("| workload | target | goroutines | old QPS | new QPS | change | 95% interval | adjusted p |\n|---|---|--:|--:|--:|--:|--:|--:|\n")
			b.WriteString(rows.String())
			b.WriteString("\n")
		}
		if len(bc.Cells) > 0 {
			_, quiet := renderBaselineQuiet(bc)
			b.WriteString(renderMD(quiet) + "\n")
		}
		if len(bc.VerdictChanges) > 0 {
			b.WriteString("\nVerdicts that changed:\n\n")
			for _, c := range bc.VerdictChanges {
				fmt.Fprintf(&b, "- %s\n", renderMD(renderOneLine(c)))
			}
		}
	}

	groups, undecided := v.recommended(), v.undecided()
	if len(groups) > 0 || len(undecided) > 0 {
		b.WriteString("\n## Recommended configuration\n")
		for _, g := range groups {
			fmt.Fprintf(&b, "\n### %s\n\nChosen for %s.\n\n", renderMD(g.rec.Strategy), renderMD(strings.Join(g.where, "; ")))
			if g.rec.URL == "" {
				b.WriteString("A peer client, not redisx: no URL.\n")
				continue
			}
			fmt.Fprintf(&b, "URL: %s\n", renderMDCode(g.rec.URL))
			if g.rec.Go != "" {
				fence := "```"
				for strings.Contains(g.rec.Go, fence) {
					fence += "`"
				}
				fmt.Fprintf(&b, "\n%sgo\n%s\n%s\n", fence, strings.TrimRight(g.rec.Go, "\n"), fence)
			}
			if g.rec.Near != "" {
				fmt.Fprintf(&b, "\n%s.\n", renderMD(renderCapital(g.rec.Near)))
			}
		}
		if len(undecided) > 0 {
			fmt.Fprintf(&b, "\n### None: undecided\n\nNo configuration is named for %s.\n", renderMD(strings.Join(undecided, "; ")))
		}
	}
	out.WriteString(b.String())
	return nil
}

// renderMDCell is one cell of a workload table.
func renderMDCell(w *reportWorkload, target string, level int) string {
	c := w.cell(target, level)
	switch {
	case c == nil:
		return "–"
	case c.Failed:
		return fmt.Sprintf("failed (%d errors)", c.Errors)
	}
	qps := renderQPS(c.QPS)
	switch w.mark(target, level) {
	case "win":
		qps = "**" + qps + "**"
	case "equivalent":
		qps = "*" + qps + " equivalent*"
	case "undecided":
		qps += " *undecided*"
	}
	if ci := renderCI(c); ci != "" {
		qps += " " + ci // digits, SI suffixes, commas and brackets: no markup
	}
	return qps + " / " + renderMs(c.P99ms) + " ms"
}

func renderGoroutines(n int) string {
	if n == 1 {
		return "1 goroutine"
	}
	return strconv.Itoa(n) + " goroutines"
}

// renderMD escapes s for Markdown text, table cells included: names come
// from the command line and must not become markup, links or HTML.
func renderMD(s string) string {
	var b strings.Builder
	for _, r := range renderOneLine(s) {
		switch r {
		case '\\', '`', '*', '_', '[', ']', '|', '~', '#':
			b.WriteByte('\\')
			b.WriteRune(r)
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '&':
			b.WriteString("&amp;")
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// renderMDCode is s as a code span, fenced by more backticks than it
// holds (used outside tables only: in a table a pipe would split it).
func renderMDCode(s string) string {
	s = renderOneLine(s)
	fence := "`"
	for strings.Contains(s, fence) {
		fence += "`"
	}
	pad := ""
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		pad = " "
	}
	return fence + pad + s + pad + fence
}
