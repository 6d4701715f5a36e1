package report_test

import (
	"encoding/xml"
	"io"
	"strings"
	"testing"

	"golang.org/x/net/html"
)

// renderSVGs returns the <svg>…</svg> elements of page.
func renderSVGs(page string) []string {
	var out []string
	for {
		i := strings.Index(page, "<svg")
		if i < 0 {
			return out
		}
		j := strings.Index(page[i:], "</svg>")
		if j < 0 {
			return append(out, page[i:])
		}
		out = append(out, page[i:i+j+len("</svg>")])
		page = page[i+j+len("</svg>"):]
	}
}

// renderCheckHTML fails t unless page is well-formed (every non-void element
// closed in order, each SVG valid XML), self-contained (no script, no
// remote reference) and has want charts.
func renderCheckHTML(t *testing.T, page string, wantCharts int) {
	t.Helper()
	void := map[string]bool{"area": true, "base": true, "br": true, "col": true, "embed": true, "hr": true,
		"img": true, "input": true, "link": true, "meta": true, "source": true, "track": true, "wbr": true}
	var stack []string
	z := html.NewTokenizer(strings.NewReader(page))
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			if z.Err() != io.EOF {
				t.Fatalf("report.html: %v", z.Err())
			}
			break
		}
		tok := z.Token()
		switch tt {
		case html.StartTagToken:
			if !void[tok.Data] {
				stack = append(stack, tok.Data)
			}
		case html.EndTagToken:
			if len(stack) == 0 || stack[len(stack)-1] != tok.Data {
				t.Fatalf("report.html: </%s> closes %v", tok.Data, stack)
			}
			stack = stack[:len(stack)-1]
		}
		if tt == html.StartTagToken || tt == html.SelfClosingTagToken {
			switch tok.Data {
			case "script", "link", "img", "iframe", "object", "embed", "image", "use", "foreignobject":
				t.Errorf("report.html has a <%s> element", tok.Data)
			}
			for _, a := range tok.Attr {
				if strings.HasPrefix(a.Key, "on") {
					t.Errorf("report.html: <%s %s=…>: an event handler", tok.Data, a.Key)
				}
				if v := strings.ToLower(a.Val); strings.Contains(v, "://") || strings.Contains(v, "url(") ||
					strings.HasPrefix(v, "javascript:") || strings.HasPrefix(v, "data:") {
					t.Errorf("report.html: <%s %s=%q>: a reference out of the page", tok.Data, a.Key, a.Val)
				}
			}
		}
	}
	if len(stack) > 0 {
		t.Errorf("report.html leaves %v open", stack)
	}
	for _, bad := range []string{"http://", "https://", "@import", "url("} {
		if strings.Contains(page, bad) {
			t.Errorf("report.html holds %q", bad)
		}
	}
	svgs := renderSVGs(page)
	if len(svgs) != wantCharts {
		t.Errorf("report.html has %d <svg> elements; want %d (two per workload)", len(svgs), wantCharts)
	}
	for i, svg := range svgs {
		d := xml.NewDecoder(strings.NewReader(svg))
		for {
			_, err := d.Token()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("chart %d is not well-formed XML: %v", i+1, err)
			}
		}
		for _, bad := range []string{"NaN", "Inf", `="-0"`} {
			if strings.Contains(svg, bad) {
				t.Errorf("chart %d holds %q", i+1, bad)
			}
		}
	}
}

func TestRenderHTML(t *testing.T) {
	page := string(renderAllFiles(t, renderSyntheticReport())["report.html"])
	renderCheckHTML(t, page, 6)
	for _, want := range []string{">=</text>", ">?</text>", `class="crossover"`, `class="failed"`, "×1", "go1.26.8", "Redis 7.0.15",
		"pinned: redis-server on CPU 1"} {
		if !strings.Contains(page, want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
}

func TestRenderHTMLEdgeCases(t *testing.T) {
	r := renderEdgeReport()
	page := string(renderAllFiles(t, r)["report.html"])
	// get and single have cells; empty has a verdict only, so no chart.
	renderCheckHTML(t, page, 4)
	if !strings.Contains(page, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Errorf("report.html lacks the escaped target name")
	}
	if strings.Count(page, "<g class=\"legend\">") != 2*20+2*1 {
		t.Errorf("report.html has %d legend entries; want one per target per chart (42)", strings.Count(page, "<g class=\"legend\">"))
	}
}

// renderLegendColors returns, per chart, each legend entry's target and
// its line colour and marker.
func renderLegendColors(t *testing.T, page string) []map[string]string {
	t.Helper()
	var out []map[string]string
	for _, svg := range renderSVGs(page) {
		m := map[string]string{}
		for _, entry := range strings.Split(svg, `<g class="legend"><title>`)[1:] {
			name, rest, _ := strings.Cut(entry, "</title>")
			_, rest, _ = strings.Cut(rest, `stroke="`)
			color, rest, _ := strings.Cut(rest, `"`)
			// The marker: its element name and fill.
			marker, _, _ := strings.Cut(rest[strings.Index(rest, "/>")+2:], " ")
			m[name] = color + " " + marker
		}
		out = append(out, m)
	}
	return out
}

func TestRenderHTMLOneStylePerTargetAcrossCharts(t *testing.T) {
	// get has near-mux between multiplexed-4 and rueidis; mget has not:
	// rueidis must keep its look all the same.
	page := string(renderAllFiles(t, renderSyntheticReport())["report.html"])
	seen := map[string]string{}
	for i, chart := range renderLegendColors(t, page) {
		if len(chart) == 0 {
			t.Fatalf("chart %d has no legend", i+1)
		}
		for name, style := range chart {
			if was, ok := seen[name]; ok && was != style {
				t.Errorf("%s is drawn %q in chart %d and %q in an earlier one", name, style, i+1, was)
			}
			seen[name] = style
		}
	}
	styles := map[string]string{}
	for name, style := range seen {
		if other, ok := styles[style]; ok {
			t.Errorf("%s and %s share the look %q", name, other, style)
		}
		styles[style] = name
	}
}

func TestRenderHTMLDrawsIntervalsAsErrorBars(t *testing.T) {
	r := renderSyntheticReport()
	page := string(renderAllFiles(t, r)["report.html"])
	svgs := renderSVGs(page)
	// The QPS chart of get: one bar per cell (5 targets × 4 levels), in
	// the interval as measured, asymmetric.
	qps := svgs[0]
	if n := strings.Count(qps, `<g class="errorbar">`); n != 20 {
		t.Errorf("get's QPS chart has %d error bars; want 20, one per cell", n)
	}
	if !strings.Contains(qps, "multiplexed-1 at 10: 95% interval [119k, 122k]") {
		t.Errorf("get's QPS chart lacks the interval of multiplexed-1 at 10 as [lo, hi]")
	}
	if strings.Contains(svgs[1], `class="errorbar"`) {
		t.Errorf("the p99 chart has error bars; p99 has no interval")
	}
	if !strings.Contains(qps, "95% interval</text>") {
		t.Errorf("the QPS chart's key does not explain the error bars")
	}
	if strings.Contains(page, "±") {
		t.Errorf("report.html still shows a symmetric ±")
	}
}

func TestRenderShowsWarningsAndBaselineMismatches(t *testing.T) {
	r := renderSyntheticReport()
	r.Warnings = []string{"3 samples per cell cannot reach significance"}
	r.Baseline.Compatible = false
	r.Baseline.Mismatches = []string{"CPU model: AMD EPYC 7B13 → Intel Xeon"}
	files := renderAllFiles(t, r)
	for _, name := range []string{"report.html", "report.md", "summary.txt"} {
		for _, want := range []string{"3 samples per cell cannot reach significance", "NOT LIKE WITH LIKE", "CPU model: AMD EPYC 7B13 → Intel Xeon"} {
			if !strings.Contains(string(files[name]), want) {
				t.Errorf("%s lacks %q", name, want)
			}
		}
	}
}
