package benchmarks

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/redisx-go/kit/benchmarks/verdict"
)

// Report is the outcome of one run. It is verdict.Report, where it is
// defined with the verdicts computed over it and where its fields, whose
// JSON names are a contract, are documented in full:
//
//   - Version, Started, Finished, Command, Partial: the report format's
//     version; when and by which command line the run ran; whether it
//     was interrupted.
//   - Machine, Settings: where it ran, and with what plan.
//   - Answer, Workloads: the one configuration for the user's workload
//     at the user's concurrency (nil when that cell has no verdict), and
//     what each workload run was.
//   - Cells, Recommendations, Crossovers: every cell measured, the
//     verdicts, and where the best target changes with concurrency.
//   - SLO, Baseline: the highest open-loop rates sustained under the SLO
//     bound; the comparison with an earlier report.
//   - Skipped, Warnings: the workloads that did not run, and why; what a
//     reader must know before trusting the verdicts.
//
// Its method:
//
//   - Finite() *Report: a deep copy of the report whose NaN and infinite numbers
//     are 0 (JSON can hold neither), or the report itself when it has
//     none.
type Report = verdict.Report

// LoadReport reads a report.json written by an earlier run.
func LoadReport(path string) (*Report, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("benchmarks: read report: %w", err)
	}
	var r Report
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("benchmarks: %s is not a report: %w", path, err)
	}
	if r.Version > verdict.ReportVersion {
		return nil, fmt.Errorf("benchmarks: %s has report version %d; this harness reads up to %d", path, r.Version, verdict.ReportVersion)
	}
	return &r, nil
}
