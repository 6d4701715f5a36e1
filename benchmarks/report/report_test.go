package report_test

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/redisx-go/kit/benchmarks/report"
	"github.com/redisx-go/kit/benchmarks/verdict"
)

var (
	renderUpdate  = flag.Bool("update", false, "rewrite the render golden files in testdata/")
	renderExample = flag.String("write-example", "", "write the synthetic reports to this directory (to look at them in a browser)")
)

// renderGoConfig is a recommendation's Go snippet.
func renderGoConfig(strategy string) string {
	return "redisx.Options{\n\tAddrs:    []string{\"127.0.0.1:6379\"},\n\tStrategy: " + strategy + ",\n}"
}

// renderSyntheticReport is a run with three workloads (one measured at a
// single level), five targets, significant, equivalent and undecided
// verdicts (one with an alternative), an undecided answer, a crossover,
// a failed cell, a peer winning, SLO results and a baseline.
func renderSyntheticReport() *verdict.Report {
	start := time.Date(2026, 9, 30, 14, 5, 0, 0, time.UTC)
	r := &verdict.Report{
		Version:  verdict.ReportVersion,
		Started:  start,
		Finished: start.Add(11*time.Minute + 42*time.Second),
		Command:  "redisx-bench -levels 1,10,100,1000 -workloads get,mget,values -target near-mux=redis://127.0.0.1:6379?near=64MiB -out results",
		Machine: verdict.Machine{
			GOMAXPROCS: 2, CPUs: 2, GoVersion: "go1.26.8", OS: "linux", Arch: "amd64", RedisVersion: "7.0.15",
			Embedded: true, Pinned: true, PinNote: "redis-server on CPU 1, the harness on CPU 0",
			Standalone: "127.0.0.1:41001", Cluster: []string{"127.0.0.1:41002", "127.0.0.1:41003", "127.0.0.1:41004"},
		},
		Settings: verdict.Settings{
			Levels:    []int{1, 10, 100, 1000},
			Workloads: []string{"get", "mget", "values"},
			Targets:   []string{"multiplexed-1", "multiplexed-4", "pool-32", "near-mux", "rueidis"},
			Duration:  500 * time.Millisecond, Warmup: 100 * time.Millisecond, Repeats: 6,
			MaxRepeats: 18, Looks: 3, LookAlpha: 0.05 / 3,
			Mode: "closed", SLO: "p99=2ms", Alpha: 0.05, Margin: 0.05, Seed: 42,
		},
	}
	// qps[target] per level 1, 10, 100, 1000.
	get := map[string][4]float64{
		"multiplexed-1": {21500, 121000, 205000, 212000},
		"multiplexed-4": {21100, 119500, 231000, 268000},
		"pool-32":       {19800, 101000, 236000, 251000},
		"near-mux":      {1.92e6, 3.71e6, 3.98e6, 4.02e6},
		"rueidis":       {20900, 118000, 228000, 270500},
	}
	mget := map[string][4]float64{
		"multiplexed-1": {4100, 30500, 61000, 64000},
		"multiplexed-4": {4050, 30100, 70000, 79000},
		"pool-32":       {3900, 24000, 52000, 0},
		"rueidis":       {4000, 29800, 69500, 86000},
	}
	levels := []int{1, 10, 100, 1000}
	conns := map[string]int{"multiplexed-1": 1, "multiplexed-4": 4, "pool-32": 32, "near-mux": 3, "rueidis": 2}
	add := func(workload, target string, level int, qps float64) {
		p99 := 0.05 + float64(level)/qps*1000*2.4
		c := verdict.Cell{
			Workload: workload, Target: target, Concurrency: level,
			QPS: qps, QPSLow: qps * 0.985, QPSHigh: qps * 1.012, Samples: 6,
			QPSSamples: []float64{qps * 0.985, qps * 0.995, qps, qps, qps * 1.004, qps * 1.012},
			P50ms:      p99 / 3, P90ms: p99 / 1.6, P99ms: p99, P999ms: p99 * 1.8, MaxMs: p99 * 4,
			Ops: int64(qps * 3), Conns: min(conns[target], level),
			CPUPerOp: 4.25, AllocsPerOp: 3, BytesPerOp: 152,
		}
		if target == "near-mux" {
			c.HitRatio, c.InvalidationsPerWrite = 0.987, 0.93
		}
		r.Cells = append(r.Cells, c)
	}
	for _, t := range r.Settings.Targets {
		for i, l := range levels {
			add("get", t, l, get[t][i])
		}
	}
	for _, t := range r.Settings.Targets {
		if _, ok := mget[t]; !ok {
			continue
		}
		for i, l := range levels {
			add("mget", t, l, mget[t][i])
		}
	}
	// The failed cell: pool-32 ran out of connections at 1000 goroutines.
	failed := &r.Cells[len(r.Cells)-5]
	if failed.Target != "pool-32" || failed.Concurrency != 1000 {
		panic("synthetic report: wrong failed cell " + failed.Target)
	}
	failed.Failed, failed.Errors, failed.QPS, failed.QPSLow, failed.QPSHigh = true, 1234, 812, 640, 901
	failed.P50ms, failed.P90ms, failed.P99ms, failed.P999ms, failed.MaxMs = 410, 980, 1950, 2010, 2013
	failed.QPSSamples, failed.Ops = []float64{640, 700, 800, 824, 880, 901}, 2436
	failed.FirstError = "redisx: connection: dial tcp 127.0.0.1:41002:\nconnect: cannot assign requested address"
	for _, t := range []string{"multiplexed-1", "pool-32"} {
		add("values/set-32KiB", t, 100, map[string]float64{"multiplexed-1": 47900, "pool-32": 48200}[t])
	}

	url := func(s string) string { return "redis://127.0.0.1:6379?" + s }
	r.Recommendations = []verdict.Recommendation{
		{Workload: "get", Concurrency: 1, Strategy: "near-mux", Confidence: verdict.Significant, Margin: 88.3, MarginLo: 86.9, MarginHi: 89.7, PValue: 0.0022,
			RunnerUp: "multiplexed-1", URL: url("strategy=multiplexed&near=64MiB"), Go: renderGoConfig("localcache.Near{MaxBytes: 64 << 20}")},
		{Workload: "get", Concurrency: 10, Strategy: "near-mux", Confidence: verdict.Significant, Margin: 29.7, MarginLo: 29.1, MarginHi: 30.4, PValue: 0.0022,
			RunnerUp: "multiplexed-1", URL: url("strategy=multiplexed&near=64MiB"), Go: renderGoConfig("localcache.Near{MaxBytes: 64 << 20}")},
		{Workload: "get", Concurrency: 100, Strategy: "near-mux", Confidence: verdict.Significant, Margin: 15.9, MarginLo: 15.5, MarginHi: 16.3, PValue: 0.0022,
			RunnerUp: "pool-32", URL: url("strategy=multiplexed&near=64MiB"), Go: renderGoConfig("localcache.Near{MaxBytes: 64 << 20}")},
		{Workload: "get", Concurrency: 1000, Strategy: "near-mux", Confidence: verdict.Significant, Margin: 13.9, MarginLo: 13.6, MarginHi: 14.2, PValue: 0.0022,
			RunnerUp: "rueidis", URL: url("strategy=multiplexed&near=64MiB"), Go: renderGoConfig("localcache.Near{MaxBytes: 64 << 20}")},
		{Workload: "mget", Concurrency: 1, Strategy: "multiplexed-1", Confidence: verdict.Equivalent, Margin: 0.0123, MarginLo: -0.009, MarginHi: 0.031,
			IntervalLevel: 0.967, PValue: 0.31, RunnerUp: "multiplexed-4", Samples: 6, Looks: 1,
			TieBreak: "equivalent within 5% (each one's 96.7% interval against multiplexed-1 inside [-4.8%, +5%]): multiplexed-1 (1 connection), " +
				"multiplexed-4 (4 connections); picked the fewest connections (then the lowest bound on them): multiplexed-1",
			URL: url("strategy=multiplexed&conns=1"), Go: renderGoConfig("strategy.Multiplexed{Conns: 1}")},
		{Workload: "mget", Concurrency: 10, Strategy: "multiplexed-1", Confidence: verdict.Equivalent, Margin: 0.0133, MarginLo: -0.006, MarginHi: 0.029,
			IntervalLevel: 0.967, PValue: 0.18, RunnerUp: "multiplexed-4", Samples: 12, Looks: 2,
			TieBreak: "equivalent within 5%: multiplexed-1 (1 connection), multiplexed-4 (4 connections); picked the fewest connections: multiplexed-1",
			URL:      url("strategy=multiplexed&conns=1"), Go: renderGoConfig("strategy.Multiplexed{Conns: 1}")},
		{Workload: "mget", Concurrency: 100, Confidence: verdict.Undecided, Margin: 0.148, MarginLo: -0.021, MarginHi: 0.31, IntervalLevel: 0.983,
			PValue: 0.09, RunnerUp: "multiplexed-1", Underpowered: true, Contenders: []string{"multiplexed-4", "multiplexed-1"},
			SuggestedMaxRepeats: 30, Samples: 18, Looks: 3, URL: "", Go: ""},
		{Workload: "mget", Concurrency: 1000, Strategy: "rueidis", Confidence: verdict.Significant, Margin: 0.0886, MarginLo: 0.061, MarginHi: 0.113, PValue: 0.0043,
			IntervalLevel: 0.983, RunnerUp: "multiplexed-4"},
		{Workload: "values/set-32KiB", Concurrency: 100, Strategy: "pool-32", Confidence: verdict.Equivalent, Margin: 0.0063, MarginLo: 0.003, MarginHi: 0.011,
			IntervalLevel: 0.967, PValue: 0.004, RunnerUp: "multiplexed-1", Samples: 6, Looks: 1,
			TieBreak:    "equivalent within 5%: pool-32 (32 connections), multiplexed-1 (1 connection); picked pool-32, the fewest connections (then the lowest bound on them) once passed over: multiplexed-1 is significantly slower than pool-32 (-0.6%, p = 0.004)",
			Alternative: "pool-32 is +0.6% faster [+0.2%, +1.0%] with 32 connections; multiplexed-1 uses 1 connection",
			URL:         url("strategy=pool&size=32"), Go: renderGoConfig("strategy.Pool{Size: 32}")},
	}
	// The answer: mget at 100, undecided.
	r.Answer = &verdict.Answer{Workload: "mget", Concurrency: 100, Confidence: verdict.Undecided, Margin: 0.148, MarginLo: -0.021,
		MarginHi: 0.31, IntervalLevel: 0.983, PValue: 0.09, RunnerUp: "multiplexed-1", Contenders: []string{"multiplexed-4", "multiplexed-1"},
		SuggestedMaxRepeats: 30, Samples: 18}
	r.Crossovers = []verdict.Crossover{
		{Workload: "get", From: "multiplexed-1", To: "pool-32", Between: [2]int{10, 100}, Below: 10, Above: 100,
			Text: "pool-32 overtakes multiplexed-1 between 10 and 100 goroutines"},
		{Workload: "mget", From: "multiplexed-4", To: "rueidis", Between: [2]int{100, 1000}, Below: 100, Above: 1000},
	}
	r.SLO = []verdict.SLOResult{
		{Workload: "get", Target: "multiplexed-4", BoundMs: 2, Concurrency: 64, MaxRate: 180000, FirstFailingRate: 187000, Confirmed: true, Latency: 1.87, Headroom: 0.125, Winner: true},
		{Workload: "get", Target: "pool-32", BoundMs: 2, Concurrency: 64, MaxRate: 160000, FirstFailingRate: 166000, Latency: 1.95,
			Note: "the re-run at 166k/s failed; stepped down to 160k/s"},
		{Workload: "get", Target: "multiplexed-1", BoundMs: 2, Concurrency: 64, MaxRate: 0, FirstFailingRate: 1000, Latency: 3.2},
	}
	r.Warnings = []string{"SLO get pool-32: the client sent late by 0.312 ms (p99) at 166k/s, more than a tenth of the p99=2ms bound: " +
		"the rates found are partly the client's limit, not the server's"}
	r.Baseline = &verdict.BaselineComparison{
		File: "results/2026-09-01/report.json", Started: "2026-09-01T09:12:00Z",
		Compatible: true,
		Cells: []verdict.Delta{
			{Workload: "get", Target: "multiplexed-1", Concurrency: 1000, OldQPS: 195000, NewQPS: 212000, Change: 0.0872,
				ChangeLo: 0.061, ChangeHi: 0.112, PValue: 0.0022, PAdjusted: 0.0065, Significant: true},
			{Workload: "get", Target: "pool-32", Concurrency: 1000, OldQPS: 250000, NewQPS: 251000, Change: 0.004,
				ChangeLo: -0.018, ChangeHi: 0.027, PValue: 0.69, PAdjusted: 0.69},
			{Workload: "mget", Target: "multiplexed-4", Concurrency: 100, OldQPS: 77000, NewQPS: 70000, Change: -0.0909,
				ChangeLo: -0.118, ChangeHi: -0.062, PValue: 0.0043, PAdjusted: 0.0065, Significant: true},
		},
		VerdictChanges: []string{"mget at 100 goroutines: no target (undecided), was pool-32 (significant)"},
	}
	return r
}

// renderEdgeReport is a report made to break renderers: hostile and long
// names, one level only, 20 targets, NaN, infinities and zeros, a
// workload without cells, a partial run on the user's server.
func renderEdgeReport() *verdict.Report {
	r := &verdict.Report{
		Version:  verdict.ReportVersion,
		Started:  time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC),
		Command:  "redisx-bench -target '<script>alert(1)</script>=redis://h' -target 'a|b`c=redis://h'",
		Partial:  true,
		Warnings: []string{"2 samples per cell cannot reach significance: <b>-repeats 4</b>"},
		Machine:  verdict.Machine{GOMAXPROCS: 8, CPUs: 16, GoVersion: "go1.26.8", RedisVersion: "7.2.4", PinNote: "user's server"},
		Settings: verdict.Settings{
			Levels: []int{1, 2, 3, 5, 8, 10, 20, 50}, Workloads: []string{"get"}, Repeats: 6,
			Duration: time.Second, Alpha: 0.05, Margin: 0.05,
		},
	}
	hostile := []string{
		"<script>alert(1)</script>",
		`"><img src=x onerror=alert(1)>`,
		"a|b*c_d`e[f](g)",
		"a-very-long-target-name-that-goes-on-and-on-multiplexed-conns-4-near-512MiB-ttl-10s",
		"ünïcødé-名前",
	}
	for i := range 20 {
		name := fmt.Sprintf("target-%02d", i)
		if i < len(hostile) {
			name = hostile[i]
		}
		for j, l := range r.Settings.Levels {
			qps := float64(1000*(i+1)) * math.Sqrt(float64(l))
			c := verdict.Cell{Workload: "get", Target: name, Concurrency: l, QPS: qps, QPSLow: qps * 0.9, QPSHigh: qps * 1.1,
				Samples: 6, P50ms: 0.1, P99ms: 0.01 * float64(l*(i+1)), Ops: 100}
			switch {
			case i == 1 && j == 2:
				c.QPS, c.P99ms = math.NaN(), math.Inf(1)
			case i == 2 && j == 3:
				c.QPS, c.P99ms, c.QPSLow, c.QPSHigh = 0, 0, 0, 0
			case i == 3 && j >= 4:
				c.Failed, c.Errors, c.FirstError = true, 7, "<b>boom</b> & more"
			}
			r.Cells = append(r.Cells, c)
		}
	}
	r.Cells = append(r.Cells, verdict.Cell{Workload: "single", Target: hostile[0], Concurrency: 100, QPS: 5e4, P99ms: 1})
	r.Recommendations = []verdict.Recommendation{
		{Workload: "get", Concurrency: 50, Strategy: hostile[0], Confidence: verdict.Significant, Margin: math.Inf(1),
			PValue: math.NaN(), RunnerUp: hostile[1], URL: "redis://h?client_name=%3Cscript%3E", Go: "x := `<script>`"},
		{Workload: "get", Concurrency: 1, Strategy: hostile[2], Confidence: verdict.Equivalent, TieBreak: "<i>fewest</i>", RunnerUp: hostile[3],
			Alternative: "<b>" + hostile[3] + "</b> is faster"},
		{Workload: "get", Concurrency: 2, Confidence: verdict.Undecided, RunnerUp: hostile[1], Contenders: []string{hostile[4], hostile[1], "a|b"},
			MarginLo: math.Inf(-1), MarginHi: math.NaN(), IntervalLevel: 2},
		{Workload: "single", Concurrency: 100, Strategy: hostile[0], Confidence: verdict.Significant},
		{Workload: "empty", Concurrency: 10, Confidence: "tie"}, // a version 2 report's verdict on failed cells
	}
	r.Crossovers = []verdict.Crossover{{Workload: "get", From: hostile[1], To: hostile[0], Below: 3, Above: 5, Text: "<script>x</script>"}}
	r.Baseline = &verdict.BaselineComparison{File: "<old>.json", Cells: []verdict.Delta{
		{Workload: "get", Target: hostile[0], Concurrency: 1, OldQPS: 0, NewQPS: 1000, Change: math.Inf(1), Significant: true},
	}}
	return r
}

// renderAllFiles renders every file of r (with the summary as summary.txt)
// through WriteReports, and returns them by name.
func renderAllFiles(t *testing.T, r *verdict.Report) map[string][]byte {
	t.Helper()
	dir := t.TempDir()
	if err := report.WriteReports(dir, r); err != nil {
		t.Fatalf("WriteReports: %v", err)
	}
	out := map[string][]byte{}
	for _, name := range []string{"report.json", "report.csv", "report.md", "report.html"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		out[name] = b
	}
	var s bytes.Buffer
	if err := report.WriteSummary(&s, r); err != nil {
		t.Fatalf("WriteSummary: %v", err)
	}
	out["summary.txt"] = s.Bytes()
	return out
}

func TestRenderGolden(t *testing.T) {
	got := renderAllFiles(t, renderSyntheticReport())
	for name, golden := range map[string]string{
		"report.csv":  "render_report.csv.golden",
		"report.md":   "render_report.md.golden",
		"summary.txt": "render_summary.txt.golden",
		"report.html": "render_report.html.golden",
	} {
		path := filepath.Join("testdata", golden)
		if *renderUpdate {
			if err := os.WriteFile(path, got[name], 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run go test ./benchmarks/report/ -run TestRenderGolden -update to create it)", err)
		}
		if !bytes.Equal(got[name], want) {
			t.Errorf("%s differs from %s (go test ./benchmarks/report/ -run TestRenderGolden -update rewrites it, then review the diff):\n%s",
				name, path, renderFirstDiff(got[name], want))
		}
	}
}

// renderFirstDiff shows the first line where got and want differ.
func renderFirstDiff(got, want []byte) string {
	g, w := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	for i := range max(len(g), len(w)) {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return fmt.Sprintf("line %d:\n got  %q\n want %q", i+1, gl, wl)
		}
	}
	return "(no line differs)"
}

func TestRenderReportJSONIsTheReport(t *testing.T) {
	r := renderSyntheticReport()
	var back verdict.Report
	if err := json.Unmarshal(renderAllFiles(t, r)["report.json"], &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(&back, r) {
		a, _ := json.Marshal(&back)
		b, _ := json.Marshal(r)
		t.Errorf("report.json does not read back as the report:\n%s", renderFirstDiff(
			bytes.ReplaceAll(a, []byte(","), []byte(",\n")), bytes.ReplaceAll(b, []byte(","), []byte(",\n"))))
	}
	// The contract's names (docs/DESIGN.md §4).
	var raw struct {
		Cells           []map[string]any `json:"cells"`
		Recommendations []map[string]any `json:"recommendations"`
	}
	if err := json.Unmarshal(renderAllFiles(t, r)["report.json"], &raw); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"workload", "target", "concurrency", "qps", "p50_ms", "p99_ms", "errors", "conns", "samples"} {
		if _, ok := raw.Cells[0][k]; !ok {
			t.Errorf("report.json cells lack %q", k)
		}
	}
	for _, k := range []string{"workload", "concurrency", "strategy", "confidence", "margin", "p_value", "runner_up", "url"} {
		if _, ok := raw.Recommendations[0][k]; !ok {
			t.Errorf("report.json recommendations lack %q", k)
		}
	}
}

func TestRenderReportJSONWritesNonFiniteAsZero(t *testing.T) {
	r := renderEdgeReport()
	before := fmt.Sprintf("%+v", r.Recommendations)
	var back verdict.Report
	if err := json.Unmarshal(renderAllFiles(t, r)["report.json"], &back); err != nil {
		t.Fatalf("report.json of a report with NaN: %v", err)
	}
	if got := back.Cells[10].QPS; got != 0 || !math.IsNaN(r.Cells[10].QPS) {
		t.Errorf("NaN QPS written as %v; want 0 (and the report left as it was)", got)
	}
	if after := fmt.Sprintf("%+v", r.Recommendations); after != before {
		t.Errorf("WriteReports changed the report:\n  %s\nwas\n  %s", after, before)
	}
}

func TestRenderReportCSV(t *testing.T) {
	r := renderEdgeReport()
	rows, err := csv.NewReader(bytes.NewReader(renderAllFiles(t, r)["report.csv"])).ReadAll()
	if err != nil {
		t.Fatalf("report.csv is not RFC 4180: %v", err)
	}
	want := "workload,target,concurrency,qps,qps_low,qps_high,samples,p50_ms,p90_ms,p99_ms,p999_ms,max_ms," +
		"ops,errors,failed,conns,cpu_us_per_op,allocs_per_op,bytes_per_op,hit_ratio,rate,invalidations_per_write"
	if got := strings.Join(rows[0], ","); got != want {
		t.Errorf("report.csv header = %s; want %s", got, want)
	}
	if len(rows) != len(r.Cells)+1 {
		t.Fatalf("report.csv has %d rows; want a header and %d cells", len(rows), len(r.Cells))
	}
	for i, c := range r.Cells {
		if rows[i+1][1] != c.Target || rows[i+1][0] != c.Workload {
			t.Errorf("report.csv row %d = %q, %q; want %q, %q", i+1, rows[i+1][0], rows[i+1][1], c.Workload, c.Target)
		}
	}
}

func TestRenderWriteReportsLeavesNoTemporaryFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b")
	for range 2 { // the second run replaces the first's files
		if err := report.WriteReports(dir, renderSyntheticReport()); err != nil {
			t.Fatal(err)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if want := []string{"report.csv", "report.html", "report.json", "report.md"}; !reflect.DeepEqual(names, want) {
		t.Errorf("WriteReports left %v; want %v", names, want)
	}
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := report.WriteReports(file, renderSyntheticReport()); err == nil {
		t.Errorf("WriteReports into a regular file = nil; want an error")
	}
}

type renderFailingWriter struct{}

func (renderFailingWriter) Write([]byte) (int, error) { return 0, io.ErrClosedPipe }

func TestRenderSummaryFitsATerminal(t *testing.T) {
	for name, r := range map[string]*verdict.Report{"synthetic": renderSyntheticReport(), "edge": renderEdgeReport()} {
		var b bytes.Buffer
		if err := report.WriteSummary(&b, r); err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(b.String(), "\n") {
			if n := utf8.RuneCountInString(strings.ReplaceAll(line, "\t", "    ")); n > 100 {
				t.Errorf("%s summary line %d has %d columns; want at most 100:\n%s", name, i+1, n, line)
			}
		}
	}
	if err := report.WriteSummary(renderFailingWriter{}, renderSyntheticReport()); !errors.Is(err, io.ErrClosedPipe) {
		t.Errorf("WriteSummary to a failing writer = %v; want its error", err)
	}
}

func TestRenderSummarySaysEveryOutcomeAndFailed(t *testing.T) {
	var b bytes.Buffer
	if err := report.WriteSummary(&b, renderSyntheticReport()); err != nil {
		t.Fatal(err)
	}
	s := b.String()
	for _, want := range []string{
		"FAILED pool-32 at 1000: 1234 errors; first: redisx: connection: dial tcp 127.0.0.1:41002: connect:\n" +
			"      cannot assign requested address",
		"tie-break: equivalent within 5%",
		"alternative: pool-32",
		"undecided between multiplexed-4 and multiplexed-1; -max-repeats 30 might decide",
		"none, undecided: mget at 100 (multiplexed-4 or multiplexed-1)",
		"pool-32 overtakes multiplexed-1 between 10 and 100 goroutines",
		"rueidis overtakes multiplexed-4 between 100 and 1000 goroutines",
		"url: redis://127.0.0.1:6379?strategy=multiplexed&near=64MiB",
		"(a peer client, not redisx: no URL)",
		"verdict changed: mget at 100 goroutines",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("summary lacks %q:\n%s", want, s)
		}
	}
}

// renderOutsideCode returns md without its code spans (CommonMark: a
// run of n backticks, not escaped, up to the next run of exactly n),
// whose text is literal.
func renderOutsideCode(md string) string {
	var b strings.Builder
	for {
		i := strings.IndexByte(md, '`')
		if i < 0 {
			return b.String() + md
		}
		if i > 0 && md[i-1] == '\\' { // an escaped backtick is text
			b.WriteString(md[:i+1])
			md = md[i+1:]
			continue
		}
		b.WriteString(md[:i])
		n := len(md[i:]) - len(strings.TrimLeft(md[i:], "`"))
		rest := md[i+n:]
		for {
			j := strings.IndexByte(rest, '`')
			if j < 0 {
				return b.String() // unclosed: count it as code
			}
			m := len(rest[j:]) - len(strings.TrimLeft(rest[j:], "`"))
			rest = rest[j+m:]
			if m == n {
				break
			}
		}
		md = rest
	}
}

func TestRenderMarkdownEscapesNames(t *testing.T) {
	md := string(renderAllFiles(t, renderEdgeReport())["report.md"])
	text := renderOutsideCode(md)
	for _, bad := range []string{"<script>", "<img", "<b>", "<i>", "a|b", "[f](g)"} {
		if strings.Contains(text, bad) {
			t.Errorf("report.md holds %q unescaped outside code", bad)
		}
	}
	if strings.Contains(renderOutsideCode("a `<x>` b ``c`d`` e"), "<x>") {
		t.Fatalf("renderOutsideCode keeps code")
	}
	if !strings.Contains(md, "&lt;script&gt;") {
		t.Errorf("report.md lacks the escaped name &lt;script&gt;")
	}
	if !strings.Contains(md, "Partial run") {
		t.Errorf("report.md of a partial run does not say so")
	}
}

func TestRenderIsDeterministic(t *testing.T) {
	for name, mk := range map[string]func() *verdict.Report{"synthetic": renderSyntheticReport, "edge": renderEdgeReport} {
		a, b := renderAllFiles(t, mk()), renderAllFiles(t, mk())
		for file := range a {
			if !bytes.Equal(a[file], b[file]) {
				t.Errorf("%s %s differs between two renderings of the same report:\n%s", name, file, renderFirstDiff(a[file], b[file]))
			}
		}
	}
}

// TestRenderWriteExample writes the synthetic reports for a person (or a
// headless browser) to look at:
//
//	go test -run TestRenderWriteExample ./benchmarks/ -write-example /tmp/report
//	chromium --headless --screenshot=/tmp/report.png file:///tmp/report/synthetic/report.html
func TestRenderWriteExample(t *testing.T) {
	if *renderExample == "" {
		t.Skip("no -write-example directory")
	}
	for name, r := range map[string]*verdict.Report{"synthetic": renderSyntheticReport(), "edge": renderEdgeReport()} {
		dir := filepath.Join(*renderExample, name)
		if err := report.WriteReports(dir, r); err != nil {
			t.Fatal(err)
		}
		var s bytes.Buffer
		if err := report.WriteSummary(&s, r); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "summary.txt"), s.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s", dir)
	}
}
