package verdict_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/redisx-go/kit/benchmarks/report"
	"github.com/redisx-go/kit/benchmarks/verdict"
)

func TestBaselineDeltasAndVerdictChanges(t *testing.T) {
	old := &verdict.Report{
		Version: verdict.ReportVersion,
		Started: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		Cells: []verdict.Cell{
			cell("multiplexed-1", 100, 1, 100_000, tight...),
			cell("pool-32", 100, 32, 100_000, noisy...),
			cell("pool-8", 100, 8, 50_000, tight...), // gone from the new run
		},
		Recommendations: []verdict.Recommendation{
			{Workload: "get", Concurrency: 100, Strategy: "pool-32", Confidence: "tie"}, // a version 2 report
		},
	}
	// Through JSON and back: the comparison runs on what -baseline
	// loads (benchmarks.LoadReport).
	data, err := json.Marshal(old)
	if err != nil {
		t.Fatal(err)
	}
	base := &verdict.Report{}
	if err := json.Unmarshal(data, base); err != nil {
		t.Fatal(err)
	}
	cur := &verdict.Report{
		Cells: []verdict.Cell{
			cell("multiplexed-1", 100, 1, 120_000, tight...), // +20%, clearly
			cell("pool-32", 100, 32, 101_000, noisy...),      // +1%, noise
			cell("pool-100", 100, 100, 90_000, tight...),     // new
		},
		Recommendations: []verdict.Recommendation{
			{Workload: "get", Concurrency: 100, Strategy: "multiplexed-1", Confidence: verdict.Significant},
		},
	}
	bc := verdict.CompareBaseline(base, cur, 0.05, 0.05)
	if len(bc.Cells) != 2 {
		t.Fatalf("cells = %+v; want the two cells measured in both runs", bc.Cells)
	}
	mux, pool := bc.Cells[0], bc.Cells[1]
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

func TestBaselineNoWinOnEitherSideIsNoVerdictChange(t *testing.T) {
	rec := func(level int, strategy, confidence string) verdict.Recommendation {
		return verdict.Recommendation{Workload: "get", Concurrency: level, Strategy: strategy, Confidence: confidence}
	}
	base := &verdict.Report{Recommendations: []verdict.Recommendation{
		rec(1, "multiplexed-1", "tie"), // a version 2 report's
		rec(10, "multiplexed-1", verdict.Equivalent),
		rec(100, "pool-32", verdict.Significant),
		rec(1000, "pool-32", verdict.Significant),
		rec(50, "pool-32", verdict.Equivalent),
	}}
	cur := &verdict.Report{Recommendations: []verdict.Recommendation{
		rec(1, "multiplexed-2", verdict.Equivalent),     // a tie-break naming another: no change
		rec(10, "pool-8", verdict.Significant),          // a new winner
		rec(100, "multiplexed-1", verdict.Equivalent),   // the old winner lost its win
		rec(1000, "multiplexed-4", verdict.Significant), // another winner
		rec(50, "", verdict.Undecided),                  // no win on either side: no change
	}}
	bc := verdict.CompareBaseline(base, cur, 0.05, 0.05)
	if len(bc.VerdictChanges) != 3 {
		t.Fatalf("verdict changes = %q; want 3 (10, 100 and 1000 goroutines), not the no-wins at 1 and 50", bc.VerdictChanges)
	}
	for _, c := range bc.VerdictChanges {
		if strings.HasPrefix(c, "get at 1 goroutines") || strings.HasPrefix(c, "get at 50 goroutines") {
			t.Errorf("no win on either side counted as a change: %q", c)
		}
	}
}

func TestBaselineSaysWhatIsNotLikeWithLike(t *testing.T) {
	run := func() *verdict.Report {
		return &verdict.Report{
			Machine: verdict.Machine{GOMAXPROCS: 2, CPUs: 2, CPUModel: "AMD EPYC 7B13", GoVersion: "go1.26.8", OS: "linux", Arch: "amd64",
				RedisVersion: "7.0.15", Embedded: true, Pinned: true},
			Settings: verdict.Settings{Mode: "closed", Duration: 500 * time.Millisecond, Warmup: 250 * time.Millisecond, Repeats: 6, Seed: 1},
			Cells:    []verdict.Cell{cell("multiplexed-1", 10, 1, 100_000, tight...)},
		}
	}
	if bc := verdict.CompareBaseline(run(), run(), 0.05, 0.05); !bc.Compatible || len(bc.Mismatches) != 0 {
		t.Errorf("two runs of one plan on one machine: compatible %v, mismatches %q; want compatible", bc.Compatible, bc.Mismatches)
	}
	other := run()
	other.Settings.Seed = 7 // the order of the targets, not the conditions
	other.Settings.Levels = []int{1, 10}
	if bc := verdict.CompareBaseline(run(), other, 0.05, 0.05); !bc.Compatible {
		t.Errorf("another seed and other levels: mismatches %q; want compatible", bc.Mismatches)
	}
	for name, change := range map[string]func(r *verdict.Report){
		"CPU model":       func(r *verdict.Report) { r.Machine.CPUModel = "Intel Xeon" },
		"GOMAXPROCS":      func(r *verdict.Report) { r.Machine.GOMAXPROCS = 8 },
		"Redis version":   func(r *verdict.Report) { r.Machine.RedisVersion = "7.2.4" },
		"loop":            func(r *verdict.Report) { r.Settings.Mode, r.Settings.Rate = "open", 2000 },
		"sample duration": func(r *verdict.Report) { r.Settings.Duration = 100 * time.Millisecond },
		"repeats":         func(r *verdict.Report) { r.Settings.Repeats = 10 },
		"pinned servers":  func(r *verdict.Report) { r.Machine.Pinned = false },
	} {
		cur := run()
		change(cur)
		bc := verdict.CompareBaseline(run(), cur, 0.05, 0.05)
		if bc.Compatible || len(bc.Mismatches) == 0 || !strings.HasPrefix(bc.Mismatches[0], name+":") {
			t.Errorf("%s changed: compatible %v, mismatches %q; want not compatible, naming %s", name, bc.Compatible, bc.Mismatches, name)
		}
	}
}

func TestBaselineWorkloadDefinitionsAreCompared(t *testing.T) {
	old := verdict.WorkloadDefs([]byte(`{"workloads": [{"name": "custom", "mix": "get:90,set:10", "keys": 1000}, {"name": "get"}]}`))
	now := verdict.WorkloadDefs([]byte(`{"workloads": [{"keys": 1000, "mix": "get:90,set:10", "name": "custom"}, {"name": "get"}]}`))
	if len(old) != 2 || old["custom"] != now["custom"] {
		t.Fatalf("the same definitions read %q and %q; want equal", old, now)
	}
	changed := verdict.WorkloadDefs([]byte(`{"workloads": [{"name": "custom", "mix": "get:50,set:50", "keys": 1000}]}`))
	if changed["custom"] == old["custom"] {
		t.Errorf("another mix reads the same definition %q", changed["custom"])
	}
	if got := verdict.WorkloadDefs([]byte(`{"cells": []}`)); len(got) != 0 {
		t.Errorf("a report without workloads reads %q; want none", got)
	}
}

func TestBaselineWithNoCellInCommonSaysSo(t *testing.T) {
	base := &verdict.Report{Cells: []verdict.Cell{cell("pool-8", 10, 8, 100_000, tight...)}}
	cur := &verdict.Report{Cells: []verdict.Cell{cell("multiplexed-1", 10, 1, 100_000, tight...)}}
	bc := verdict.CompareBaseline(base, cur, 0.05, 0.05)
	if bc.Cells == nil || len(bc.Cells) != 0 {
		t.Fatalf("cells = %#v; want an empty list (report.json: [])", bc.Cells)
	}
	cur.Baseline = bc
	var b strings.Builder
	if err := report.WriteSummary(&b, cur); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "No cell in common") {
		t.Errorf("summary of a baseline without cells in common does not say so:\n%s", b.String())
	}
}

func TestBaselinePeersThatMovedMeanTheMachineDid(t *testing.T) {
	peer := func(base float64) verdict.Cell {
		c := cell("rueidis", 10, 2, base, tight...)
		c.Peer = true
		return c
	}
	base := &verdict.Report{Cells: []verdict.Cell{cell("multiplexed-1", 10, 1, 100_000, tight...), peer(100_000)}}
	same := &verdict.Report{Cells: []verdict.Cell{cell("multiplexed-1", 10, 1, 130_000, tight...), peer(100_500)}}
	if bc := verdict.CompareBaseline(base, same, 0.05, 0.05); !bc.Compatible || !bc.Cells[0].Significant {
		t.Errorf("only the redisx target moved: compatible %v, mismatches %q, cells %+v; want compatible, its change significant",
			bc.Compatible, bc.Mismatches, bc.Cells)
	}
	drift := &verdict.Report{Cells: []verdict.Cell{cell("multiplexed-1", 10, 1, 180_000, tight...), peer(180_000)}}
	bc := verdict.CompareBaseline(base, drift, 0.05, 0.05)
	if bc.Compatible || len(bc.Mismatches) != 1 || !strings.Contains(bc.Mismatches[0], "rueidis at 10 +80%") || !bc.Cells[1].Peer {
		t.Errorf("the peer moved +80%% too: compatible %v, mismatches %q; want not compatible, naming rueidis", bc.Compatible, bc.Mismatches)
	}
}
