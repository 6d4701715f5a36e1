package benchmarks_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	redigo "github.com/gomodule/redigo/redis"
	"github.com/redisx-go/kit/benchmarks"
	"github.com/redisx-go/kit/benchmarks/load"
	"github.com/redisx-go/kit/benchmarks/target"
	"github.com/redisx-go/kit/benchmarks/verdict"
	"github.com/redisx-go/kit/internal/topology"
	"github.com/redisx-go/kit/redisx"
	"github.com/redisx-go/kit/strategy"
)

// The cross-slot workload of docs/DESIGN.md section 4 and bar P5: one MGET of
// 50 keys lying in 50 different slots of a 3-master cluster.

// mgetKeys is the number of keys of one cross-slot MGET.
const mgetKeys = 50

// Concurrency levels of the cluster sweeps.
var (
	mgetLevels       = []int{1, 10, 100}
	clusterGetLevels = []int{10, 100, 1000}
)

// crossSlotKeys returns mgetKeys keys, each in a slot of its own.
func crossSlotKeys() []string {
	seen := make(map[int]bool, mgetKeys)
	keys := make([]string, 0, mgetKeys)
	for i := 0; len(keys) < mgetKeys; i++ {
		k := fmt.Sprintf("bench:mget:%d", i)
		if s := topology.Slot(k); !seen[s] {
			seen[s] = true
			keys = append(keys, k)
		}
	}
	return keys
}

// seedCluster stores a valueBytes-long value under every key.
func seedCluster(tb testing.TB, keys []string) {
	c, err := redisx.New(context.Background(), redisx.Options{Addrs: clusterSeeds(tb)})
	if err != nil {
		tb.Fatalf("seed cluster: %v", err)
	}
	defer c.Close()
	v := make([]byte, valueBytes)
	for i := range v {
		v[i] = 'a' + byte(i%26)
	}
	for _, k := range keys {
		if err := c.Set(context.Background(), k, v, 0); err != nil {
			tb.Fatalf("seed cluster: %v", err)
		}
	}
}

// clusterTarget is one client configuration on the cluster: GET and SET
// (suiteTarget), one cross-slot MGET that checks every value it reads, and the
// connections it holds per master.
type clusterTarget struct {
	suiteTarget
	mget         func(ctx context.Context, keys []string) error
	connsPerNode func(tb testing.TB) float64
}

var errShortValue = errors.New("value of the wrong length")

// checkValues checks that vs holds n values of valueBytes bytes each.
func checkValues(n int, vs [][]byte) error {
	if len(vs) != n {
		return fmt.Errorf("%d values for %d keys", len(vs), n)
	}
	for _, v := range vs {
		if len(v) != valueBytes {
			return errShortValue
		}
	}
	return nil
}

// openClusterRedisx opens redisx over s on the cluster. Its connection
// count comes from Stats: Conns / Masters.
func openClusterRedisx(tb testing.TB, name string, s strategy.Strategy) clusterTarget {
	c, err := redisx.New(context.Background(), redisx.Options{Addrs: clusterSeeds(tb), Strategy: s})
	if err != nil {
		tb.Fatalf("%s: %v", name, err)
	}
	return clusterTarget{
		suiteTarget: suiteTarget{
			name: name, get: c.Get,
			set:   func(ctx context.Context, k string, v []byte) error { return c.Set(ctx, k, v, 0) },
			close: func() { c.Close() },
		},
		mget: func(ctx context.Context, keys []string) error {
			vs, err := c.MGet(ctx, keys...)
			if err != nil {
				return err
			}
			return checkValues(len(keys), vs)
		},
		connsPerNode: func(testing.TB) float64 {
			st := c.Stats()
			if st.Masters == 0 {
				return 0
			}
			return float64(st.Conns) / float64(st.Masters)
		},
	}
}

// openPerKeyGet is redisx over Multiplexed with the MGET done as a loop
// of single-key GETs.
func openPerKeyGet(tb testing.TB) clusterTarget {
	t := openClusterRedisx(tb, "per-key-get", strategy.Multiplexed{})
	get := t.get
	t.mget = func(ctx context.Context, keys []string) error {
		for _, k := range keys {
			v, err := get(ctx, k)
			if err != nil {
				return err
			}
			if len(v) != valueBytes {
				return errShortValue
			}
		}
		return nil
	}
	return t
}

// openClusterPeer opens a peer's cluster client, the harness's own
// definition of it; its MGET is the peer's (rueidis: the rueidis.MGet
// helper, one MGET per slot, DoMulti; go-redis: a pipeline of GETs,
// which go-redis splits per node and runs one goroutine per node).
func openClusterPeer(tb testing.TB, t benchmarks.Target) clusterTarget {
	conns := connCounter(tb)
	c := openPeer(tb, t, clusterSeeds(tb), true)
	return clusterTarget{
		suiteTarget: clientTarget(t.Name, 0, c),
		mget: func(ctx context.Context, keys []string) error {
			vs, err := c.MGet(ctx, keys...)
			if err != nil {
				return err
			}
			return checkValues(len(keys), vs)
		},
		connsPerNode: conns,
	}
}

func openClusterRueidis(tb testing.TB) clusterTarget {
	return openClusterPeer(tb, target.RueidisTarget())
}

func openClusterGoRedis(tb testing.TB) clusterTarget {
	return openClusterPeer(tb, target.GoRedisTarget())
}

func openClusterGoRedisAutoPipeline(tb testing.TB) clusterTarget {
	return openClusterPeer(tb, target.GoRedisAutoPipelineTarget())
}

// clusterMasters returns the addresses of the masters serving slots, as
// a seed's slot map names them (topology.Discover).
func clusterMasters(tb testing.TB) []string {
	seed := clusterSeeds(tb)[0]
	c, err := redigo.Dial("tcp", seed, redigo.DialConnectTimeout(2*time.Second), redigo.DialReadTimeout(2*time.Second))
	if err != nil {
		tb.Fatalf("cluster masters: %v", err)
	}
	defer c.Close()
	do := func(_ context.Context, args ...any) (any, error) { return c.Do(args[0].(string), args[1:]...) }
	shards, err := topology.Discover(context.Background(), do, seed, false)
	if err != nil {
		tb.Fatalf("cluster masters: %v", err)
	}
	masters := topology.NewMap(shards).Masters()
	return masters
}

// clientConns counts the client connections the masters see: on each,
// CLIENT LIST TYPE normal on a fresh connection, less that connection.
func clientConns(tb testing.TB, masters []string) int {
	n := 0
	for _, addr := range masters {
		c, err := redigo.Dial("tcp", addr, redigo.DialConnectTimeout(2*time.Second), redigo.DialReadTimeout(2*time.Second))
		if err != nil {
			tb.Fatalf("CLIENT LIST: %v", err)
		}
		list, err := redigo.String(c.Do("CLIENT", "LIST", "TYPE", "normal"))
		c.Close()
		if err != nil {
			tb.Fatalf("CLIENT LIST on %s: %v", addr, err)
		}
		n += len(strings.Split(strings.TrimSpace(list), "\n")) - 1
	}
	return n
}

// connCounter measures a peer's connections, which it does not report
// itself: the connections CLIENT LIST shows on every master when the
// counter is called, less those it showed when connCounter was (before
// the peer opened), divided by the number of masters. Call connCounter
// before opening the client, and the counter while it is open and the
// other clients of the process are closed.
func connCounter(tb testing.TB) func(testing.TB) float64 {
	masters := clusterMasters(tb)
	base := clientConns(tb, masters)
	return func(tb testing.TB) float64 {
		return float64(clientConns(tb, masters)-base) / float64(len(masters))
	}
}

// mgetTargets lists the configurations of the cross-slot MGET sweep.
func mgetTargets(tb testing.TB) []func() clusterTarget {
	named := func(t clusterTarget, name string) clusterTarget { t.name = name; return t }
	return []func() clusterTarget{
		func() clusterTarget { return openClusterRedisx(tb, "slot-grouped", strategy.SlotGrouped{}) },
		func() clusterTarget {
			return openClusterRedisx(tb, "slot-grouped-pool", strategy.SlotGrouped{Transport: strategy.Pool{Size: 32}})
		},
		func() clusterTarget { return openClusterRedisx(tb, "multiplexed", strategy.Multiplexed{}) },
		func() clusterTarget { return openClusterRedisx(tb, "pool-32", strategy.Pool{Size: 32}) },
		func() clusterTarget { return openPerKeyGet(tb) },
		func() clusterTarget { return named(openClusterRueidis(tb), "rueidis-mget") },
		func() clusterTarget { return named(openClusterGoRedis(tb), "go-redis-pipeline") },
	}
}

// BenchmarkClusterMGet measures one 50-key MGET over 50 slots of a
// 3-master cluster: ops/s are MGETs per second, keys/s fifty times that.
func BenchmarkClusterMGet(b *testing.B) {
	keys := crossSlotKeys()
	seedCluster(b, keys)
	for _, open := range mgetTargets(b) {
		t := open()
		for _, g := range mgetLevels {
			b.Run(fmt.Sprintf("strategy=%s/goroutines=%d", t.name, g), func(b *testing.B) {
				parallel(b, g, func(ctx context.Context, i int) error { return t.mget(ctx, keys) })
				b.ReportMetric(float64(b.N*len(keys))/b.Elapsed().Seconds(), "keys/s")
			})
		}
		t.close()
	}
}

// BenchmarkClusterGet measures GET of one key at a time on the cluster and
// reports the connections each configuration holds per master (conns/node):
// redisx's from Stats (Conns / Masters); the peers', which report none,
// counted with CLIENT LIST on every master after the run (see
// connCounter).
func BenchmarkClusterGet(b *testing.B) {
	keys := make([]string, benchKeys)
	for i := range keys {
		keys[i] = benchKey(i)
	}
	seedCluster(b, keys)
	opens := []func() clusterTarget{
		func() clusterTarget { return openClusterRedisx(b, "multiplexed", strategy.Multiplexed{}) },
		func() clusterTarget { return openClusterRedisx(b, "pool-32", strategy.Pool{Size: 32}) },
		func() clusterTarget { return openClusterRueidis(b) },
		func() clusterTarget { return openClusterGoRedis(b) },
		func() clusterTarget { return openClusterGoRedisAutoPipeline(b) },
	}
	for _, open := range opens {
		t := open()
		for _, g := range clusterGetLevels {
			b.Run(fmt.Sprintf("strategy=%s/goroutines=%d", t.name, g), func(b *testing.B) {
				parallel(b, g, func(ctx context.Context, i int) error {
					v, err := t.get(ctx, keys[i%benchKeys])
					if err == nil && len(v) != valueBytes {
						err = errShortValue
					}
					return err
				})
				b.ReportMetric(t.connsPerNode(b), "conns/node")
			})
		}
		t.close()
	}
}

// alternateRounds runs ops[i] (named names[i]) closed-loop for d at each
// level, the configurations taking turns round after round, and returns
// the median ops/s per name and level. An error fails t.
func alternateRounds(t *testing.T, what string, rounds int, d time.Duration, levels []int, names []string, ops []benchmarks.Op) map[string]map[int]float64 {
	med := map[string]map[int]float64{}
	for _, g := range levels {
		samples := make([][]float64, len(ops))
		for r := 0; r < rounds; r++ {
			for i, op := range ops {
				res, err := load.ClosedLoop(context.Background(), g, d, op)
				if res.Errors > 0 {
					t.Fatalf("%s %s at %d goroutines: %d errors, first: %v", what, names[i], g, res.Errors, err)
				}
				samples[i] = append(samples[i], res.QPS())
			}
		}
		for i, name := range names {
			if med[name] == nil {
				med[name] = map[int]float64{}
			}
			med[name][g] = verdict.Median(samples[i])
			rs := make([]string, len(samples[i]))
			for j, x := range samples[i] {
				rs[j] = strconv.FormatFloat(x, 'f', 0, 64)
			}
			t.Logf("%s %-16s goroutines=%-5d median %8.0f ops/s  rounds %s", what, name, g, med[name][g], strings.Join(rs, " "))
		}
	}
	return med
}
