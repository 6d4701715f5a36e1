package benchmarks_test

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
	for _, want := range []string{"tie</text>", `class="crossover"`, `class="failed"`, "×1", "go1.26.8", "Redis 7.0.15",
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
