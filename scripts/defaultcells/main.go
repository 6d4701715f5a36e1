// Command defaultcells reads a redisx-bench report.json and says, for
// each cell (workload and level), how the default configuration compares
// with every other target there: the ratio of the medians against the
// target it may lose most to, with the 95% interval of that ratio
// (verdict.RatioInterval), and whether the default is within 5% of it
// with 95% confidence, beaten by more than 5%, or neither shown.
//
//	go run ./scripts/defaultcells results/report.json [target]
//
// The default is the target "multiplexed" unless named.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"

	"github.com/redisx-go/kit/benchmarks/verdict"
)

type cell struct {
	Workload    string    `json:"workload"`
	Target      string    `json:"target"`
	Concurrency int       `json:"concurrency"`
	QPS         float64   `json:"qps"`
	Samples     []float64 `json:"qps_samples"`
}

func main() {
	b, err := os.ReadFile(os.Args[1])
	if err != nil {
		panic(err)
	}
	def := "multiplexed"
	if len(os.Args) > 2 {
		def = os.Args[2]
	}
	var r struct{ Cells []cell }
	if err := json.Unmarshal(b, &r); err != nil {
		panic(err)
	}
	type key struct {
		w string
		l int
	}
	groups := map[key][]cell{}
	var keys []key
	for _, c := range r.Cells {
		k := key{c.Workload, c.Concurrency}
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], c)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].w != keys[j].w {
			return keys[i].w < keys[j].w
		}
		return keys[i].l < keys[j].l
	})
	within, beaten, slower, n := 0, 0, 0, 0
	for _, k := range keys {
		var d *cell
		for i := range groups[k] {
			if groups[k][i].Target == def {
				d = &groups[k][i]
			}
		}
		if d == nil {
			continue
		}
		n++
		// the worst interval against any other target
		worstLo, worstHi, worstMed, against := 10.0, 10.0, 10.0, ""
		for _, c := range groups[k] {
			if c.Target == def {
				continue
			}
			lo, hi := verdict.RatioInterval(d.Samples, c.Samples, 0.05)
			med := verdict.Median(d.Samples) / verdict.Median(c.Samples)
			if lo < worstLo {
				worstLo, worstHi, worstMed, against = lo, hi, med, c.Target
			}
		}
		mark := ""
		switch {
		case worstLo >= 0.95:
			within++
			mark = "within 5%"
		case worstHi < 0.95:
			beaten++
			mark = "BEATEN by >5%"
		case worstHi < 1:
			slower++
			mark = "slower (95%), by 5% not shown"
		default:
			mark = "not shown within 5%"
		}
		fmt.Printf("%-18s %5d  %s/%-14s %.2fx [%.2f, %.2f]  %s\n", k.w, k.l, def, against, worstMed, worstLo, worstHi, mark)
	}
	fmt.Printf("%d cells: within 5%% of every target (95%%): %d; beaten by more than 5%%: %d; slower, by 5%% not shown: %d\n", n, within, beaten, slower)
}
