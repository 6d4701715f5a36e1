package benchmarks_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/redisx-go/kit/benchmarks"
	"github.com/redisx-go/kit/benchmarks/verdict"
	"github.com/redisx-go/kit/internal/launcher"
)

// h3 is bar H3 and the pacer's bar: on a server of its own on loopback,
// GETs of multiplexed in closed loop at one goroutine and in open loop
// at 2,000/s on one worker, alternating over the rounds (one sample
// each): the open loop's median p50 must be within 2x the closed loop's.
// And the open loop's send lateness p99 must stay within 50 µs at 2,000,
// 10,000 (one worker) and 50,000 per second (10 workers).
func (br *bars) h3(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	servers := benchmarks.Servers{Standalone: srv.Addr()}
	run := func(workers int, rate float64) verdict.Cell {
		p := tinyPlan("get")
		p.Targets = p.Targets[:1] // multiplexed
		p.Levels = []int{workers}
		p.Duration, p.Warmup, p.Repeats, p.Rate = br.d, br.d/2, 1, rate
		rep, err := benchmarks.Run(context.Background(), p, servers, nil)
		if err != nil || len(rep.Cells) != 1 || rep.Cells[0].Failed {
			t.Fatalf("get at %v/s on %d workers: %v, cells %+v", rate, workers, err, rep.Cells)
		}
		return rep.Cells[0]
	}
	var closed, open []float64
	late := map[float64][]float64{}
	for range br.rounds {
		closed = append(closed, run(1, 0).P50ms)
		c := run(1, 2000)
		open = append(open, c.P50ms)
		late[2000] = append(late[2000], c.LatenessP99ms)
		late[10_000] = append(late[10_000], run(1, 10_000).LatenessP99ms)
		late[50_000] = append(late[50_000], run(10, 50_000).LatenessP99ms)
	}
	c50, o50 := verdict.Median(closed), verdict.Median(open)
	t.Logf("H3 p50: closed loop ×1 %.1f µs, open loop at 2000/s ×1 %.1f µs; rounds closed %v, open %v", c50*1e3, o50*1e3, closed, open)
	br.bar(t, "H3", c50/o50, 0.5, "closed p50 ×1 / open-loop p50 at 2000/s ×1 (open ≤ 2x closed)")
	for _, rate := range []float64{2000, 10_000, 50_000} {
		l := verdict.Median(late[rate])
		t.Logf("H3 lateness p99 at %v/s: median %.1f µs; rounds %v ms", rate, l*1e3, late[rate])
		br.bar(t, "H3", 0.050/max(l, 1e-6), 1.0, fmt.Sprintf("50 µs / send lateness p99 at %v/s (lateness ≤ 50 µs)", rate))
	}
}
