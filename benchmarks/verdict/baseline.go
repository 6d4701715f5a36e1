package verdict

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
)

// CompareBaseline compares cur with an earlier report, benchstat style,
// with alpha and margin as in Recommend (0.05 and 0.05).
//
// First, whether the runs measured like with like (Compatible): the same
// machine (GOMAXPROCS, CPUs, CPU model, OS and architecture, Go and Redis
// versions, servers embedded and pinned or not), the same loop and rate,
// the same sample and warm-up durations and repeats, and the same
// definition of every workload in common; and, measured, the same speed:
// a peer (rueidis, go-redis, redigo), whose code a change to this module
// does not touch, must show no significant change, or the machine drifted
// between the runs (on a shared machine it does, by 2x). What differs is
// listed in Mismatches; the cells are compared all the same, and the
// renderers say loudly that a change may be the difference's.
//
// Then every cell measured in both (same workload, target and level):
// the change of the median QPS with the 95% interval of the ratio of the
// samples (see Recommend), and the Mann-Whitney U p-value of the two
// samples, adjusted for the number of cells compared by
// Benjamini–Hochberg (see adjustBH for why not Holm). A change is
// significant when the adjusted p-value is under alpha and its interval
// lies beyond the margin: at least +margin, or at most 1/(1+margin)-1.
//
// Last, the workloads and levels whose recommended target changed; a
// verdict that is not significant on either side (equivalent, undecided,
// or a baseline's "tie") is no change, whichever target its tie-break
// named.
// File is left for the caller.
func CompareBaseline(base, cur *Report, alpha, margin float64) *BaselineComparison {
	type key struct {
		w, t string
		l    int
	}
	old := map[key]Cell{}
	for _, c := range base.Cells {
		old[key{c.Workload, c.Target, c.Concurrency}] = c
	}
	bc := &BaselineComparison{
		Started: base.Started.Format("2006-01-02T15:04:05Z07:00"), Cells: []Delta{}, VerdictChanges: []string{},
		Mismatches: baselineMismatches(base, cur),
	}
	bc.Compatible = len(bc.Mismatches) == 0
	var ps []float64
	for _, c := range cur.Cells {
		o, ok := old[key{c.Workload, c.Target, c.Concurrency}]
		if !ok || o.Samples == 0 || c.Samples == 0 || o.Failed || c.Failed {
			continue
		}
		lo, hi := RatioInterval(c.QPSSamples, o.QPSSamples, alpha)
		p := RankP(o.QPSSamples, c.QPSSamples, alpha)
		ps = append(ps, p)
		bc.Cells = append(bc.Cells, Delta{
			Workload: c.Workload, Target: c.Target, Concurrency: c.Concurrency, Peer: c.Peer,
			OldQPS: o.QPS, NewQPS: c.QPS, Change: ratio(c.QPS, o.QPS), ChangeLo: lo - 1, ChangeHi: hi - 1,
			PValue: p,
		})
	}
	var peers []string
	for i, q := range adjustBH(ps) {
		d := &bc.Cells[i]
		d.PAdjusted = q
		d.Significant = q < alpha && (d.ChangeLo >= margin || d.ChangeHi+1 <= 1/(1+margin))
		if d.Peer && d.Significant {
			peers = append(peers, fmt.Sprintf("%s %s at %d %+.0f%%", d.Workload, d.Target, d.Concurrency, 100*d.Change))
		}
	}
	if peers != nil {
		// The peers' code is not this module's: when they moved, the
		// machine did (or their versions did), and every cell may have.
		bc.Mismatches = append(bc.Mismatches, "the peers' throughput changed significantly ("+strings.Join(peers, ", ")+
			"), though their code is not this module's: the machine's speed (or their versions) changed between the runs")
		bc.Compatible = false
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
		if !ok || o.Strategy == r.Strategy || o.Confidence != Significant && r.Confidence != Significant {
			continue
		}
		named := func(r Recommendation) string { return cmp.Or(r.Strategy, "no target") }
		bc.VerdictChanges = append(bc.VerdictChanges, fmt.Sprintf("%s at %d goroutines: %s (%s), was %s (%s)",
			r.Workload, r.Concurrency, named(r), r.Confidence, named(o), o.Confidence))
	}
	return bc
}

// baselineMismatches lists what differs between the conditions of two
// runs, as "name: old → new".
func baselineMismatches(base, cur *Report) []string {
	var out []string
	diff := func(name string, old, now any) {
		if !reflect.DeepEqual(old, now) {
			out = append(out, fmt.Sprintf("%s: %v → %v", name, baselineShow(old), baselineShow(now)))
		}
	}
	bm, cm := base.Machine, cur.Machine
	diff("GOMAXPROCS", bm.GOMAXPROCS, cm.GOMAXPROCS)
	diff("CPUs", bm.CPUs, cm.CPUs)
	diff("CPU model", bm.CPUModel, cm.CPUModel)
	diff("OS/arch", bm.OS+"/"+bm.Arch, cm.OS+"/"+cm.Arch)
	diff("Go version", bm.GoVersion, cm.GoVersion)
	diff("Redis version", bm.RedisVersion, cm.RedisVersion)
	diff("embedded servers", bm.Embedded, cm.Embedded)
	diff("pinned servers", bm.Pinned, cm.Pinned)
	bs, cs := base.Settings, cur.Settings
	diff("loop", baselineMode(bs.Mode), baselineMode(cs.Mode))
	diff("rate", bs.Rate, cs.Rate)
	diff("sample duration", bs.Duration, cs.Duration)
	diff("warm-up", bs.Warmup, cs.Warmup)
	diff("repeats", bs.Repeats, cs.Repeats)
	bw, cw := baselineWorkloads(base), baselineWorkloads(cur)
	for _, name := range slices.Sorted(maps.Keys(cw)) {
		if old, ok := bw[name]; ok && old != cw[name] {
			out = append(out, fmt.Sprintf("workload %s: %s → %s", name, old, cw[name]))
		}
	}
	return out
}

func baselineShow(v any) string {
	if s, ok := v.(string); ok && s == "" {
		return "(not recorded)"
	}
	return fmt.Sprint(v)
}

// baselineMode is a Settings.Mode, "closed" when unset.
func baselineMode(m string) string {
	if m == "" {
		return "closed"
	}
	return m
}

// baselineWorkloads returns the definitions of r's workloads by name, as
// the JSON of the entries of report.json's "workloads" (DESIGN §6.2:
// each has a "name"), so that whatever a workload's definition records is
// compared. A report without them (before they were recorded) has none.
func baselineWorkloads(r *Report) map[string]string {
	data, err := json.Marshal(r.Finite())
	if err != nil {
		return nil
	}
	return workloadDefs(data)
}

// workloadDefs reads the "workloads" entries of a report.json.
func workloadDefs(report []byte) map[string]string {
	var top struct {
		Workloads []json.RawMessage `json:"workloads"`
	}
	if json.Unmarshal(report, &top) != nil {
		return nil
	}
	out := map[string]string{}
	for _, raw := range top.Workloads {
		var def map[string]any
		if json.Unmarshal(raw, &def) != nil {
			continue
		}
		name, _ := def["name"].(string)
		canon, _ := json.Marshal(def) // map keys sorted: the same definition, the same text
		out[name] = strings.TrimSpace(string(canon))
	}
	return out
}
