package report

import (
	"fmt"
	"html/template"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/redisx-go/kit/benchmarks/verdict"
)

// The charts of report.html, drawn as inline SVG by this file alone: no
// script, no remote asset, and the same Report always gives the same
// bytes. Each target is a line with its own colour, dash pattern and
// marker, so that the lines stay apart in greyscale too, and the same in
// every chart of a report (reportView.targets); a point with a
// confidence interval has it as an error bar.

// chartColors is the Okabe–Ito palette (readable by the colour-blind),
// its yellow replaced by a dark gold that shows on white.
func chartColors() []string {
	return []string{"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#8C6D1F"}
}

// chartDashes are the lines' dash patterns, solid first.
func chartDashes() []string { return []string{"", "7 3", "2 3", "9 3 2 3", "4 4"} }

// chartMarkers is the number of marker shapes (chartMarker).
const chartMarkers = 6

// chartStyle is the look of the i-th target: colour, dash and marker
// cycle with coprime-ish periods (8, 5, 6), so the first 120 targets all
// differ.
type chartStyle struct {
	color, dash string
	marker      int
}

func chartStyleOf(i int) chartStyle {
	c, d := chartColors(), chartDashes()
	return chartStyle{color: c[i%len(c)], dash: d[i%len(d)], marker: i % chartMarkers}
}

// Chart point states.
const (
	chartMissing = iota // not measured, or not a drawable number
	chartOK
	chartFailed
)

// Ring marks on a point.
const (
	chartNoRing = iota
	chartWinRing
	chartEquivRing     // named among equivalent targets
	chartUndecidedRing // a contender of an undecided verdict
)

type chartPoint struct {
	y     float64
	state int
	ring  int
	// lo and hi are the ends of y's confidence interval, drawn as an
	// error bar; both 0: none.
	lo, hi float64
}

// bar reports whether p has an error bar that s can draw.
func (p chartPoint) bar(s chartY) bool {
	return p.state == chartOK && !(p.lo == 0 && p.hi == 0) && p.lo <= p.hi && s.drawable(p.lo) && s.drawable(p.hi)
}

type chartSeries struct {
	name   string
	style  chartStyle
	points []chartPoint // one per level of the chart
}

type chartBand struct {
	below, above int
	label, text  string
}

// chartSpec is one chart: a y quantity against concurrency.
type chartSpec struct {
	title, yTitle string
	latency       bool // p99: a log axis when the values span a decade
	levels        []int
	series        []chartSeries
	bands         []chartBand
}

// The chart's geometry, in SVG user units.
const (
	chartW        = 660.0
	chartLeft     = 66.0 // y tick labels and title
	chartRight    = 18.0
	chartTop      = 40.0 // chart title, band labels
	chartPlotH    = 270.0
	chartAxisH    = 48.0 // x tick labels and title
	chartLegendH  = 18.0 // one legend row
	chartLegendNC = 3    // legend columns
	chartPlotW    = chartW - chartLeft - chartRight
)

// renderChart draws c as one <svg> element.
func renderChart(c chartSpec) template.HTML {
	var b strings.Builder
	rows := (len(c.series) + chartLegendNC - 1) / chartLegendNC
	keys := chartKeys(c)
	// The key row is kept even when empty, so that a workload's two
	// charts have the same height.
	h := chartTop + chartPlotH + chartAxisH + float64(rows)*chartLegendH + chartLegendH + 12
	fmt.Fprintf(&b, `<svg class="chart" viewBox="0 0 %s %s" width="%s" height="%s" role="img" font-family="system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif">`,
		chartN(chartW), chartN(h), chartN(chartW), chartN(h))
	fmt.Fprintf(&b, "<title>%s</title>", chartEsc(c.title))
	fmt.Fprintf(&b, `<text x="%s" y="20" font-size="14" font-weight="600" fill="#222">%s</text>`, chartN(chartLeft), chartEsc(c.title))

	x := chartXScale(c.levels)
	y := chartYScale(c)
	plotBottom := chartTop + chartPlotH

	// Crossover bands, under everything else.
	for _, band := range c.bands {
		x0, x1 := x.pos(band.below), x.pos(band.above)
		if x1 < x0 {
			x0, x1 = x1, x0
		}
		x0, x1 = max(x0, chartLeft), min(x1, chartLeft+chartPlotW)
		fmt.Fprintf(&b, `<g class="crossover"><title>%s</title><rect x="%s" y="%s" width="%s" height="%s" fill="#7a7a7a" fill-opacity="0.13"/>`,
			chartEsc(band.text), chartN(x0), chartN(chartTop), chartN(max(x1-x0, 2)), chartN(chartPlotH))
		fmt.Fprintf(&b, `<text x="%s" y="%s" font-size="12" font-weight="600" text-anchor="middle" fill="#555">%s</text></g>`,
			chartN((x0+x1)/2), chartN(chartTop-5), chartEsc(band.label))
	}

	// Grid, ticks and tick labels.
	b.WriteString(`<g font-size="11" fill="#444">`)
	for _, t := range y.ticks {
		py := y.pos(t)
		fmt.Fprintf(&b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#e3e3e3"/>`, chartN(chartLeft), chartN(py), chartN(chartLeft+chartPlotW), chartN(py))
		fmt.Fprintf(&b, `<text x="%s" y="%s" text-anchor="end">%s</text>`, chartN(chartLeft-6), chartN(py+4), chartEsc(chartTick(y.label(t))))
	}
	lastLabel := math.Inf(-1)
	for _, l := range c.levels {
		px := x.pos(l)
		fmt.Fprintf(&b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#e3e3e3"/>`, chartN(px), chartN(chartTop), chartN(px), chartN(plotBottom))
		fmt.Fprintf(&b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#444"/>`, chartN(px), chartN(plotBottom), chartN(px), chartN(plotBottom+5))
		// Levels crowded on the log axis keep their tick, not their label.
		label := strconv.Itoa(l)
		if px-lastLabel >= float64(len(label))*7+8 {
			fmt.Fprintf(&b, `<text x="%s" y="%s" text-anchor="middle">%s</text>`, chartN(px), chartN(plotBottom+18), label)
			lastLabel = px
		}
	}
	b.WriteString(`</g>`)
	fmt.Fprintf(&b, `<rect x="%s" y="%s" width="%s" height="%s" fill="none" stroke="#444"/>`, chartN(chartLeft), chartN(chartTop), chartN(chartPlotW), chartN(chartPlotH))
	fmt.Fprintf(&b, `<text x="%s" y="%s" font-size="12" text-anchor="middle" fill="#222">goroutines (log scale)</text>`,
		chartN(chartLeft+chartPlotW/2), chartN(plotBottom+38))
	yTitle := c.yTitle
	if y.log {
		yTitle += " (log scale)"
	}
	fmt.Fprintf(&b, `<text transform="translate(16 %s) rotate(-90)" font-size="12" text-anchor="middle" fill="#222">%s</text>`,
		chartN(chartTop+chartPlotH/2), chartEsc(yTitle))

	// The lines: one path per run of drawable points, so that a missing or
	// failed cell leaves a gap.
	for _, s := range c.series {
		var d strings.Builder
		run := 0
		for i, p := range s.points {
			if p.state != chartOK || !y.drawable(p.y) {
				run = 0
				continue
			}
			if run == 0 {
				d.WriteString("M")
			} else {
				d.WriteString(" L")
			}
			fmt.Fprintf(&d, "%s %s", chartN(x.pos(c.levels[i])), chartN(y.pos(p.y)))
			run++
		}
		if d.Len() == 0 {
			continue
		}
		dash := ""
		if s.style.dash != "" {
			dash = fmt.Sprintf(` stroke-dasharray="%s"`, s.style.dash)
		}
		fmt.Fprintf(&b, `<path d="%s" fill="none" stroke="%s" stroke-width="2"%s stroke-linejoin="round"/>`, d.String(), s.style.color, dash)
	}

	// Error bars: the interval as it is, not a symmetric ±, in the
	// line's colour, with caps; under the markers, and each series' a few
	// units aside of the others', so that overlapping bars stay apart.
	for si, s := range c.series {
		dodge := (float64(si) - float64(len(c.series)-1)/2) * min(3, 18/float64(max(len(c.series), 1)))
		for i, p := range s.points {
			if !p.bar(y) {
				continue
			}
			px, y0, y1 := x.pos(c.levels[i])+dodge, y.pos(p.lo), y.pos(p.hi)
			fmt.Fprintf(&b, `<g class="errorbar"><title>%s at %d: 95%% interval %s</title><path d="M%s %s L%s %s M%s %s L%s %s M%s %s L%s %s" stroke="%s" stroke-width="1.5" fill="none"/></g>`,
				chartEsc(s.name), c.levels[i], chartEsc(renderInterval(p.lo, p.hi, y.label)),
				chartN(px), chartN(y0), chartN(px), chartN(y1),
				chartN(px-4), chartN(y0), chartN(px+4), chartN(y0),
				chartN(px-4), chartN(y1), chartN(px+4), chartN(y1), s.style.color)
		}
	}

	// Markers on top of every line, failures at the foot of the plot.
	failedAt := make([]int, len(c.levels)) // failures drawn per level so far
	for _, s := range c.series {
		for i, p := range s.points {
			px := x.pos(c.levels[i])
			switch {
			case p.state == chartFailed:
				py := plotBottom - 8 - 11*float64(failedAt[i])
				failedAt[i]++
				fmt.Fprintf(&b, `<g class="failed"><title>%s at %d: failed</title>%s</g>`,
					chartEsc(s.name), c.levels[i], chartCross(px, py, s.style.color))
			case p.state == chartOK && y.drawable(p.y):
				py := y.pos(p.y)
				fmt.Fprintf(&b, `<g><title>%s at %d: %s</title>%s</g>`,
					chartEsc(s.name), c.levels[i], chartEsc(y.label(p.y)), chartMarker(s.style.marker, px, py, s.style.color))
			}
		}
	}

	// Verdicts: a ring on the named target's point, dashed and labelled
	// "=" when it was named among equivalent targets; a dotted ring
	// labelled "?" on each contender of an undecided verdict.
	for _, s := range c.series {
		for i, p := range s.points {
			if p.ring == chartNoRing || p.state != chartOK || !y.drawable(p.y) {
				continue
			}
			px, py := x.pos(c.levels[i]), y.pos(p.y)
			title, dash, label := "equivalent at %d, named by the tie-break: %s", "3 2", "="
			switch p.ring {
			case chartWinRing:
				fmt.Fprintf(&b, `<circle cx="%s" cy="%s" r="9" fill="none" stroke="#111" stroke-width="1.8"><title>winner at %d: %s</title></circle>`,
					chartN(px), chartN(py), c.levels[i], chartEsc(s.name))
				continue
			case chartUndecidedRing:
				title, dash, label = "undecided at %d, a contender: %s", "1 2", "?"
			}
			fmt.Fprintf(&b, `<g><title>`+title+`</title><circle cx="%s" cy="%s" r="9" fill="none" stroke="#111" stroke-width="1.4" stroke-dasharray="%s"/>`,
				c.levels[i], chartEsc(s.name), chartN(px), chartN(py), dash)
			fmt.Fprintf(&b, `<text x="%s" y="%s" font-size="10" text-anchor="middle" fill="#111">%s</text></g>`, chartN(px), chartN(max(py-13, chartTop+9)), label)
		}
	}

	// Legend: one entry per target, then the key to the marks used.
	top := plotBottom + chartAxisH + 4
	colW := chartPlotW / chartLegendNC
	for i, s := range c.series {
		lx := chartLeft + float64(i%chartLegendNC)*colW
		ly := top + float64(i/chartLegendNC)*chartLegendH + chartLegendH/2
		dash := ""
		if s.style.dash != "" {
			dash = fmt.Sprintf(` stroke-dasharray="%s"`, s.style.dash)
		}
		fmt.Fprintf(&b, `<g class="legend"><title>%s</title><line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="2"%s/>%s`,
			chartEsc(s.name), chartN(lx), chartN(ly), chartN(lx+30), chartN(ly), s.style.color, dash,
			chartMarker(s.style.marker, lx+15, ly, s.style.color))
		fmt.Fprintf(&b, `<text x="%s" y="%s" font-size="11" fill="#222">%s</text></g>`,
			chartN(lx+36), chartN(ly+4), chartEsc(renderTrunc(s.name, 26)))
	}
	if len(keys) > 0 {
		ky := top + float64(rows)*chartLegendH + 4 + chartLegendH/2
		kx := chartLeft
		for _, k := range keys {
			b.WriteString(k.draw(kx, ky))
			fmt.Fprintf(&b, `<text x="%s" y="%s" font-size="11" fill="#444">%s</text>`, chartN(kx+14), chartN(ky+4), chartEsc(k.text))
			kx += 24 + float64(len(k.text))*6
		}
	}
	b.WriteString("</svg>")
	return template.HTML(b.String()) // every piece of text went through chartEsc
}

// chartKey is an entry of the key below a chart's legend.
type chartKey struct {
	text string
	draw func(x, y float64) string
}

// chartKeys returns the keys to the marks c uses.
func chartKeys(c chartSpec) []chartKey {
	var win, equiv, undecided, failed, bars bool
	y := chartYScale(c)
	for _, s := range c.series {
		for _, p := range s.points {
			win = win || p.ring == chartWinRing
			equiv = equiv || p.ring == chartEquivRing
			undecided = undecided || p.ring == chartUndecidedRing
			failed = failed || p.state == chartFailed
			bars = bars || p.bar(y)
		}
	}
	var keys []chartKey
	if bars {
		keys = append(keys, chartKey{"95% interval", func(x, y float64) string {
			return fmt.Sprintf(`<path d="M%s %s L%s %s M%s %s L%s %s M%s %s L%s %s" stroke="#111" stroke-width="1.5" fill="none"/>`,
				chartN(x+5), chartN(y-6), chartN(x+5), chartN(y+6), chartN(x+1), chartN(y-6), chartN(x+9), chartN(y-6), chartN(x+1), chartN(y+6), chartN(x+9), chartN(y+6))
		}})
	}
	if win {
		keys = append(keys, chartKey{"winner", func(x, y float64) string {
			return fmt.Sprintf(`<circle cx="%s" cy="%s" r="6" fill="none" stroke="#111" stroke-width="1.8"/>`, chartN(x+5), chartN(y))
		}})
	}
	if equiv {
		keys = append(keys, chartKey{"equivalent (=)", func(x, y float64) string {
			return fmt.Sprintf(`<circle cx="%s" cy="%s" r="6" fill="none" stroke="#111" stroke-width="1.4" stroke-dasharray="3 2"/>`, chartN(x+5), chartN(y))
		}})
	}
	if undecided {
		keys = append(keys, chartKey{"undecided (?)", func(x, y float64) string {
			return fmt.Sprintf(`<circle cx="%s" cy="%s" r="6" fill="none" stroke="#111" stroke-width="1.4" stroke-dasharray="1 2"/>`, chartN(x+5), chartN(y))
		}})
	}
	if failed {
		keys = append(keys, chartKey{"failed cell", func(x, y float64) string { return chartCross(x+5, y, "#111") }})
	}
	if len(c.bands) > 0 {
		keys = append(keys, chartKey{"crossover", func(x, y float64) string {
			return fmt.Sprintf(`<rect x="%s" y="%s" width="10" height="12" fill="#7a7a7a" fill-opacity="0.25"/>`, chartN(x), chartN(y-6))
		}})
	}
	return keys
}

// chartMarker draws marker shape m centred on (x, y).
func chartMarker(m int, x, y float64, color string) string {
	const r = 4.5
	attrs := fmt.Sprintf(`fill="%s" stroke="#fff" stroke-width="1"`, color)
	poly := func(pts ...float64) string {
		var p strings.Builder
		for i := 0; i < len(pts); i += 2 {
			if i > 0 {
				p.WriteByte(' ')
			}
			p.WriteString(chartN(x+pts[i]) + "," + chartN(y+pts[i+1]))
		}
		return fmt.Sprintf(`<polygon points="%s" %s/>`, p.String(), attrs)
	}
	switch m {
	case 1: // square
		return fmt.Sprintf(`<rect x="%s" y="%s" width="%s" height="%s" %s/>`, chartN(x-r+0.5), chartN(y-r+0.5), chartN(2*r-1), chartN(2*r-1), attrs)
	case 2: // triangle
		return poly(0, -r-0.5, r+0.5, r-0.5, -r-0.5, r-0.5)
	case 3: // diamond
		return poly(0, -r-1, r+0.5, 0, 0, r+1, -r-0.5, 0)
	case 4: // triangle down
		return poly(0, r+0.5, r+0.5, -r+0.5, -r-0.5, -r+0.5)
	case 5: // pentagon
		return poly(0, -r, r*0.95, -r*0.31, r*0.59, r*0.81, -r*0.59, r*0.81, -r*0.95, -r*0.31)
	}
	return fmt.Sprintf(`<circle cx="%s" cy="%s" r="%s" %s/>`, chartN(x), chartN(y), chartN(r), attrs)
}

// chartCross is the mark of a failed cell.
func chartCross(x, y float64, color string) string {
	const r = 4.5
	return fmt.Sprintf(`<path d="M%s %s L%s %s M%s %s L%s %s" stroke="%s" stroke-width="2.5" stroke-linecap="round"/>`,
		chartN(x-r), chartN(y-r), chartN(x+r), chartN(y+r), chartN(x-r), chartN(y+r), chartN(x+r), chartN(y-r), color)
}

// chartX maps concurrency levels onto the plot on a log axis.
type chartX struct{ lo, hi float64 }

func chartXScale(levels []int) chartX {
	if len(levels) == 0 {
		return chartX{0, 1}
	}
	lo, hi := chartLog(levels[0]), chartLog(levels[len(levels)-1])
	if hi-lo < 1e-9 { // one level: in the middle
		return chartX{lo - 1, lo + 1}
	}
	pad := (hi - lo) * 0.05
	return chartX{lo - pad, hi + pad}
}

func chartLog(level int) float64 { return math.Log10(float64(max(level, 1))) }

func (s chartX) pos(level int) float64 {
	return chartLeft + (chartLog(level)-s.lo)/(s.hi-s.lo)*chartPlotW
}

// chartY maps values onto the plot, linearly from zero or on a log axis.
type chartY struct {
	log    bool
	lo, hi float64 // the axis range; log10 of it for a log axis
	ticks  []float64
	label  func(float64) string
}

func chartYScale(c chartSpec) chartY {
	label := renderQPS
	if c.latency {
		label = renderMs
	}
	// The points decide between a linear and a log axis; the axis then
	// spans the error bars too.
	lo, hi := math.Inf(1), 0.0 // of the points
	barLo, barHi := lo, hi     // of the points and their error bars
	fit := func(v float64, lo, hi *float64) {
		if renderFinite64(v) && v >= 0 {
			*hi = max(*hi, v)
			if v > 0 {
				*lo = min(*lo, v)
			}
		}
	}
	for _, s := range c.series {
		for _, p := range s.points {
			if p.state != chartOK {
				continue
			}
			fit(p.y, &lo, &hi)
			fit(p.y, &barLo, &barHi)
			if !(p.lo == 0 && p.hi == 0) {
				fit(p.lo, &barLo, &barHi)
				fit(p.hi, &barLo, &barHi)
			}
		}
	}
	// Values spread over more than a factor of 30 (a near cache against
	// the network, 1 goroutine against 1000) would crush the small ones
	// flat on a linear axis: a log axis shows them all, and says so.
	if hi > 0 && hi/lo >= 30 {
		lo, hi = barLo, barHi
		a, b := math.Log10(lo)-0.08, math.Log10(hi)+0.08
		var ticks, decades []float64
		for e := math.Floor(a); e <= math.Ceil(b); e++ {
			for _, m := range []float64{1, 2, 5} {
				t := m * math.Pow(10, e)
				if l := math.Log10(t); l < a || l > b {
					continue
				}
				ticks = append(ticks, t)
				if m == 1 {
					decades = append(decades, t)
				}
			}
		}
		if len(ticks) > 9 && len(decades) >= 2 {
			ticks = decades
		}
		return chartY{log: true, lo: a, hi: b, ticks: ticks, label: label}
	}
	hi = barHi
	if !(hi > 0) {
		hi = 1
	}
	step := chartNiceStep(hi * 1.05 / 5)
	top := math.Ceil(hi*1.05/step) * step
	var ticks []float64
	for i := 0.0; i*step <= top*(1+1e-9); i++ {
		ticks = append(ticks, i*step)
	}
	return chartY{lo: 0, hi: top, ticks: ticks, label: label}
}

// chartNiceStep rounds x up to 1, 2, 2.5 or 5 times a power of ten.
func chartNiceStep(x float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(x)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*p >= x*(1-1e-9) {
			return m * p
		}
	}
	return 10 * p
}

// drawable reports whether v has a place on the axis.
func (s chartY) drawable(v float64) bool {
	return renderFinite64(v) && (v > 0 || !s.log && v == 0)
}

func (s chartY) pos(v float64) float64 {
	f := (v - s.lo) / (s.hi - s.lo)
	if s.log {
		f = (math.Log10(v) - s.lo) / (s.hi - s.lo)
	}
	return chartTop + chartPlotH - f*chartPlotH
}

// chartN formats a coordinate: one decimal, no "-0".
func chartN(x float64) string {
	s := strconv.FormatFloat(x, 'f', 1, 64)
	s = strings.TrimSuffix(s, ".0")
	if s == "-0" {
		return "0"
	}
	return s
}

// chartTick shortens a tick label: "50.0k" to "50k", "0.500" to "0.5".
func chartTick(s string) string {
	i := strings.IndexByte(s, '.')
	if i < 0 {
		return s
	}
	num, suffix := s, ""
	if j := strings.IndexFunc(s, func(r rune) bool { return r != '.' && (r < '0' || r > '9') }); j > i {
		num, suffix = s[:j], s[j:]
	}
	return strings.TrimSuffix(strings.TrimRight(num, "0"), ".") + suffix
}

// chartEsc escapes text for SVG inside HTML.
func chartEsc(s string) string { return template.HTMLEscapeString(s) }

// renderCharts builds the QPS and p99 charts of one workload.
func renderCharts(w *reportWorkload) (qps, p99 template.HTML) {
	mk := func(title, yTitle string, latency bool, val func(*verdict.Cell) (y, lo, hi float64)) chartSpec {
		spec := chartSpec{title: title, yTitle: yTitle, latency: latency, levels: w.levels}
		for i, t := range w.targets {
			s := chartSeries{name: t, style: w.styles[i]}
			for _, l := range w.levels {
				var p chartPoint
				switch c := w.cell(t, l); {
				case c == nil:
				case c.Failed:
					p.state = chartFailed
				default:
					p.state = chartOK
					p.y, p.lo, p.hi = val(c)
				}
				if !latency {
					p.ring = map[string]int{"win": chartWinRing, "equivalent": chartEquivRing, "undecided": chartUndecidedRing}[w.mark(t, l)]
				}
				s.points = append(s.points, p)
			}
			spec.series = append(spec.series, s)
		}
		return spec
	}
	q := mk(w.name+": throughput", "QPS (operations/s)", false, func(c *verdict.Cell) (y, lo, hi float64) { return c.QPS, c.QPSLow, c.QPSHigh })
	for i, c := range w.crossovers {
		if slices.Contains(w.levels, c.Below) || slices.Contains(w.levels, c.Above) {
			q.bands = append(q.bands, chartBand{below: c.Below, above: c.Above, label: fmt.Sprintf("×%d", i+1), text: renderCrossover(c)})
		}
	}
	// p99 is one percentile over every sample's operations: no interval
	// to draw.
	p := mk(w.name+": p99 latency", "p99 latency (ms)", true, func(c *verdict.Cell) (y, lo, hi float64) { return c.P99ms, 0, 0 })
	return renderChart(q), renderChart(p)
}
