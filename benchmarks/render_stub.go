package benchmarks

// Stub until the renderers land; deleted at merge.

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// WriteReports writes r into dir (stub: report.json only).
func WriteReports(dir string, r *Report) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "report.json"), append(data, '\n'), 0o644)
}

// WriteSummary writes a short summary of r to w (stub: a few plain lines).
func WriteSummary(w io.Writer, r *Report) error {
	fmt.Fprintf(w, "%d cells, %d recommendations\n", len(r.Cells), len(r.Recommendations))
	for _, rec := range r.Recommendations {
		fmt.Fprintf(w, "%s at %d: %s (%s, margin %+.1f%%, p=%.3f, runner-up %s)\n",
			rec.Workload, rec.Concurrency, rec.Strategy, rec.Confidence, 100*rec.Margin, rec.PValue, rec.RunnerUp)
	}
	for _, x := range r.Crossovers {
		fmt.Fprintf(w, "%s: %s\n", x.Workload, x.Text)
	}
	for _, s := range r.SLO {
		if s.Winner {
			fmt.Fprintf(w, "SLO %s: %s sustains %.0f/s (%+.0f%% headroom)\n", s.Workload, s.Target, s.Rate, 100*s.Headroom)
		}
	}
	return nil
}
