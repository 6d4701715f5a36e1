package benchmarks_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redisx-go/kit/benchmarks"
	"github.com/redisx-go/kit/benchmarks/load"
	"github.com/redisx-go/kit/benchmarks/target"
	"github.com/redisx-go/kit/benchmarks/verdict"
	"github.com/redisx-go/kit/benchmarks/workload"
	"github.com/redisx-go/kit/strategy"
)

// TestBars measures the performance bars of docs/DESIGN.md (P1–P11, H2, H3, N1) as ratios
// of configurations run side by side: rounds alternate between the
// configurations compared, and the median of the rounds is reported
// (Peers: the default against the peers, ratios that are no bar); and the
// verdict's error rates (V1, V2) on the harness's own runs. It
// is opt-in (REDISX_BARS=1, or `make bars`) because it takes minutes and
// timing has no place in the default test run; it fails when a bar is
// missed. REDISX_BARS_ROUNDS (default 5) and REDISX_BARS_SECONDS (default
// 1) size it.
func TestBars(t *testing.T) {
	if os.Getenv("REDISX_BARS") == "" {
		t.Skip("set REDISX_BARS=1 (or run make bars) to measure the performance bars")
	}
	br := &bars{
		rounds: envInt("REDISX_BARS_ROUNDS", 5),
		d:      time.Duration(envInt("REDISX_BARS_SECONDS", 1)) * time.Second,
		keys:   make([]string, benchKeys),
	}
	for i := range br.keys {
		br.keys[i] = benchKey(i)
	}
	// Each bar is a method given its subtest's t, never TestBars's:
	// FailNow must run on the goroutine of the test it fails, and a missed
	// bar is reported under its own name.
	for _, sub := range []struct {
		name string
		run  func(t *testing.T)
	}{
		{"P1+P4", br.p1p4},
		{"P2", br.p2},
		{"P3", br.p3},
		{"P5", br.p5},
		{"P6", br.p6},
		{"P8", br.p8},
		{"P9", br.p9},
		{"P10", br.p10},
		{"P11", br.p11},
		{"H2", br.h2},
		{"H3", br.h3},
		{"N1", br.n1},
		{"V1+V2", br.v1v2},
		{"Peers", br.peers},
	} {
		t.Run(sub.name, sub.run)
	}
	t.Logf("bars (%d alternating rounds of %v, medians):\n%s", br.rounds, br.d, strings.Join(br.report, "\n"))
}

// bars is the state TestBars's subtests share: the sizes of a run, the
// benchmark keys and the report lines gathered for the summary. The
// subtests run one after another, so report needs no lock.
type bars struct {
	rounds int           // rounds per comparison
	d      time.Duration // length of one round of one configuration
	keys   []string      // the benchKeys keys GETs read
	report []string
}

// get is the op of the GET comparisons: a GET of one of the benchmark keys.
func (br *bars) get(tg suiteTarget) benchmarks.Op {
	return func(ctx context.Context, w, i int) error {
		_, err := tg.get(ctx, br.keys[(w*7919+i)%benchKeys])
		return err
	}
}

// median is one target's median QPS and median p50 latency (of the
// rounds' p50s, in seconds) at one level, and the rounds' QPS.
type median struct {
	qps, p50 float64
	rounds   []float64
}

// compareOp runs the targets in alternating rounds at each level, each
// running the op mk builds for it, and returns the medians per target and
// level. An error fails t.
func (br *bars) compareOp(t *testing.T, what string, levels []int, mk func(tg suiteTarget) benchmarks.Op, ts []suiteTarget) map[string]map[int]median {
	med := map[string]map[int]median{}
	for _, g := range levels {
		qps := make([][]float64, len(ts))
		p50 := make([][]float64, len(ts))
		for r := 0; r < br.rounds; r++ {
			// Each round starts with the next target, so that none always
			// runs right after the same other one.
			for j := range ts {
				i := (j + r) % len(ts)
				tg := ts[i]
				op, lat := timed(g, mk(tg))
				res, err := load.ClosedLoop(context.Background(), g, br.d, op)
				if res.Errors > 0 {
					t.Fatalf("%s %s at %d goroutines: %d errors, first: %v", what, tg.name, g, res.Errors, err)
				}
				qps[i] = append(qps[i], res.QPS())
				p50[i] = append(p50[i], lat())
			}
		}
		for i, tg := range ts {
			if med[tg.name] == nil {
				med[tg.name] = map[int]median{}
			}
			m := median{verdict.Median(qps[i]), verdict.Median(p50[i]), qps[i]}
			med[tg.name][g] = m
			t.Logf("%s %-16s goroutines=%-5d median %8.0f ops/s, p50 %6.1f µs  rounds %s", what, tg.name, g, m.qps, m.p50*1e6, fmtQPS(qps[i]))
		}
	}
	return med
}

// compareGets is compareOp for GETs of the benchmark keys. It opens the
// targets, seeds the keys through the first and closes them all before
// it returns.
func (br *bars) compareGets(t *testing.T, levels []int, open ...func() suiteTarget) map[string]map[int]median {
	ts := make([]suiteTarget, len(open))
	for i, o := range open {
		ts[i] = o()
		defer ts[i].close()
	}
	seed(t, ts[0])
	return br.compareOp(t, "GET", levels, br.get, ts)
}

// compare is compareGets returning the median QPS alone.
func (br *bars) compare(t *testing.T, levels []int, open ...func() suiteTarget) map[string]map[int]float64 {
	m := br.compareGets(t, levels, open...)
	out := map[string]map[int]float64{}
	for name, byLevel := range m {
		out[name] = map[int]float64{}
		for g, v := range byLevel {
			out[name][g] = v.qps
		}
	}
	return out
}

// bar records a ratio against its bar, and fails t when it is missed.
func (br *bars) bar(t *testing.T, id string, ratio, want float64, what string) {
	t.Helper()
	verdict := "met"
	if ratio < want {
		verdict = "MISSED"
		t.Errorf("%s: %s = %.2fx, want >= %.2fx", id, what, ratio, want)
	}
	br.report = append(br.report, fmt.Sprintf("%s  %-58s %.2fx (bar %.2fx) %s", id, what, ratio, want, verdict))
}

// aside records a ratio reported beside the bars, to explain one, that
// is not a bar itself and cannot fail.
func (br *bars) aside(id string, ratio float64, what string) {
	br.report = append(br.report, fmt.Sprintf("%s  %-58s %.2fx (context, not a bar)", id, what, ratio))
}

// p1p4 is bars P1 (multiplexed against rueidis) and P4 (no collapse at
// 1000 goroutines).
func (br *bars) p1p4(t *testing.T) {
	sweep := []int{10, 50, 100, 500, 1000}
	m := br.compare(t, sweep,
		func() suiteTarget { return openRedisx(t, "multiplexed", strategy.Multiplexed{}, 0) },
		func() suiteTarget { return openRedisx(t, "multiplexed-1", strategy.Multiplexed{Conns: 1}, 1) },
		func() suiteTarget { return openRueidis(t) })
	for _, g := range []int{100, 1000} {
		want := map[int]float64{100: 3.0, 1000: 1.7}[g] // P1 as raised by the adaptive default (DESIGN.md §6.5, P1+)
		br.bar(t, "P1", m["multiplexed"][g]/m["rueidis"][g], want, fmt.Sprintf("multiplexed / rueidis GET at %d goroutines", g))
		br.aside("P1", m["multiplexed"][g]/m["multiplexed-1"][g], fmt.Sprintf("multiplexed / multiplexed-1 GET at %d goroutines", g))
	}
	peak := 0.0
	for _, g := range sweep {
		peak = max(peak, m["multiplexed"][g])
	}
	br.bar(t, "P4", m["multiplexed"][1000]/peak, 0.8, "multiplexed GET at 1000 goroutines / its own peak")
}

// peers is no bar: the zero value Multiplexed{} against go-redis's
// auto-pipelining (default options) and rueidis, GET at 1, 10, 100 and
// 1000 goroutines, reported as ratios beside the bars with the 95%
// interval of each ratio (verdict.RatioInterval over the rounds): a ratio
// below 1 whose interval holds 1 is no measured loss.
func (br *bars) peers(t *testing.T) {
	levels := []int{1, 10, 100, 1000}
	m := br.compareGets(t, levels,
		func() suiteTarget { return openRedisx(t, "multiplexed", strategy.Multiplexed{}, 0) },
		func() suiteTarget { return openGoRedisAutoPipeline(t) },
		func() suiteTarget { return openRueidis(t) })
	for _, g := range levels {
		for _, peer := range []string{"goredis-autopipeline", "rueidis"} {
			a, b := m["multiplexed"][g], m[peer][g]
			lo, hi := verdict.RatioInterval(a.rounds, b.rounds, 0.05)
			br.aside("Peers", a.qps/b.qps, fmt.Sprintf("multiplexed / %s GET at %d goroutines [%.2f, %.2f]", peer, g, lo, hi))
		}
	}
}

// p2 is bar P2: Pool against redigo's Pool of the same size.
func (br *bars) p2(t *testing.T) {
	for _, n := range []int{8, 32, 100} {
		m := br.compare(t, []int{10, 100, 1000},
			func() suiteTarget { return openRedisx(t, fmt.Sprintf("pool-%d", n), strategy.Pool{Size: n}, n) },
			func() suiteTarget { return openRedigoPool(t, n) })
		for _, g := range []int{10, 100, 1000} {
			br.bar(t, "P2", m[fmt.Sprintf("pool-%d", n)][g]/m[fmt.Sprintf("redigo-pool-%d", n)][g], 1.0,
				fmt.Sprintf("pool-%d / redigo-pool-%d GET at %d goroutines", n, n, g))
		}
	}
}

// p3 is bar P3: the facade's cost over calling the backend directly.
func (br *bars) p3(t *testing.T) {
	for _, s := range []struct {
		name string
		s    strategy.Strategy
	}{{"multiplexed", strategy.Multiplexed{}}, {"pool-32", strategy.Pool{Size: 32}}} {
		m := br.compare(t, []int{10, 1000},
			func() suiteTarget { return openRedisx(t, "facade-"+s.name, s.s, 0) },
			func() suiteTarget { return openDirect(t, "direct-"+s.name, s.s) })
		for _, g := range []int{10, 1000} {
			br.bar(t, "P3", m["facade-"+s.name][g]/m["direct-"+s.name][g], 0.95,
				fmt.Sprintf("facade / direct %s GET at %d goroutines", s.name, g))
		}
	}
}

// p5 is bar P5: SlotGrouped's cross-slot MGet against rueidis's and
// against the plain per-slot loop.
func (br *bars) p5(t *testing.T) {
	keys := crossSlotKeys()
	seedCluster(t, keys)
	ts := []clusterTarget{
		openClusterRedisx(t, "slot-grouped", strategy.SlotGrouped{}),
		openClusterRueidis(t),
		openClusterRedisx(t, "multiplexed", strategy.Multiplexed{}), // the plain per-slot loop
	}
	ts[1].name = "rueidis-mget"
	names := make([]string, len(ts))
	ops := make([]benchmarks.Op, len(ts))
	for i, ct := range ts {
		defer ct.close()
		names[i] = ct.name
		ops[i] = func(ctx context.Context, _, _ int) error { return ct.mget(ctx, keys) }
	}
	m := alternateRounds(t, "MGET", br.rounds, br.d, mgetLevels, names, ops)
	for _, g := range mgetLevels {
		br.bar(t, "P5", m["slot-grouped"][g]/m["rueidis-mget"][g], 1.0,
			fmt.Sprintf("slot-grouped / rueidis MGet, 50 slots, at %d goroutines", g))
		br.bar(t, "P5", m["slot-grouped"][g]/m["multiplexed"][g], 10,
			fmt.Sprintf("slot-grouped / multiplexed per-slot loop at %d goroutines", g))
	}
}

// p6 is bar P6: near-cache hits through AppendGet, alternating with the
// parallel hits and a Redis GET each round: one goroutine ≤ 50 ns and no
// allocation; GOMAXPROCS goroutines ≥ 1.5× its throughput (no shared
// write on the hit path).
func (br *bars) p6(t *testing.T) {
	near, plain, key := openP6(t)
	defer near.Close()
	defer plain.Close()
	var hits, pars, gets, refs []float64
	var allocs int64
	for r := 0; r < br.rounds; r++ {
		m := measureP6(t, near, plain, key)
		hits, pars, gets = append(hits, m.hitNs), append(pars, m.parallelNs), append(gets, m.getNs)
		refs = append(refs, m.computeScaling)
		allocs = max(allocs, m.hitAllocs)
	}
	hit, par, get := verdict.Median(hits), verdict.Median(pars), verdict.Median(gets)
	t.Logf("near-cache AppendGet hit median %.1f ns/op (%d allocs; rounds %s), on %d goroutines %.1f ns/op (rounds %s); Redis GET median %.0f ns/op",
		hit, allocs, fmtNs(hits), runtime.GOMAXPROCS(0), par, fmtNs(pars), get)
	// Not a bar: how far the machine let pure computation scale in the
	// same rounds, to tell a shared hit path from a shared machine.
	t.Logf("reference: a pure-computation loop on %d goroutines / on one: median %.2fx (rounds %s)",
		runtime.GOMAXPROCS(0), verdict.Median(refs), fmtNs(refs))
	verdict := map[bool]string{true: "met", false: "MISSED"}
	br.report = append(br.report, fmt.Sprintf("P6  %-58s %.1f ns (bar <= 50 ns) %s", "near-cache hit through AppendGet, one goroutine", hit, verdict[hit <= 50]))
	if hit > 50 {
		t.Errorf("P6: near-cache hit through AppendGet %.1f ns/op, want <= 50", hit)
	}
	br.report = append(br.report, fmt.Sprintf("P6  %-58s %d (bar 0) %s", "near-cache hit allocations", allocs, verdict[allocs == 0]))
	if allocs != 0 {
		t.Errorf("P6: near-cache hit through AppendGet allocates %d times, want 0", allocs)
	}
	br.bar(t, "P6", hit/par, 1.5, fmt.Sprintf("near-cache hits on %d goroutines / on one (throughput)", runtime.GOMAXPROCS(0)))
	br.bar(t, "P6", get/hit, 1000, "Redis GET time / near-cache hit time")
}

// p8 is bar P8, lone callers: Multiplexed{} GET and SET (64 B) at 1 and 4
// goroutines against rueidis and Pool{Size: 8}, throughput and p50.
// Multiplexed{Conns: 1}, the one connection of the Lettuce model, runs
// beside them, as an aside.
func (br *bars) p8(t *testing.T) {
	ts := []suiteTarget{
		openRedisx(t, "multiplexed", strategy.Multiplexed{}, 0),
		openRedisx(t, "multiplexed-1", strategy.Multiplexed{Conns: 1}, 1),
		openRedisx(t, "pool-8", strategy.Pool{Size: 8}, 8),
		openRueidis(t),
	}
	for _, tg := range ts {
		defer tg.close()
	}
	seed(t, ts[0])
	v := make([]byte, valueBytes)
	set := func(tg suiteTarget) benchmarks.Op {
		return func(ctx context.Context, w, i int) error {
			return tg.set(ctx, br.keys[(w*7919+i)%benchKeys], v)
		}
	}
	for _, op := range []struct {
		name string
		mk   func(suiteTarget) benchmarks.Op
	}{{"GET", br.get}, {"SET", set}} {
		m := br.compareOp(t, op.name, []int{1, 4}, op.mk, ts)
		for _, g := range []int{1, 4} {
			mux := m["multiplexed"][g]
			for _, peer := range []struct {
				name string
				want float64
			}{{"rueidis", 1.0}, {"pool-8", 0.95}} {
				o := m[peer.name][g]
				br.bar(t, "P8", mux.qps/o.qps, peer.want, fmt.Sprintf("multiplexed / %s %s at %d goroutines", peer.name, op.name, g))
				br.bar(t, "P8", o.p50/mux.p50, peer.want, fmt.Sprintf("%s p50 / multiplexed p50, %s at %d", peer.name, op.name, g))
				br.aside("P8", m["multiplexed-1"][g].qps/o.qps, fmt.Sprintf("multiplexed-1 / %s %s at %d goroutines", peer.name, op.name, g))
			}
		}
	}
}

// p9 is bar P9: values of 4 KiB and 32 KiB, SET and GET, at 10 and 100
// goroutines: the best redisx strategy against every peer, Multiplexed{}
// against rueidis, and Multiplexed{} at 100 against its own rate at 10
// (no collapse). The heap after a burst of big values is a unit test:
// strategy.TestMuxHeapAfterBurstOfBigValues.
func (br *bars) p9(t *testing.T) {
	redisxNames := []string{"multiplexed", "multiplexed-4", "pool-32"}
	peers := []string{"rueidis", "redigo-pool-100", "go-redis"}
	gr, _ := openGoRedis(t)
	ts := []suiteTarget{
		openRedisx(t, "multiplexed", strategy.Multiplexed{}, 0),
		openRedisx(t, "multiplexed-4", strategy.Multiplexed{Conns: 4}, 4),
		openRedisx(t, "pool-32", strategy.Pool{Size: 32}, 32),
		openRueidis(t),
		openRedigoPool(t, 100),
		gr,
	}
	for _, tg := range ts {
		defer tg.close()
	}
	for _, size := range []int{4 << 10, 32 << 10} {
		v := make([]byte, size)
		vkeys := make([]string, 256)
		for i := range vkeys {
			vkeys[i] = fmt.Sprintf("bench:v%d:%d", size, i)
			if err := ts[0].set(context.Background(), vkeys[i], v); err != nil {
				t.Fatal(err)
			}
		}
		ops := []struct {
			name string
			mk   func(suiteTarget) benchmarks.Op
		}{
			{"SET", func(tg suiteTarget) benchmarks.Op {
				return func(ctx context.Context, w, i int) error { return tg.set(ctx, vkeys[(w*31+i)%len(vkeys)], v) }
			}},
			{"GET", func(tg suiteTarget) benchmarks.Op {
				return func(ctx context.Context, w, i int) error {
					_, err := tg.get(ctx, vkeys[(w*31+i)%len(vkeys)])
					return err
				}
			}},
		}
		for _, op := range ops {
			what := fmt.Sprintf("%s-%dKiB", op.name, size>>10)
			m := br.compareOp(t, what, []int{10, 100}, op.mk, ts)
			for _, g := range []int{10, 100} {
				best, bestName := 0.0, ""
				for _, n := range redisxNames {
					if q := m[n][g].qps; q > best {
						best, bestName = q, n
					}
				}
				for _, p := range peers {
					br.bar(t, "P9", best/m[p][g].qps, 1.0, fmt.Sprintf("best redisx (%s) / %s %s at %d", bestName, p, what, g))
				}
				br.bar(t, "P9", m["multiplexed"][g].qps/m["rueidis"][g].qps, 1.0, fmt.Sprintf("multiplexed / rueidis %s at %d", what, g))
			}
			if size == 32<<10 {
				br.bar(t, "P9", m["multiplexed"][100].qps/m["multiplexed"][10].qps, 0.8, fmt.Sprintf("multiplexed %s at 100 / at 10 goroutines", what))
			}
		}
	}
}

// p10 is bar P10: the near-cache over Multiplexed against Multiplexed
// alone on the harness's near/wN workload: Zipf reads (s = 1.1 over
// 10,000 keys, 64 B) with 10% and 1% writes, at 100 goroutines.
func (br *bars) p10(t *testing.T) {
	for _, w := range []struct {
		pct  int
		want float64
	}{{10, 1.0}, {1, 1.5}} {
		plain, near, ratio := measureP10(t, w.pct, br.rounds, br.d)
		t.Logf("zipf %d%% writes, 100 goroutines: multiplexed median %.0f ops/s (rounds %s), near-multiplexed %.0f ops/s (rounds %s), hit ratio %.3f",
			w.pct, verdict.Median(plain), fmtQPS(plain), verdict.Median(near), fmtQPS(near), ratio)
		br.bar(t, "P10", verdict.Median(near)/verdict.Median(plain), w.want,
			fmt.Sprintf("near / multiplexed, Zipf %d%% writes, 100 goroutines", w.pct))
	}
}

// timed wraps op so that each call's latency is recorded, per worker, and
// returns it with a function giving the median (p50) of the calls made.
func timed(workers int, op benchmarks.Op) (benchmarks.Op, func() float64) {
	lat := make([][]float64, workers)
	wrapped := func(ctx context.Context, w, i int) error {
		start := time.Now()
		err := op(ctx, w, i)
		lat[w] = append(lat[w], time.Since(start).Seconds())
		return err
	}
	return wrapped, func() float64 {
		var all []float64
		for _, l := range lat {
			all = append(all, l...)
		}
		return verdict.Median(all)
	}
}

func fmtNs(xs []float64) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.FormatFloat(x, 'f', 1, 64)
	}
	return strings.Join(s, " ")
}

func fmtQPS(xs []float64) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.FormatFloat(x/1000, 'f', 0, 64) + "k"
	}
	return strings.Join(s, " ")
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// p11 is bar P11: DoMulti of 100 commands (GETs and SETs of 64 B,
// alternating) on Multiplexed{} against rueidis's DoMulti at 1, 10 and
// 100 goroutines; go-redis's Pipelined and Multiplexed{Conns: 1} are
// reported beside them. Each
// client builds its batch its own way on every op, as a service would.
func (br *bars) p11(t *testing.T) {
	const n = 100
	ts := []suiteTarget{
		openRedisx(t, "multiplexed", strategy.Multiplexed{}, 0),
		openRedisx(t, "multiplexed-1", strategy.Multiplexed{Conns: 1}, 1),
		openRueidis(t),
		clientTarget("go-redis", 0, openPeer(t, target.GoRedisTarget(), []string{serverAddr(t)}, false)),
	}
	for _, tg := range ts {
		defer tg.close()
	}
	seed(t, ts[0])
	v := make([]byte, valueBytes)
	set := make([]bool, n)
	for i := range set {
		set[i] = i%2 == 1
	}
	mk := func(tg suiteTarget) benchmarks.Op {
		p, err := workload.PipelinerOf(tg.client)
		if err != nil {
			t.Fatalf("%s: %v", tg.name, err)
		}
		return func(ctx context.Context, w, i int) error {
			keys := make([]string, n)
			for j := range keys {
				keys[j] = br.keys[(w*7919+i*n+j)%benchKeys]
			}
			_, err := p.Pipeline(ctx, keys, set, v)
			return err
		}
	}
	levels := []int{1, 10, 100}
	m := br.compareOp(t, "DoMulti/100", levels, mk, ts)
	for _, g := range levels {
		mux := m["multiplexed"][g].qps
		br.bar(t, "P11", mux/m["rueidis"][g].qps, 1.0, fmt.Sprintf("multiplexed DoMulti / rueidis DoMulti, 100 commands at %d", g))
		br.aside("P11", mux/m["go-redis"][g].qps, fmt.Sprintf("multiplexed DoMulti / go-redis Pipelined, 100 commands at %d", g))
		br.aside("P11", m["multiplexed-1"][g].qps/m["rueidis"][g].qps, fmt.Sprintf("multiplexed-1 DoMulti / rueidis DoMulti, 100 commands at %d", g))
	}
}
