package benchmarks_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redisx-go/kit/benchmarks"
)

func TestBaselineDeltasAndVerdictChanges(t *testing.T) {
	old := &benchmarks.Report{
		Version: benchmarks.ReportVersion,
		Started: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		Cells: []benchmarks.Cell{
			cell("multiplexed-1", 100, 1, 100_000, tight...),
			cell("pool-32", 100, 32, 100_000, noisy...),
			cell("pool-8", 100, 8, 50_000, tight...), // gone from the new run
		},
		Recommendations: []benchmarks.Recommendation{
			{Workload: "get", Concurrency: 100, Strategy: "pool-32", Confidence: benchmarks.Tie},
		},
	}
	// Write and read it back: the comparison runs on what -baseline loads.
	path := filepath.Join(t.TempDir(), "report.json")
	data, err := json.Marshal(old)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	base, err := benchmarks.LoadReport(path)
	if err != nil {
		t.Fatalf("LoadReport: %v", err)
	}
	cur := &benchmarks.Report{
		Cells: []benchmarks.Cell{
			cell("multiplexed-1", 100, 1, 120_000, tight...), // +20%, clearly
			cell("pool-32", 100, 32, 101_000, noisy...),      // +1%, noise
			cell("pool-100", 100, 100, 90_000, tight...),     // new
		},
		Recommendations: []benchmarks.Recommendation{
			{Workload: "get", Concurrency: 100, Strategy: "multiplexed-1", Confidence: benchmarks.Significant},
		},
	}
	bc := benchmarks.CompareBaseline(base, cur, 0.05)
	if len(bc.Deltas) != 2 {
		t.Fatalf("deltas = %+v; want the two cells measured in both runs", bc.Deltas)
	}
	mux, pool := bc.Deltas[0], bc.Deltas[1]
	if mux.Target != "multiplexed-1" || !mux.Significant || mux.PValue >= 0.05 || mux.Change < 0.199 || mux.Change > 0.201 {
		t.Errorf("multiplexed-1 delta = %+v; want +20%%, significant", mux)
	}
	if pool.Target != "pool-32" || pool.Significant || pool.PValue < 0.05 {
		t.Errorf("pool-32 delta = %+v; want a change that is not significant", pool)
	}
	if bc.Started != "2026-01-02T03:04:05Z" {
		t.Errorf("Started = %q; want the baseline's start", bc.Started)
	}
	if len(bc.VerdictChanges) != 1 || !strings.Contains(bc.VerdictChanges[0], "multiplexed-1") || !strings.Contains(bc.VerdictChanges[0], "was pool-32") {
		t.Errorf("verdict changes = %q; want get at 100: multiplexed-1, was pool-32", bc.VerdictChanges)
	}
}

func TestLoadReportRejectsANewerVersion(t *testing.T) {
	path := filepath.Join(t.TempDir(), "report.json")
	if err := os.WriteFile(path, []byte(`{"version": 99}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := benchmarks.LoadReport(path); err == nil {
		t.Error("LoadReport of version 99 succeeded; want an error")
	}
	if err := os.WriteFile(path, []byte(`not json`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := benchmarks.LoadReport(path); err == nil {
		t.Error("LoadReport of garbage succeeded; want an error")
	}
}
