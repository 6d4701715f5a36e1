package report

import (
	"bytes"
	"encoding/csv"
	"math"
	"strconv"

	"github.com/redisx-go/kit/benchmarks/verdict"
)

// renderCSVHeader is report.csv's header; its order is a contract.
func renderCSVHeader() []string {
	return []string{
		"workload", "target", "concurrency", "qps", "qps_low", "qps_high", "samples",
		"p50_ms", "p90_ms", "p99_ms", "p999_ms", "max_ms", "ops", "errors", "failed", "conns",
		"cpu_us_per_op", "allocs_per_op", "bytes_per_op", "hit_ratio", "rate",
		"invalidations_per_write",
	}
}

// renderCSV writes one row per cell, in the report's order, after the
// header (RFC 4180). Numbers are written in full precision without an
// exponent; NaN and infinities as empty fields.
func renderCSV(b *bytes.Buffer, r *verdict.Report) error {
	w := csv.NewWriter(b)
	if err := w.Write(renderCSVHeader()); err != nil {
		return err
	}
	num := func(x float64) string {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return ""
		}
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	for _, c := range r.Cells {
		err := w.Write([]string{
			c.Workload, c.Target, strconv.Itoa(c.Concurrency),
			num(c.QPS), num(c.QPSLow), num(c.QPSHigh), strconv.Itoa(c.Samples),
			num(c.P50ms), num(c.P90ms), num(c.P99ms), num(c.P999ms), num(c.MaxMs),
			strconv.FormatInt(c.Ops, 10), strconv.FormatInt(c.Errors, 10), strconv.FormatBool(c.Failed),
			strconv.Itoa(c.Conns), num(c.CPUPerOp), num(c.AllocsPerOp), num(c.BytesPerOp),
			num(c.HitRatio), num(c.Rate), num(c.InvalidationsPerWrite),
		})
		if err != nil {
			return err
		}
	}
	w.Flush()
	return w.Error()
}
