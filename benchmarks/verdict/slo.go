package verdict

import (
	"cmp"
	"slices"
)

// MarkSLOWinners sets Winner and Headroom on the SLO results of every
// workload. The redisx target with the highest confirmed MaxRate wins
// (peers are listed, as in the verdicts, but not chosen) only when that
// rate is at or above the runner-up's FirstFailingRate — the runner-up
// failed where it held; otherwise the search cannot tell them apart and
// nobody wins. Headroom is the winner's MaxRate over the runner-up's,
// less 1.
func MarkSLOWinners(results []SLOResult, peers map[string]bool) {
	byWorkload := map[string][]int{}
	var order []string
	for i, r := range results {
		if _, ok := byWorkload[r.Workload]; !ok {
			order = append(order, r.Workload)
		}
		byWorkload[r.Workload] = append(byWorkload[r.Workload], i)
	}
	for _, w := range order {
		var idx []int
		for _, i := range byWorkload[w] {
			if !peers[results[i].Target] && results[i].MaxRate > 0 {
				idx = append(idx, i)
			}
		}
		if len(idx) == 0 {
			continue
		}
		slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(results[b].MaxRate, results[a].MaxRate) })
		win := &results[idx[0]]
		if !win.Confirmed {
			continue
		}
		if len(idx) == 1 {
			win.Winner = true
			continue
		}
		next := results[idx[1]]
		if next.FirstFailingRate > 0 && win.MaxRate >= next.FirstFailingRate {
			win.Winner = true
			win.Headroom = ratio(win.MaxRate, next.MaxRate)
		}
	}
}
