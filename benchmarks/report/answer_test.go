package report_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redisx-go/kit/benchmarks/report"
	"github.com/redisx-go/kit/benchmarks/verdict"
	"github.com/redisx-go/kit/benchmarks/workload"
)

func TestReportsOpenWithTheAnswer(t *testing.T) {
	r := renderSyntheticReport()
	r.Answer = &verdict.Answer{
		Workload: "custom", Concurrency: 200, Strategy: "pool-32", Confidence: verdict.Significant,
		Margin: 0.12, PValue: 0.002, RunnerUp: "multiplexed-1",
		URL:  "redis://alice:PASSWORD@cache.internal:6379?strategy=pool&size=32",
		Note: "measured on the harness's own server: replace 127.0.0.1:41001 <b>with</b> your server's address",
	}
	r.Workloads = []verdict.WorkloadInfo{{Name: "custom", Mix: "get:90,set:10", Keys: 100, KeyDist: "zipf:0.99", Value: "64",
		Batch: 10, TTL: "1m", Source: workload.SourceProfile}}

	var text bytes.Buffer
	if err := report.WriteSummary(&text, r); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(text.String(), "\n")
	for i, want := range []string{
		"answer: use pool-32 for custom at 200 goroutines — significant: +12.0% over multiplexed-1, p = 0.002",
		"  url: redis://alice:PASSWORD@cache.internal:6379?strategy=pool&size=32",
		"  PASSWORD stands for your password",
		"  measured on the harness's own server: replace 127.0.0.1:41001",
		"  workload custom: -mix get:90,set:10 -keys 100 -key-dist zipf:0.99 -value 64 -batch 10 -ttl 1m",
	} {
		if i >= len(lines) || !strings.HasPrefix(lines[i], want) {
			t.Errorf("summary line %d = %q; want it to start with %q", i+1, lines[min(i, len(lines)-1)], want)
		}
	}

	dir := t.TempDir()
	if err := report.WriteReports(dir, r); err != nil {
		t.Fatal(err)
	}
	md, _ := os.ReadFile(filepath.Join(dir, "report.md"))
	if want := "# redisx-bench report\n\n**Answer: use `pool-32` for custom at 200 goroutines** — significant: +12.0% over multiplexed-1, p = 0.002.\n\n" +
		"URL: `redis://alice:PASSWORD@cache.internal:6379?strategy=pool&size=32`\n\nPASSWORD stands for your password"; !strings.HasPrefix(string(md), want) {
		t.Errorf("report.md opens with:\n%.400s\nwant:\n%s", md, want)
	}
	page, _ := os.ReadFile(filepath.Join(dir, "report.html"))
	if i, j := bytes.Index(page, []byte(`id="answer"`)), bytes.Index(page, []byte(`<dl class="meta">`)); i < 0 || i > j {
		t.Errorf("report.html: the answer at %d, the run's details at %d; want the answer first", i, j)
	}
	if bytes.Contains(page, []byte("<b>with</b>")) || !bytes.Contains(page, []byte("&lt;b&gt;with")) {
		t.Error("report.html: the note is not escaped")
	}

	// An equivalent verdict says so, and names the tie-break.
	r.Answer.Confidence, r.Answer.Margin, r.Answer.MarginLo, r.Answer.MarginHi, r.Answer.IntervalLevel, r.Answer.PValue =
		verdict.Equivalent, -0.01, -0.03, 0.012, 0.9, 0.4
	text.Reset()
	if err := report.WriteSummary(&text, r); err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(strings.Fields(text.String()), " "), "answer: use pool-32 for custom at 200 goroutines — equivalent to multiplexed-1 "+
		"within 5%: -1.0% (90% interval [-3.0%, +1.2%]), p = 0.400; named by the tie-break"; !strings.HasPrefix(got, want) {
		t.Errorf("an equivalent answer:\n%s\nwant it to start with\n%s", text.String()[:300], want)
	}
}

func TestReportsSayAnUndecidedAnswerNamesNoConfiguration(t *testing.T) {
	r := renderSyntheticReport()
	r.Answer = &verdict.Answer{
		Workload: "custom", Concurrency: 1, Confidence: verdict.Undecided, Contenders: []string{"pool-8", "multiplexed"},
		RunnerUp: "multiplexed", Margin: 0.109, MarginLo: 0.036, MarginHi: 0.21, IntervalLevel: 0.983, PValue: 0.002,
		Samples: 18, SuggestedMaxRepeats: 30,
	}
	want := "answer: undecided between pool-8 and multiplexed for custom at 1 goroutine: the data cannot tell them apart within 5% " +
		"(pool-8 over multiplexed: +10.9%, 98.3% interval [+3.6%, +21.0%]; 18 samples each); run with -max-repeats 30 no configuration named"
	var text bytes.Buffer
	if err := report.WriteSummary(&text, r); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(strings.Fields(text.String()), " "); !strings.HasPrefix(got, want) {
		t.Errorf("an undecided answer:\n%s\nwant it to start with\n%s", text.String()[:400], want)
	}
	files := renderAllFiles(t, r)
	if md := string(files["report.md"]); !strings.Contains(md, "**Answer: undecided between `pool-8` and `multiplexed` for custom at 1 goroutine**") ||
		strings.Contains(strings.SplitN(md, "\n- **Date", 2)[0], "URL:") {
		t.Errorf("report.md opens with:\n%.500s\nwant the undecided answer, no URL", md)
	}
	page := string(files["report.html"])
	box := page[strings.Index(page, `<section id="answer"`):]
	box = box[:strings.Index(box, "</section>")]
	if !strings.Contains(box, `class="undecided"`) || !strings.Contains(box, "undecided between pool-8 and multiplexed") || strings.Contains(box, "URL") {
		t.Errorf("report.html's answer box:\n%s\nwant it undecided, with no URL", box)
	}
}

// TestReportsNameOneConfiguration is bar V1's second half on the page: the
// summary's first line, report.json's answer, report.html's box and the
// recommended configuration name the same target for the answer's cell —
// or, undecided, none.
func TestReportsNameOneConfiguration(t *testing.T) {
	cell := func(target string, conns int, qps ...float64) verdict.Cell {
		return verdict.Cell{Workload: "custom", Target: target, Concurrency: 1, Conns: conns, MaxConns: conns,
			QPS: verdict.Median(qps), QPSSamples: qps, Samples: len(qps)}
	}
	for name, cells := range map[string][]verdict.Cell{
		// A newcomer's run: pool-8 faster in every sample, on one
		// connection like multiplexed-1.
		"faster in every sample": {
			cell("pool-8", 1, 30_500, 30_800, 31_000, 31_200, 31_500, 31_800, 30_600, 30_900, 31_100, 31_300, 31_400, 31_700),
			cell("multiplexed-1", 1, 25_500, 26_500, 27_500, 28_500, 29_500, 30_400, 25_600, 26_600, 27_600, 28_600, 29_600, 30_300),
		},
		"a clear win": {
			cell("pool-8", 8, 40_500, 40_800, 41_000, 41_200, 41_500, 41_800),
			cell("multiplexed-1", 1, 25_500, 26_500, 27_500, 28_500, 29_500, 30_400),
		},
		"equivalent, 3% apart": {
			cell("pool-8", 8, 103_000, 103_100, 103_200, 103_300, 103_400, 103_500),
			cell("multiplexed-1", 1, 100_000, 100_100, 100_200, 100_300, 100_400, 100_500),
		},
	} {
		r := renderSyntheticReport()
		r.Cells = cells
		r.Recommendations = verdict.Recommend(cells, 0.05, 0.05)
		rec := r.Recommendations[0]
		r.Recommendations[0].URL = "redis://h:1?strategy=" + rec.Strategy
		r.Answer = &verdict.Answer{Workload: rec.Workload, Concurrency: rec.Concurrency, Strategy: rec.Strategy, Confidence: rec.Confidence,
			Margin: rec.Margin, MarginLo: rec.MarginLo, MarginHi: rec.MarginHi, IntervalLevel: rec.IntervalLevel, PValue: rec.PValue,
			RunnerUp: rec.RunnerUp, Contenders: rec.Contenders, Alternative: rec.Alternative, SuggestedMaxRepeats: rec.SuggestedMaxRepeats}
		if rec.Strategy != "" {
			r.Answer.URL = r.Recommendations[0].URL
		}
		r.Crossovers, r.Baseline, r.SLO = nil, nil, nil
		files := renderAllFiles(t, r)
		var back verdict.Report
		if err := json.Unmarshal(files["report.json"], &back); err != nil {
			t.Fatal(err)
		}
		first := strings.SplitN(string(files["summary.txt"]), "\n", 2)[0]
		page := string(files["report.html"])
		box := page[strings.Index(page, `<section id="answer"`):]
		box = box[:strings.Index(box, "</section>")]
		recommended := ""
		if i := strings.Index(page, `<section id="recommended">`); i >= 0 {
			recommended = page[i:]
			recommended = recommended[:strings.Index(recommended, "</section>")]
		}
		if rec.Strategy == "" {
			if rec.Confidence != verdict.Undecided || back.Answer.Strategy != "" || !strings.HasPrefix(first, "answer: undecided between pool-8 and multiplexed-1") ||
				!strings.Contains(box, "Answer: undecided between pool-8 and multiplexed-1") || strings.Contains(recommended, "<h3>pool-8") ||
				strings.Contains(recommended, "<h3>multiplexed-1") {
				t.Errorf("%s: %s undecided; the pages name:\n%s\n%s\n%s", name, rec.Confidence, first, box, recommended)
			}
			continue
		}
		want := "use " + rec.Strategy + " for custom at 1 goroutine"
		if back.Answer.Strategy != rec.Strategy || !strings.HasPrefix(first, "answer: "+want) || !strings.Contains(box, "Answer: "+want) ||
			!strings.Contains(recommended, "<h3>"+rec.Strategy+"</h3>\n<p>Chosen for custom at 1") {
			t.Errorf("%s: the verdict names %s (%s); the pages name:\n%s\n%s\n%s", name, rec.Strategy, rec.Confidence, first, box, recommended)
		}
		if rec.Strategy != "pool-8" {
			t.Errorf("%s: %s named (%s); want pool-8, faster, never multiplexed-1", name, rec.Strategy, rec.Confidence)
		}
		if strings.Count(recommended, "<h3>") != 1 {
			t.Errorf("%s: the recommended configuration names %d targets; want one:\n%s", name, strings.Count(recommended, "<h3>"), recommended)
		}
	}
}

// TestAnswerSaysPBelowItsSmallestPrintedValue: a p-value under 0.001 is
// written "p < 0.001" in a sentence, not "p = <0.001".
func TestAnswerSaysPBelowItsSmallestPrintedValue(t *testing.T) {
	r := renderSyntheticReport()
	r.Answer = &verdict.Answer{
		Workload: "get", Concurrency: 10, Strategy: "multiplexed", Confidence: verdict.Significant,
		Margin: 2.08, PValue: 0.00004, RunnerUp: "pool-8",
	}
	var text bytes.Buffer
	if err := report.WriteSummary(&text, r); err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(text.String(), "\n")
	if want := "over pool-8, p < 0.001"; !strings.Contains(first, want) || strings.Contains(text.String(), "p = <") {
		t.Errorf("answer line %q; want it to say %q, and no \"p = <\" anywhere", first, want)
	}
}
