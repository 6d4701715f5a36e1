package report

import (
	"bytes"
	"fmt"
	"html/template"
	"strconv"
	"strings"

	"github.com/redisx-go/kit/benchmarks/verdict"
)

// renderPage is what report.html's template reads: text only, escaped by
// html/template, and the charts, already escaped by renderChart.
type renderPage struct {
	When, Command, Machine, Servers, Plan string
	Partial                               string
	Warnings                              []string
	Answer                                *renderPageAnswer
	Workloads                             []renderPageWorkload
	Verdicts                              []renderPageVerdict
	SLOBound                              string
	SLO                                   []renderPageSLO
	Baseline                              *renderPageBaseline
	Recommended                           []renderPageRec
	Undecided                             string
	Rule, IntervalLegend                  string
	CellHeader                            []string
	Cells                                 [][]string
}

type renderPageWorkload struct {
	ID, Name   string
	About      string // what the workload was
	QPS, P99   template.HTML
	Levels     []int
	Rows       []renderPageRow
	Crossovers []string
	Failed     []string
}

type renderPageRow struct {
	Target string
	Cells  []renderPageCell
}

type renderPageCell struct {
	QPS, CI, P99, Note, Class, Mark string
}

type renderPageVerdict struct {
	Workload, Level, Winner, Confidence, Margin, Interval, P, RunnerUp, TieBreak, Alternative, Class string
}

type renderPageSLO struct {
	Workload, Target, Workers, Rate, Failed, Latency, Note string
}

type renderPageBaseline struct {
	File, Started string
	Notes         []string
	Rows          [][]string
	Quiet         string
	Changes       []string
}

type renderPageRec struct {
	Target, Where, URL, Go, Near string
}

// renderHTML writes report.html: one page, readable offline — no script,
// no remote font, image or style sheet; the charts are inline SVG.
func renderHTML(out *bytes.Buffer, r *verdict.Report) error {
	t, err := template.New("report").Parse(renderHTMLTemplate)
	if err != nil {
		return err
	}
	return t.Execute(out, renderHTMLPage(r))
}

func renderHTMLPage(r *verdict.Report) renderPage {
	v := newReportView(r)
	p := renderPage{
		When:     renderWhen(r),
		Command:  r.Command,
		Machine:  renderMachine(r.Machine),
		Servers:  renderServers(r.Machine),
		Plan:     renderPlan(r.Settings),
		SLOBound: r.Settings.SLO,
		Answer:   renderHTMLAnswer(r),
	}
	if r.Partial {
		p.Partial = renderPartial
	}
	p.Warnings = r.Warnings
	for i, w := range v.workloads {
		pw := renderPageWorkload{ID: "w" + strconv.Itoa(i+1), Name: w.name, Levels: w.levels, About: renderWorkloadText(r, w.name)}
		if len(w.targets) > 0 {
			pw.QPS, pw.P99 = renderCharts(w)
		}
		for _, t := range w.targets {
			row := renderPageRow{Target: t}
			for _, l := range w.levels {
				var pc renderPageCell
				switch c := w.cell(t, l); {
				case c == nil:
					pc.QPS, pc.Class = "–", "missing"
				case c.Failed:
					pc.QPS, pc.Class = "failed", "failed"
					pc.Note = fmt.Sprintf("%d errors", c.Errors)
				default:
					pc.QPS, pc.CI, pc.P99 = renderQPS(c.QPS), renderCI(c), renderMs(c.P99ms)+" ms"
					switch m := w.mark(t, l); m {
					case "win":
						pc.Class, pc.Mark = "win", "winner"
					case "equivalent", "undecided":
						pc.Class, pc.Mark = m, m
					}
				}
				row.Cells = append(row.Cells, pc)
			}
			pw.Rows = append(pw.Rows, row)
		}
		for j, c := range w.crossovers {
			pw.Crossovers = append(pw.Crossovers, fmt.Sprintf("×%d %s", j+1, renderCrossover(c)))
		}
		for _, c := range w.failed {
			s := fmt.Sprintf("%s at %s: %d errors", c.Target, renderGoroutines(c.Concurrency), c.Errors)
			if c.FirstError != "" {
				s += "; first: " + renderOneLine(c.FirstError)
			}
			pw.Failed = append(pw.Failed, s)
		}
		p.Workloads = append(p.Workloads, pw)
		for _, l := range w.recLevels {
			rec := w.recs[l]
			pv := renderPageVerdict{
				Workload: w.name, Level: strconv.Itoa(l), Winner: rec.Strategy, Confidence: rec.Confidence,
				Margin: renderPercent(rec.Margin), Interval: renderPercentInterval(rec.MarginLo, rec.MarginHi),
				P: renderP(rec.PValue), RunnerUp: rec.RunnerUp, TieBreak: rec.TieBreak, Alternative: rec.Alternative,
			}
			if l := renderLevel(rec.IntervalLevel); l != "" && pv.Interval != "" {
				pv.Interval += " (" + l + ")"
			}
			switch {
			case rec.Confidence == verdict.Significant:
				pv.Class = "win"
			case rec.Confidence == verdict.Undecided:
				pv.Class, pv.Winner = "undecided", "none"
				pv.RunnerUp = first(rec.Contenders) + " vs " + rec.RunnerUp
				pv.TieBreak = "undecided between " + renderList(rec.Contenders)
				if rec.SuggestedMaxRepeats > 0 {
					pv.TieBreak += fmt.Sprintf("; -max-repeats %d might decide, if the estimate holds", rec.SuggestedMaxRepeats)
				}
			default:
				pv.Class = "equivalent"
			}
			if rec.Strategy == "" && rec.Confidence != verdict.Undecided {
				pv.Winner = "none: every cell failed"
			}
			p.Verdicts = append(p.Verdicts, pv)
		}
		for _, s := range v.slo(w.name) {
			ps := renderPageSLO{Workload: w.name, Target: s.Target, Workers: strconv.Itoa(s.Concurrency),
				Latency: renderSLOLatency(s), Note: renderSLONote(s)}
			ps.Rate, ps.Failed = renderSLORates(s)
			p.SLO = append(p.SLO, ps)
		}
	}
	if bc := r.Baseline; bc != nil {
		pb := &renderPageBaseline{File: bc.File, Started: bc.Started, Notes: renderBaselineNotes(bc), Changes: bc.VerdictChanges}
		for _, d := range bc.Cells {
			if d.Significant {
				pb.Rows = append(pb.Rows, []string{d.Workload, d.Target, strconv.Itoa(d.Concurrency),
					renderQPS(d.OldQPS), renderQPS(d.NewQPS), renderPercent(d.Change),
					renderPercentInterval(d.ChangeLo, d.ChangeHi), renderP(d.PAdjusted)})
			}
		}
		if len(bc.Cells) > 0 {
			_, pb.Quiet = renderBaselineQuiet(bc)
		}
		p.Baseline = pb
	}
	p.Undecided = strings.Join(v.undecided(), "; ")
	p.Rule, p.IntervalLegend = renderRule(r.Settings), renderIntervalLegend(r.Settings)
	for _, g := range v.recommended() {
		p.Recommended = append(p.Recommended, renderPageRec{
			Target: g.rec.Strategy, Where: strings.Join(g.where, "; "), URL: g.rec.URL, Go: strings.TrimRight(g.rec.Go, "\n"),
			Near: renderCapital(g.rec.Near),
		})
	}
	p.CellHeader = []string{"workload", "target", "goroutines", "QPS", "95% CI [lo, hi]", "p50 ms", "p90 ms", "p99 ms",
		"p99.9 ms", "max ms", "ops", "errors", "conns", "CPU µs/op", "allocs/op", "B/op", "hit ratio", "invalidations/write", "rate/s"}
	for _, c := range r.Cells {
		ci := "n/a"
		if renderFinite64(c.QPSLow) && renderFinite64(c.QPSHigh) {
			ci = renderInterval(c.QPSLow, c.QPSHigh, renderQPS)
		}
		errs := strconv.FormatInt(c.Errors, 10)
		if c.Failed {
			errs += " (failed)"
		}
		hit, inval, rate := "", "", ""
		if c.HitRatio != 0 {
			hit = renderSig(c.HitRatio*100, 3) + "%"
		}
		if c.InvalidationsPerWrite != 0 {
			inval = renderSig(c.InvalidationsPerWrite, 3)
		}
		if c.Rate != 0 {
			rate = renderQPS(c.Rate)
		}
		p.Cells = append(p.Cells, []string{c.Workload, c.Target, strconv.Itoa(c.Concurrency), renderQPS(c.QPS), ci,
			renderMs(c.P50ms), renderMs(c.P90ms), renderMs(c.P99ms), renderMs(c.P999ms), renderMs(c.MaxMs),
			strconv.FormatInt(c.Ops, 10), errs, strconv.Itoa(c.Conns), renderSig(c.CPUPerOp, 3),
			renderSig(c.AllocsPerOp, 3), renderSig(c.BytesPerOp, 3), hit, inval, rate})
	}
	return p
}

// renderHTMLTemplate is report.html. Its style sheet is inline: the page
// must read the same offline, from a mail attachment or a CI artifact.
const renderHTMLTemplate = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>redisx-bench report, {{.When}}</title>
<style>
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #222; margin: 0 auto; padding: 16px 24px 48px; max-width: 1400px; }
h1 { font-size: 22px; margin: 8px 0 12px; }
h2 { font-size: 18px; margin: 28px 0 8px; padding-top: 8px; border-top: 1px solid #ddd; }
h3 { font-size: 15px; margin: 16px 0 6px; }
dl.meta { display: grid; grid-template-columns: max-content 1fr; gap: 2px 14px; margin: 0 0 12px; }
dl.meta dt { font-weight: 600; }
dl.meta dd { margin: 0; }
.partial, .warning { background: #fff3cd; border: 1px solid #e0b100; padding: 8px 12px; margin: 0 0 12px; font-weight: 600; }
nav a { margin-right: 12px; }
.charts { display: flex; flex-wrap: wrap; gap: 12px; align-items: flex-start; }
.charts svg { max-width: 100%; height: auto; border: 1px solid #e5e5e5; background: #fff; }
table { border-collapse: collapse; margin: 8px 0; font-variant-numeric: tabular-nums; }
th, td { border: 1px solid #d5d5d5; padding: 3px 8px; text-align: right; vertical-align: top; }
th { background: #f3f3f3; }
td.name, th.name { text-align: left; max-width: 24em; overflow-wrap: anywhere; }
td.win { background: #dff0d8; font-weight: 600; }
td.nowrap { white-space: nowrap; overflow-wrap: normal; }
td.equivalent { background: #eef3fb; }
td.undecided { background: #fff3cd; }
#answer { background: #dff0d8; border: 1px solid #7cb36b; padding: 4px 12px; margin: 0 0 12px; }
#answer.undecided { background: #fff3cd; border-color: #e0b100; }
td.failed { background: #f8d7da; color: #842029; }
td.missing { color: #999; }
.ci, .p99 { color: #555; font-size: 12px; }
.mark { font-size: 11px; color: #333; }
code, pre { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 13px; }
pre { tab-size: 4; background: #f6f8fa; border: 1px solid #e1e4e8; padding: 8px 12px; overflow-x: auto; }
.url { overflow-wrap: anywhere; }
ul.notes { margin: 4px 0 8px; padding-left: 20px; }
</style>
</head>
<body>
<h1>redisx-bench report</h1>
{{with .Answer}}<section id="answer" class="{{.Class}}">
<p><strong>Answer: {{.Head}}</strong></p>
{{if .URL}}<p class="url">URL: <code>{{.URL}}</code></p>
{{end}}{{if .Alternative}}<p>Alternative: {{.Alternative}}</p>
{{end}}{{if .Password}}<p>{{.Password}}</p>
{{end}}{{if .Note}}<p>{{.Note}}</p>
{{end}}{{if .Near}}<p>{{.Near}}.</p>
{{end}}{{if .Workload}}<p>Workload {{.Workload}}</p>
{{end}}</section>
{{end}}{{if .Partial}}<p class="partial">{{.Partial}}</p>
{{end}}{{range .Warnings}}<p class="warning">Warning: {{.}}</p>
{{end}}<dl class="meta">
<dt>Date</dt><dd>{{.When}}</dd>
{{if .Command}}<dt>Command</dt><dd><code>{{.Command}}</code></dd>
{{end}}<dt>Machine</dt><dd>{{.Machine}}</dd>
<dt>Servers</dt><dd>{{.Servers}}</dd>
<dt>Plan</dt><dd>{{.Plan}}</dd>
</dl>
{{if .Workloads}}<nav>Workloads: {{range .Workloads}}<a href="#{{.ID}}">{{.Name}}</a> {{end}}<a href="#verdicts">verdicts</a> <a href="#cells">all cells</a></nav>
{{end}}{{range .Workloads}}
<section id="{{.ID}}">
<h2>{{.Name}}</h2>
{{if .About}}<p>{{.About}}</p>
{{end}}{{if .Rows}}<div class="charts">
{{.QPS}}
{{.P99}}
</div>
{{if .Crossovers}}<ul class="notes">{{range .Crossovers}}<li>{{.}}</li>{{end}}</ul>
{{end}}<table>
<thead><tr><th class="name">target \ goroutines</th>{{range .Levels}}<th>{{.}}</th>{{end}}</tr></thead>
<tbody>
{{range .Rows}}<tr><td class="name">{{.Target}}</td>{{range .Cells}}<td class="{{.Class}}">{{.QPS}}{{if .CI}} <span class="ci">{{.CI}}</span>{{end}}{{if .Mark}} <span class="mark">{{.Mark}}</span>{{end}}{{if .P99}}<br><span class="p99">p99 {{.P99}}</span>{{end}}{{if .Note}}<br><span class="p99">{{.Note}}</span>{{end}}</td>{{end}}</tr>
{{end}}</tbody>
</table>
<p class="ci">QPS: median of the samples, [lo, hi]: its 95% confidence interval (the error bars of the chart). A failed cell had errors and never wins.</p>
{{if .Failed}}<ul class="notes">{{range .Failed}}<li>{{.}}</li>{{end}}</ul>
{{end}}{{else}}<p>No cell was measured.</p>
{{end}}</section>
{{end}}
<section id="verdicts">
<h2>Verdicts</h2>
{{if .Verdicts}}<table>
<thead><tr><th class="name">workload</th><th>goroutines</th><th class="name">named</th><th class="name">outcome</th><th>margin</th><th>interval</th><th>p</th><th class="name">against</th><th class="name">why</th></tr></thead>
<tbody>
{{range .Verdicts}}<tr><td class="name">{{.Workload}}</td><td>{{.Level}}</td><td class="name nowrap {{.Class}}">{{.Winner}}</td><td class="name nowrap">{{.Confidence}}</td><td>{{.Margin}}</td><td>{{.Interval}}</td><td>{{.P}}</td><td class="name">{{.RunnerUp}}</td><td class="name">{{.TieBreak}}{{if .Alternative}}<br>Alternative: {{.Alternative}}{{end}}</td></tr>
{{end}}</tbody>
</table>
<p class="ci">Three outcomes, on the interval of the ratio of two targets' scores: {{.Rule}}. A winner is named; among equivalent targets the tie-break names the one of fewest connections that no target is significantly faster than; an undecided verdict names none. Intervals: {{.IntervalLegend}}.</p>
{{else}}<p>No verdict.</p>
{{end}}</section>
{{if .SLO}}
<section id="slo">
<h2>SLO {{.SLOBound}}</h2>
<p>The highest open-loop rate each target held the bound at, and the lowest it broke it at.</p>
<table>
<thead><tr><th class="name">workload</th><th class="name">target</th><th>workers</th><th>held/s</th><th>failed/s</th><th>latency (ms)</th><th class="name"></th></tr></thead>
<tbody>
{{range .SLO}}<tr><td class="name">{{.Workload}}</td><td class="name">{{.Target}}</td><td>{{.Workers}}</td><td>{{.Rate}}</td><td>{{.Failed}}</td><td>{{.Latency}}</td><td class="name">{{.Note}}</td></tr>
{{end}}</tbody>
</table>
</section>
{{end}}{{with .Baseline}}
<section id="baseline">
<h2>Against the baseline</h2>
<p>Baseline <code>{{.File}}</code>, run {{.Started}}. {{.Quiet}}</p>
{{range .Notes}}<p class="warning">{{.}}</p>
{{end}}{{if .Rows}}<table>
<thead><tr><th class="name">workload</th><th class="name">target</th><th>goroutines</th><th>old QPS</th><th>new QPS</th><th>change</th><th>95% interval</th><th>adjusted p</th></tr></thead>
<tbody>
{{range .Rows}}<tr>{{range $i, $c := .}}<td{{if lt $i 2}} class="name"{{end}}>{{$c}}</td>{{end}}</tr>
{{end}}</tbody>
</table>
{{end}}{{if .Changes}}<h3>Verdicts that changed</h3>
<ul class="notes">{{range .Changes}}<li>{{.}}</li>{{end}}</ul>
{{end}}</section>
{{end}}{{if or .Recommended .Undecided}}
<section id="recommended">
<h2>Recommended configuration</h2>
{{range .Recommended}}<h3>{{.Target}}</h3>
<p>Chosen for {{.Where}}.</p>
{{if .URL}}<p class="url">URL: <code>{{.URL}}</code></p>
{{if .Go}}<pre><code>{{.Go}}</code></pre>
{{end}}{{if .Near}}<p>{{.Near}}.</p>
{{end}}{{else}}<p>A peer client, not redisx: no URL.</p>
{{end}}{{end}}{{if .Undecided}}<h3>None: undecided</h3>
<p>No configuration is named for {{.Undecided}}.</p>
{{end}}</section>
{{end}}
<section id="cells">
<h2>All cells</h2>
<details>
<summary>{{len .Cells}} cells</summary>
<table>
<thead><tr>{{range $i, $h := .CellHeader}}<th{{if lt $i 2}} class="name"{{end}}>{{$h}}</th>{{end}}</tr></thead>
<tbody>
{{range .Cells}}<tr>{{range $i, $c := .}}<td{{if lt $i 2}} class="name"{{end}}>{{$c}}</td>{{end}}</tr>
{{end}}</tbody>
</table>
</details>
</section>
</body>
</html>
`
