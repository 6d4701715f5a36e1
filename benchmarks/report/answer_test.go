package report_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redisx-go/kit/benchmarks"
	"github.com/redisx-go/kit/benchmarks/report"
)

func TestReportsOpenWithTheAnswer(t *testing.T) {
	r := renderSyntheticReport()
	r.Answer = &benchmarks.Answer{
		Workload: "custom", Concurrency: 200, Strategy: "pool-32", Confidence: benchmarks.Significant,
		Margin: 0.12, PValue: 0.002, RunnerUp: "multiplexed-1",
		URL:  "redis://alice:PASSWORD@cache.internal:6379?strategy=pool&size=32",
		Note: "measured on the harness's own server: replace 127.0.0.1:41001 <b>with</b> your server's address",
	}
	r.Workloads = []benchmarks.WorkloadInfo{{Name: "custom", Mix: "get:90,set:10", Keys: 100, KeyDist: "zipf:0.99", Value: "64",
		Batch: 10, TTL: "1m", Source: benchmarks.SourceProfile}}

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

	// A tie says so, and names the tie-break.
	r.Answer.Confidence, r.Answer.Margin, r.Answer.PValue = benchmarks.Tie, -0.01, 0.4
	text.Reset()
	if err := report.WriteSummary(&text, r); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(strings.Fields(text.String()), " "); !strings.HasPrefix(got, "answer: use pool-32 for custom at 200 goroutines — a tie (-1.0% against multiplexed-1, p = 0.400), named by the tie-break") {
		t.Errorf("a tie's answer:\n%s", text.String()[:200])
	}
}
