// Package report renders a run's report (verdict.Report) for people and
// programs. WriteReports writes report.json (the Report itself), report.csv
// (one row per cell), report.md and an offline report.html (inline SVG
// charts of QPS, with their intervals as error bars, and p99 against
// concurrency, one colour and marker per target across every chart);
// WriteSummary writes the text summary the CLI prints. Every rendering
// opens with the one answer (Report.Answer), when there is one, and is
// deterministic: the same Report gives the same bytes (golden files in
// testdata/).
package report
