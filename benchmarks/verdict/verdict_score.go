package verdict

// What a verdict ranks and compares cells by, higher better: a center
// (the leader has the highest) and the samples the rank test compares.
//
// In closed loop it is the throughput: the median QPS and the samples'
// QPS. In open loop every target is offered the same rate, so throughput
// ties by construction and says nothing; there it is the latency, per
// sample: the reciprocals of the samples' own p99s, and of their median.
// The rank test is indifferent to the reciprocal, and the ratio of two
// scores less 1 — a verdict's Margin — reads as "the runner-up's p99 is
// this much higher".

// score is the center of c's verdict metric.
func score(c Cell) float64 {
	if !openLoopCell(c) {
		return c.QPS
	}
	if m := Median(c.P99Samples); m > 0 {
		return 1 / m
	}
	return 0
}

// scoreSamples are the samples of c's verdict metric.
func scoreSamples(c Cell) []float64 {
	if !openLoopCell(c) {
		return c.QPSSamples
	}
	inv := make([]float64, len(c.P99Samples))
	for i, p := range c.P99Samples {
		if p > 0 {
			inv[i] = 1 / p
		}
	}
	return inv
}

// openLoopCell reports whether c was measured in open loop, with the
// per-sample p99s its verdict needs.
func openLoopCell(c Cell) bool { return c.Rate > 0 && len(c.P99Samples) > 0 }
