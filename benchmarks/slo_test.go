package benchmarks

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/redisx-go/kit/benchmarks/load"
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

// modelProbe probes a latency model: a rate passes when its latency is
// within bound. It records the rates probed.
func modelProbe(lat func(float64) time.Duration, bound time.Duration, probed *[]float64) func(float64) (probeResult, error) {
	return func(rate float64) (probeResult, error) {
		*probed = append(*probed, rate)
		l := lat(rate)
		return probeResult{ok: l <= bound, samples: 6, worst: l}, nil
	}
}

// checkBracket checks that a search's answer brackets limit, the highest
// rate the model holds: the last passing rate at or below it, the first
// failing above it, within the resolution of each other.
func checkBracket(t *testing.T, f sloFound, limit float64, probed []float64) {
	t.Helper()
	if !(f.maxRate > 0 && f.maxRate <= limit && f.firstFailing > limit) {
		t.Errorf("max %v, first failing %v after probes %v; want them around the limit %v", f.maxRate, f.firstFailing, probed, limit)
	}
	if f.firstFailing > f.maxRate*(1+sloResolution) {
		t.Errorf("max %v, first failing %v: further apart than %v", f.maxRate, f.firstFailing, sloResolution)
	}
}

func TestSLOSearchBracketsBisectsAndConfirms(t *testing.T) {
	lat := queueLatency(200*time.Microsecond, 100_000)
	bound := 2 * time.Millisecond // reached at 90,000/s
	var probed []float64
	f, err := searchRate(1000, 100, 10, 4, modelProbe(lat, bound, &probed))
	if err != nil {
		t.Fatal(err)
	}
	checkBracket(t, f, 90_000, probed)
	// 1k to 128k doubling (8 probes), 4 bisections (a factor of 2 down
	// to 4.4%), sloHolds-1 confirmations of the rate found.
	if len(probed) != 12+sloHolds-1 || probed[7] != 128_000 || probed[len(probed)-1] != f.maxRate || probed[12] != f.maxRate {
		t.Errorf("probes %v; want 8 of the ramp, 4 bisections, then the rate found %d times again", probed, sloHolds-1)
	}
	if !f.confirmed || f.note != "" || len(f.probes) != len(probed) {
		t.Errorf("confirmed %v, note %q, %d probes recorded; want confirmed, no note, all %d", f.confirmed, f.note, len(f.probes), len(probed))
	}
}

func TestSLOSearchStartsEveryTargetAlikeAndRanksThem(t *testing.T) {
	bound := 2 * time.Millisecond
	var fastProbes, slowProbes []float64
	fast, _ := searchRate(1000, 100, 10, 4, modelProbe(queueLatency(200*time.Microsecond, 100_000), bound, &fastProbes))
	slow, _ := searchRate(1000, 100, 10, 4, modelProbe(queueLatency(200*time.Microsecond, 10_000), bound, &slowProbes))
	checkBracket(t, fast, 90_000, fastProbes)
	checkBracket(t, slow, 9_000, slowProbes)
	if fastProbes[0] != slowProbes[0] {
		t.Errorf("first probes %v and %v; want the same start", fastProbes[0], slowProbes[0])
	}
	if fast.maxRate < slow.firstFailing {
		t.Errorf("fast target held %v, slow one failed at %v: the faster must rank higher", fast.maxRate, slow.firstFailing)
	}
}

func TestSLOSearchStepsDownWhenTheStartFails(t *testing.T) {
	var probed []float64
	f, _ := searchRate(8000, 100, 10, 4, modelProbe(queueLatency(200*time.Microsecond, 1000), 2*time.Millisecond, &probed))
	// 8k, 4k, 2k, 1k fail, 500 holds; then bisection between 500 and 1k.
	if !slices.Equal(probed[:5], []float64{8000, 4000, 2000, 1000, 500}) {
		t.Errorf("probes %v; want halving from 8000 to the first that holds, 500", probed)
	}
	checkBracket(t, f, 900, probed)
}

func TestSLOSearchStepsDownWhenTheRerunFails(t *testing.T) {
	lat := queueLatency(200*time.Microsecond, 100_000)
	var probed []float64
	runs := map[float64]int{}
	flaky := 0.0 // the rate found first: its re-run fails
	f, _ := searchRate(1000, 100, 10, 4, func(rate float64) (probeResult, error) {
		probed = append(probed, rate)
		runs[rate]++
		if runs[rate] == 2 && flaky == 0 {
			flaky = rate
			return probeResult{ok: false, why: "a noisy neighbour"}, nil
		}
		return probeResult{ok: lat(rate) <= 2*time.Millisecond}, nil
	})
	if flaky == 0 {
		t.Fatalf("no rate was re-run; probes %v", probed)
	}
	if f.firstFailing != flaky || !(f.maxRate < flaky) || !f.confirmed || runs[f.maxRate] != sloHolds {
		t.Errorf("max %v (run %d times, confirmed %v), first failing %v; want the rate below %v that held 3 times, and %v as the first failing",
			f.maxRate, runs[f.maxRate], f.confirmed, f.firstFailing, flaky, flaky)
	}
	if !strings.Contains(f.note, "stepped down") {
		t.Errorf("note %q; want it to say the search stepped down", f.note)
	}
}

func TestSLOSearchReportsZeroWhenNothingHolds(t *testing.T) {
	var probed []float64
	f, _ := searchRate(1000, 100, 10, 4, modelProbe(func(float64) time.Duration { return time.Hour }, time.Millisecond, &probed))
	// 1000, 500, 250, 125, then the floor itself (62.5 is under it).
	if f.maxRate != 0 || f.firstFailing != 100 || f.confirmed || !slices.Equal(probed, []float64{1000, 500, 250, 125, 100}) {
		t.Errorf("max %v, first failing %v, confirmed %v after probes %v; want 0, 100, false after 1000, 500, 250, 125, 100", f.maxRate, f.firstFailing, f.confirmed, probed)
	}
}

func TestSLOSearchProbesTheFloorBeforeGivingUp(t *testing.T) {
	// The start is under twice the floor: halving it would skip the
	// floor, where the target holds.
	var probed []float64
	f, _ := searchRate(900, 500, 10, 4, modelProbe(queueLatency(200*time.Microsecond, 1000), time.Millisecond, &probed))
	if len(probed) < 2 || probed[1] != 500 || f.maxRate < 500 || f.maxRate > 800 {
		t.Errorf("max %v after probes %v; want the floor, 500, probed after 900 failed, and a rate from 500 to 800 found", f.maxRate, probed)
	}
}

func TestSLOSearchStopsAtTheEndOfTheRamp(t *testing.T) {
	var probed []float64
	f, _ := searchRate(1000, 100, 3, 4, modelProbe(func(float64) time.Duration { return 0 }, time.Millisecond, &probed))
	if f.maxRate != 4000 || f.firstFailing != 0 || !f.confirmed || len(probed) != 2+sloHolds {
		t.Errorf("max %v, first failing %v, confirmed %v after probes %v; want 4000 confirmed, no failure, %d probes", f.maxRate, f.firstFailing, f.confirmed, probed, 2+sloHolds)
	}
}

func TestSLOSearchStaysWithinItsBudget(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		capacity := 100 + rng.Float64()*1e6
		noise := rng.Float64() * 0.3 // a probe fails at random this often
		n := 0
		f, _ := searchRate(1000, 100, 10, 4, func(rate float64) (probeResult, error) {
			n++
			ok := rate < capacity && rng.Float64() >= noise
			return probeResult{ok: ok}, nil
		})
		if n > 10+4+sloConfirms {
			t.Fatalf("%d probes; want at most %d", n, 10+4+sloConfirms)
		}
		if f.maxRate > 0 && f.firstFailing > 0 && f.maxRate >= f.firstFailing {
			t.Fatalf("max %v at or above the first failing %v", f.maxRate, f.firstFailing)
		}
		for _, p := range f.probes {
			if p.Rate == f.maxRate && !p.Passed {
				t.Fatalf("max %v has a failed probe: %+v", f.maxRate, f.probes)
			}
		}
	}
}

// histOf is a histogram of n latencies of d.
func histOf(n int, d time.Duration) *hdr.Histogram {
	h := load.NewHistogram()
	for range n {
		load.Record(h, d)
	}
	return h
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
