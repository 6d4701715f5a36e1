package benchmarks

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/redisx-go/kit/benchmarks/verdict"
)

// Report is the outcome of one run: see verdict.Report, where it is
// defined with the verdicts computed over it.
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
