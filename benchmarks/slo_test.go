package benchmarks

import (
	"testing"
	"time"
)

// queueLatency is a synthetic latency model: an M/M/1-like server with
// capacity perSecond whose latency is base at no load and grows without
// bound as the rate approaches capacity.
func queueLatency(base time.Duration, capacity float64) func(rate float64) time.Duration {
	return func(rate float64) time.Duration {
		if rate >= capacity {
			return time.Hour
		}
		return time.Duration(float64(base) / (1 - rate/capacity))
	}
}

func TestSLOSearchFindsTheRateUnderTheBound(t *testing.T) {
	lat := queueLatency(200*time.Microsecond, 100_000)
	bound := 2 * time.Millisecond // reached at 90,000/s
	var probes []float64
	best, got := searchRate(25_000, 4, 3, func(rate float64) probeResult {
		probes = append(probes, rate)
		l := lat(rate)
		return probeResult{latency: l, ok: l <= bound}
	})
	// Ramp 25k, 50k, 100k (fails); bisect 75k, 87.5k, 93.75k (fails).
	if best != 87_500 {
		t.Errorf("best = %v after probes %v; want 87500", best, probes)
	}
	if len(probes) != 6 {
		t.Errorf("%d probes %v; want 6 (3 of the ramp, 3 of the bisection)", len(probes), probes)
	}
	if got != lat(87_500) || got > bound {
		t.Errorf("latency at best = %v; want %v, under %v", got, lat(87_500), bound)
	}
}

func TestSLOSearchBisectsDownWhenTheStartFails(t *testing.T) {
	lat := queueLatency(200*time.Microsecond, 100_000)
	best, _ := searchRate(200_000, 4, 3, func(rate float64) probeResult {
		return probeResult{latency: lat(rate), ok: lat(rate) <= 2*time.Millisecond}
	})
	// [0, 200k]: 100k fails, 50k passes, 75k passes.
	if best != 75_000 {
		t.Errorf("best = %v; want 75000", best)
	}
}

func TestSLOSearchReportsZeroWhenNothingPasses(t *testing.T) {
	n := 0
	best, _ := searchRate(1000, 3, 2, func(float64) probeResult { n++; return probeResult{ok: false} })
	if best != 0 || n != 3 {
		t.Errorf("best = %v after %d probes; want 0 after 3 (1 ramp, 2 bisection)", best, n)
	}
}

func TestSLOSearchStopsAtTheEndOfTheRamp(t *testing.T) {
	n := 0
	best, _ := searchRate(1000, 3, 2, func(float64) probeResult { n++; return probeResult{ok: true} })
	if best != 4000 || n != 3 {
		t.Errorf("best = %v after %d probes; want 4000 after 3", best, n)
	}
}

func TestParseSLO(t *testing.T) {
	for _, tc := range []struct {
		in   string
		pct  float64
		want time.Duration
	}{{"p99=2ms", 99, 2 * time.Millisecond}, {"p99.9=10ms", 99.9, 10 * time.Millisecond}, {"p50=500us", 50, 500 * time.Microsecond}} {
		s, err := ParseSLO(tc.in)
		if err != nil || s.Percentile != tc.pct || s.Bound != tc.want {
			t.Errorf("ParseSLO(%q) = %+v, %v; want p%v bound %v", tc.in, s, err, tc.pct, tc.want)
		}
		if again, err := ParseSLO(s.String()); err != nil || again != s {
			t.Errorf("SLO %q prints as %q, which parses as %+v, %v", tc.in, s.String(), again, err)
		}
	}
	for _, bad := range []string{"99=2ms", "p99", "p0=1ms", "p101=1ms", "p99=-1ms", "p99=abc", "q99=2ms", ""} {
		if _, err := ParseSLO(bad); err == nil {
			t.Errorf("ParseSLO(%q) succeeded; want an error", bad)
		}
	}
}

func TestSLOWinnerIsTheRedisxTargetWithTheMostHeadroom(t *testing.T) {
	rs := []SLOResult{
		{Workload: "get", Target: "multiplexed-1", Rate: 120_000},
		{Workload: "get", Target: "pool-32", Rate: 100_000},
		{Workload: "get", Target: "rueidis", Rate: 200_000},
		{Workload: "mget", Target: "slotgrouped", Rate: 0},
	}
	markSLOWinners(rs, map[string]bool{"rueidis": true})
	if !rs[0].Winner || rs[1].Winner || rs[2].Winner || rs[3].Winner {
		t.Fatalf("winners = %v %v %v %v; want multiplexed-1 only (a peer never wins, a rate of 0 neither)", rs[0].Winner, rs[1].Winner, rs[2].Winner, rs[3].Winner)
	}
	if h := rs[0].Headroom; h < 0.199 || h > 0.201 {
		t.Errorf("headroom = %v; want 0.20 over pool-32", h)
	}
}
