package benchmarks

import (
	"encoding/json"
	"fmt"
	"os"
)

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
	if r.Version > ReportVersion {
		return nil, fmt.Errorf("benchmarks: %s has report version %d; this harness reads up to %d", path, r.Version, ReportVersion)
	}
	return &r, nil
}

// CompareBaseline compares cur with an earlier report, benchstat style:
// for every cell measured in both (same workload, target and level), the
// change of the median QPS and the Mann-Whitney U p-value of the two
// samples, significant when p < alpha; and the workloads and levels
// whose recommended target changed. File is left for the caller.
func CompareBaseline(base, cur *Report, alpha float64) *BaselineComparison {
	type key struct {
		w, t string
		l    int
	}
	old := map[key]Cell{}
	for _, c := range base.Cells {
		old[key{c.Workload, c.Target, c.Concurrency}] = c
	}
	bc := &BaselineComparison{Started: base.Started.Format("2006-01-02T15:04:05Z07:00"), Deltas: []Delta{}, VerdictChanges: []string{}}
	for _, c := range cur.Cells {
		o, ok := old[key{c.Workload, c.Target, c.Concurrency}]
		if !ok || o.Samples == 0 || c.Samples == 0 {
			continue
		}
		p := compare(o.QPSSamples, c.QPSSamples, alpha)
		bc.Deltas = append(bc.Deltas, Delta{
			Workload: c.Workload, Target: c.Target, Concurrency: c.Concurrency,
			OldQPS: o.QPS, NewQPS: c.QPS, Change: ratio(c.QPS, o.QPS),
			PValue: p, Significant: p < alpha,
		})
	}
	type rkey struct {
		w string
		l int
	}
	was := map[rkey]Recommendation{}
	for _, r := range base.Recommendations {
		was[rkey{r.Workload, r.Concurrency}] = r
	}
	for _, r := range cur.Recommendations {
		o, ok := was[rkey{r.Workload, r.Concurrency}]
		if !ok || o.Strategy == r.Strategy {
			continue
		}
		bc.VerdictChanges = append(bc.VerdictChanges, fmt.Sprintf("%s at %d goroutines: %s (%s), was %s (%s)",
			r.Workload, r.Concurrency, r.Strategy, r.Confidence, o.Strategy, o.Confidence))
	}
	return bc
}
