package verdict_test

import (
	"testing"

	"github.com/redisx-go/kit/benchmarks/verdict"
)

// openCell is a synthetic open-loop cell offered 2,000/s: every target
// sustains the rate, so its QPS samples are alike; its samples' own p99s
// are p99 (ms) times the factors.
func openCell(target string, conns int, p99 float64, factors ...float64) verdict.Cell {
	c := cell(target, 10, conns, 2000, -3, -1, 0, 0, 1, 3)
	c.Rate = 2000
	for _, f := range factors {
		c.P99Samples = append(c.P99Samples, p99*f)
	}
	return c
}

var spread = []float64{0.9, 0.95, 1, 1, 1.05, 1.1}

func TestOpenLoopVerdictComparesLatencyNotThroughput(t *testing.T) {
	// Both sustain the offered rate; pool-32's p99 is 4x multiplexed-1's.
	rec := only(t, verdict.Recommend([]verdict.Cell{
		openCell("pool-32", 32, 0.4, spread...),
		openCell("multiplexed-1", 1, 0.1, spread...),
	}, 0.05, 0.05))
	if rec.Strategy != "multiplexed-1" || rec.Confidence != verdict.Significant || rec.RunnerUp != "pool-32" {
		t.Fatalf("verdict %s (%s) over %s; want multiplexed-1, significantly: its p99 is a quarter of pool-32's", rec.Strategy, rec.Confidence, rec.RunnerUp)
	}
	if rec.Margin < 2.99 || rec.Margin > 3.01 {
		t.Errorf("margin %v; want 3.0 (the runner-up's p99 is 4x)", rec.Margin)
	}
	// Latencies alike: no win, as in closed loop.
	rec = only(t, verdict.Recommend([]verdict.Cell{
		openCell("pool-32", 32, 0.1, spread...),
		openCell("multiplexed-1", 1, 0.1, 1.1, 0.9, 1.05, 1, 0.95, 1),
	}, 0.05, 0.05))
	if rec.Confidence == verdict.Significant {
		t.Errorf("alike latencies: %s wins (%s); want equivalent or undecided", rec.Strategy, rec.Confidence)
	}
}
