package report

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redisx-go/kit/benchmarks/verdict"
)

// PrepareDir creates dir (and its parents) if needed and makes sure a
// file can be created in it, so that a run can refuse a directory it
// could not write its reports to before it measures, not after.
func PrepareDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("redisx: report directory: %w", err)
	}
	f, err := os.CreateTemp(dir, ".report-check-*")
	if err != nil {
		return fmt.Errorf("redisx: report directory: %w", err)
	}
	f.Close()
	return os.Remove(f.Name())
}

// WriteReports creates dir (and its parents) if needed and writes r into
// it as report.json (r as it is, indented), report.csv (one row per cell),
// report.md and report.html (a self-contained page with inline SVG charts,
// readable offline). Each file is written to a temporary file in dir and
// renamed over its name, so that an interrupted run leaves either the
// previous file or the new one, never a truncated one.
//
// JSON has no NaN nor infinity: such numbers (a bug upstream, or a ratio
// to a zero) are written to report.json as 0. A file that fails does not
// stop the others; the errors are joined.
func WriteReports(dir string, r *verdict.Report) error {
	if r == nil {
		return errors.New("redisx: WriteReports of a nil report")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("redisx: report directory: %w", err)
	}
	var errs []error
	for _, f := range []struct {
		name   string
		render func(*bytes.Buffer, *verdict.Report) error
	}{
		{"report.json", renderJSON},
		{"report.csv", renderCSV},
		{"report.md", renderMarkdown},
		{"report.html", renderHTML},
	} {
		var b bytes.Buffer
		err := f.render(&b, r)
		if err == nil {
			err = renderWriteFile(filepath.Join(dir, f.name), b.Bytes())
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("redisx: %s: %w", f.name, err))
		}
	}
	return errors.Join(errs...)
}

// renderWriteFile writes data to a temporary file next to path, syncs it
// and renames it over path.
func renderWriteFile(path string, data []byte) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if _, err := f.Write(data); err != nil {
		return err
	}
	if err := f.Chmod(0o644); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

func renderJSON(b *bytes.Buffer, r *verdict.Report) error {
	out, err := json.MarshalIndent(r.Finite(), "", "  ")
	if err != nil {
		return err
	}
	b.Write(out)
	b.WriteByte('\n')
	return nil
}

// reportView is a Report arranged for display: workloads in plan order,
// each with its targets, levels and verdicts.
type reportView struct {
	r         *verdict.Report
	workloads []*reportWorkload
	// targets are every target of the report, in the plan's order then
	// first appearance: a target's place here is its colour and marker
	// in every chart of the report.
	targets []string
}

// reportWorkload is one workload's cells, verdicts and crossovers.
type reportWorkload struct {
	name    string
	targets []string // in the plan's order, then first appearance
	levels  []int    // ascending
	cells   map[reportKey]*verdict.Cell
	recs    map[int]*verdict.Recommendation // by level
	// recLevels are the levels that have a verdict, ascending.
	recLevels  []int
	crossovers []verdict.Crossover
	failed     []*verdict.Cell // in table order
	styles     []chartStyle    // of each target, the same in every workload
}

type reportKey struct {
	target string
	level  int
}

// cell returns the cell of target at level, nil when none was measured.
func (w *reportWorkload) cell(target string, level int) *verdict.Cell {
	return w.cells[reportKey{target, level}]
}

// mark is how target's cell at level shows its level's verdict: "win"
// (named, significant), "equivalent" (named among equivalent targets),
// "undecided" (a contender of an undecided verdict), or "" (none of
// these).
func (w *reportWorkload) mark(target string, level int) string {
	rec := w.recs[level]
	switch {
	case rec == nil:
		return ""
	case rec.Confidence == verdict.Undecided && slices.Contains(rec.Contenders, target):
		return "undecided"
	case rec.Strategy != target:
		return ""
	case rec.Confidence == verdict.Significant:
		return "win"
	}
	return "equivalent"
}

// newReportView arranges r. A workload/target/level measured twice (an
// open-loop search) shows its last cell; report.csv lists them all.
func newReportView(r *verdict.Report) *reportView {
	v := &reportView{r: r}
	byName := map[string]*reportWorkload{}
	get := func(name string) *reportWorkload {
		w := byName[name]
		if w == nil {
			w = &reportWorkload{name: name, cells: map[reportKey]*verdict.Cell{}, recs: map[int]*verdict.Recommendation{}}
			byName[name] = w
			v.workloads = append(v.workloads, w)
		}
		return w
	}
	for i := range r.Cells {
		c := &r.Cells[i]
		w := get(c.Workload)
		k := reportKey{c.Target, c.Concurrency}
		if w.cells[k] == nil {
			if !slices.Contains(w.targets, c.Target) {
				w.targets = append(w.targets, c.Target)
			}
			if !slices.Contains(w.levels, c.Concurrency) {
				w.levels = append(w.levels, c.Concurrency)
			}
		}
		w.cells[k] = c
	}
	for i := range r.Recommendations {
		rec := &r.Recommendations[i]
		w := get(rec.Workload)
		if w.recs[rec.Concurrency] == nil {
			w.recLevels = append(w.recLevels, rec.Concurrency)
		}
		w.recs[rec.Concurrency] = rec
	}
	for _, c := range r.Crossovers {
		w := get(c.Workload)
		w.crossovers = append(w.crossovers, c)
	}
	for _, s := range r.SLO {
		get(s.Workload)
	}

	// Plan order: the workload family's place in Settings.Workloads, and
	// a target's place in Settings.Targets; unknown ones after, in the
	// order they first appear (stable sorts keep it).
	family := func(name string) int {
		f, _, _ := strings.Cut(name, "/")
		if i := slices.Index(r.Settings.Workloads, f); i >= 0 {
			return i
		}
		return len(r.Settings.Workloads)
	}
	slices.SortStableFunc(v.workloads, func(a, b *reportWorkload) int { return cmp.Compare(family(a.name), family(b.name)) })
	target := func(name string) int {
		if i := slices.Index(r.Settings.Targets, name); i >= 0 {
			return i
		}
		return len(r.Settings.Targets)
	}
	for _, w := range v.workloads {
		slices.SortStableFunc(w.targets, func(a, b string) int { return cmp.Compare(target(a), target(b)) })
		for _, t := range w.targets {
			if !slices.Contains(v.targets, t) {
				v.targets = append(v.targets, t)
			}
		}
		slices.Sort(w.levels)
		slices.Sort(w.recLevels)
		for _, t := range w.targets {
			for _, l := range w.levels {
				if c := w.cell(t, l); c != nil && c.Failed {
					w.failed = append(w.failed, c)
				}
			}
		}
	}
	slices.SortStableFunc(v.targets, func(a, b string) int { return cmp.Compare(target(a), target(b)) })
	for _, w := range v.workloads {
		w.styles = make([]chartStyle, len(w.targets))
		for i, t := range w.targets {
			w.styles[i] = chartStyleOf(slices.Index(v.targets, t))
		}
	}
	return v
}

// slo returns the SLO results of workload, in report order.
func (v *reportView) slo(workload string) []verdict.SLOResult {
	var out []verdict.SLOResult
	for _, s := range v.r.SLO {
		if s.Workload == workload {
			out = append(out, s)
		}
	}
	return out
}

// reportGroup is one recommended target and where it is named.
type reportGroup struct {
	rec   *verdict.Recommendation // the first verdict naming it
	where []string                // "get at 1, 10", …
}

// recommended groups the verdicts by the target they name, in order of
// first appearance: each configuration once, with the workloads and
// levels it was chosen for (an equivalent verdict's marked so). An
// undecided verdict names none: see undecided.
func (v *reportView) recommended() []reportGroup {
	var groups []reportGroup
	for _, w := range v.workloads {
		for _, l := range w.recLevels {
			rec := w.recs[l]
			if rec.Strategy == "" {
				continue
			}
			i := slices.IndexFunc(groups, func(g reportGroup) bool { return g.rec.Strategy == rec.Strategy })
			if i < 0 {
				groups = append(groups, reportGroup{rec: rec})
				i = len(groups) - 1
			}
			g := &groups[i]
			lvl := strconv.Itoa(l)
			if rec.Confidence != verdict.Significant {
				lvl += " (" + rec.Confidence + ")"
			}
			prefix := w.name + " at "
			if n := len(g.where); n > 0 && strings.HasPrefix(g.where[n-1], prefix) {
				g.where[n-1] += ", " + lvl
			} else {
				g.where = append(g.where, prefix+lvl)
			}
		}
	}
	return groups
}

// undecided lists the undecided verdicts, which name no configuration:
// "get at 1 (multiplexed or pool-8)".
func (v *reportView) undecided() []string {
	var out []string
	for _, w := range v.workloads {
		for _, l := range w.recLevels {
			if rec := w.recs[l]; rec.Confidence == verdict.Undecided {
				out = append(out, fmt.Sprintf("%s at %d (%s)", w.name, l, strings.ReplaceAll(renderList(rec.Contenders), " and ", " or ")))
			}
		}
	}
	return out
}

// Numbers for people.

func renderFinite64(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// renderSig formats x with n significant digits, without an exponent.
func renderSig(x float64, n int) string {
	if !renderFinite64(x) {
		return "n/a"
	}
	if x == 0 {
		return "0"
	}
	e := int(math.Floor(math.Log10(math.Abs(x))))
	return strconv.FormatFloat(x, 'f', max(n-1-e, 0), 64)
}

// renderQPS formats an operations rate with 3 significant digits and an
// SI suffix: 950, 41.2k, 1.23M.
func renderQPS(x float64) string {
	if !renderFinite64(x) {
		return "n/a"
	}
	for _, u := range []struct {
		div    float64
		suffix string
	}{{1e9, "G"}, {1e6, "M"}, {1e3, "k"}} {
		// Rounded first, so that 999,960 is 1.00M rather than 1000k.
		if r, _ := strconv.ParseFloat(renderSig(math.Abs(x), 3), 64); r >= u.div {
			return renderSig(x/u.div, 3) + u.suffix
		}
	}
	return renderSig(x, 3)
}

// renderMs formats milliseconds with 3 significant digits.
func renderMs(x float64) string { return renderSig(x, 3) }

// renderCI is c's 95% confidence interval as it is, "[119k, 123k]";
// empty when the interval is unknown.
func renderCI(c *verdict.Cell) string {
	if !(c.QPS > 0) || c.QPSLow == 0 && c.QPSHigh == 0 {
		return ""
	}
	return renderInterval(c.QPSLow, c.QPSHigh, renderQPS)
}

// renderPercent formats a ratio less 1 as a signed percentage: "+23.0%".
func renderPercent(x float64) string {
	if !renderFinite64(x) {
		return "n/a"
	}
	if math.Abs(x) >= 1 {
		return fmt.Sprintf("%+.0f%%", x*100)
	}
	return fmt.Sprintf("%+.1f%%", x*100)
}

// renderP formats a p-value.
func renderP(p float64) string {
	switch {
	case !renderFinite64(p) || p < 0:
		return "n/a"
	case p < 0.001:
		return "<0.001"
	}
	return strconv.FormatFloat(p, 'f', 3, 64)
}

// renderWhen is the date and length of the run.
func renderWhen(r *verdict.Report) string {
	s := r.Started.Format("2006-01-02 15:04:05 MST")
	if !r.Finished.IsZero() && !r.Started.IsZero() && r.Finished.After(r.Started) {
		s += ", " + r.Finished.Sub(r.Started).Round(time.Second).String()
	}
	return s
}

// renderMachine is the machine line of a report.
func renderMachine(m verdict.Machine) string {
	var parts []string
	if m.OS != "" || m.Arch != "" {
		parts = append(parts, m.OS+"/"+m.Arch)
	}
	parts = append(parts, fmt.Sprintf("GOMAXPROCS %d, %d CPUs", m.GOMAXPROCS, m.CPUs))
	if m.GoVersion != "" {
		parts = append(parts, m.GoVersion)
	}
	if m.RedisVersion != "" {
		parts = append(parts, "Redis "+m.RedisVersion)
	}
	return strings.Join(parts, ", ")
}

// renderServers says which servers ran and whether they were pinned.
func renderServers(m verdict.Machine) string {
	var s string
	if m.Embedded {
		s = "servers started by the harness; "
		switch {
		case m.Pinned && m.PinNote != "":
			s += "pinned: " + m.PinNote
		case m.Pinned:
			s += "pinned to CPUs of their own"
		case m.PinNote != "":
			s += "not pinned: " + m.PinNote
		default:
			s += "not pinned (no reason recorded)"
		}
	} else {
		s = "the user's servers (not started by the harness, so not pinned)"
	}
	if m.Standalone != "" {
		s += "; standalone " + m.Standalone
	}
	if m.Sentinel != "" {
		s += " through Sentinel " + m.Sentinel
	}
	if len(m.Cluster) > 0 {
		s += "; cluster " + strings.Join(m.Cluster, ",")
	}
	return s
}

// renderPlan is the settings line of a report.
func renderPlan(s verdict.Settings) string {
	var b strings.Builder
	switch s.Mode {
	case "open":
		fmt.Fprintf(&b, "open loop at %s/s", renderQPS(s.Rate))
	case "", "closed":
		b.WriteString("closed loop")
	default:
		b.WriteString(s.Mode)
	}
	fmt.Fprintf(&b, ", %d samples of %v per cell", s.Repeats, s.Duration)
	if s.Warmup > 0 {
		fmt.Fprintf(&b, " after %v warm-up", s.Warmup)
	}
	if s.SLO != "" {
		fmt.Fprintf(&b, ", SLO %s", s.SLO)
	}
	b.WriteString("; " + renderRule(s))
	fmt.Fprintf(&b, "; seed %d", s.Seed)
	return b.String()
}

// renderRule says how the plan decided its verdicts: "a win needs p <
// 0.0167 and the 98.3% interval of the ratio above +5%; equivalent: the
// 96.7% interval inside [-4.8%, +5%]; otherwise undecided; up to 18
// samples per cell in 3 looks, each at alpha 0.05/3".
func renderRule(s verdict.Settings) string {
	look := s.LookAlpha
	if !(look > 0) {
		look = s.Alpha
	}
	m := renderMargin(s.Margin)
	out := fmt.Sprintf("a win needs p < %s and the %s interval of the ratio above +%s; equivalent: the %s interval inside [%s, +%s]; otherwise undecided",
		strconv.FormatFloat(look, 'g', 3, 64), renderLevel(1-look), m, renderLevel(1-2*look), renderPercent(1/(1+s.Margin)-1), m)
	if s.Looks > 1 {
		out += fmt.Sprintf("; up to %d samples per cell in %d looks, each at alpha %s/%d", s.MaxRepeats, s.Looks,
			strconv.FormatFloat(s.Alpha, 'g', -1, 64), s.Looks)
	}
	return out
}

// renderPartial is the warning of an interrupted run.
const renderPartial = "Partial run: it was interrupted, so some cells are missing " +
	"and the verdicts cover only the cells measured."
