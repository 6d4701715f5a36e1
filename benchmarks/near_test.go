package benchmarks_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redisx-go/kit/benchmarks"
	"github.com/redisx-go/kit/benchmarks/load"
	"github.com/redisx-go/kit/localcache"
	"github.com/redisx-go/kit/redisx"
	"github.com/redisx-go/kit/strategy"
)

func openClient(tb testing.TB, s strategy.Strategy) *redisx.Client {
	c, err := redisx.New(context.Background(), redisx.Options{Addrs: []string{serverAddr(tb)}, Strategy: s})
	if err != nil {
		tb.Fatalf("%T: %v", s, err)
	}
	return c
}

// BenchmarkNearHit is bar P6's sides in one run: a GET served from the
// near-cache — through Get (a copy), through AppendGet (into the caller's
// buffer) on one goroutine and on every core — and a GET that goes to
// Redis.
func BenchmarkNearHit(b *testing.B) {
	ctx := context.Background()
	near, plain, key := openP6(b)
	defer near.Close()
	defer plain.Close()
	for _, tc := range []struct {
		name string
		c    *redisx.Client
	}{{"near-hit", near}, {"redis-get", plain}} {
		b.Run("op="+tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if _, err := tc.c.Get(ctx, key); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("op=near-append", func(b *testing.B) { appendHits(b, near, key, false) })
	b.Run("op=near-append-parallel", func(b *testing.B) { appendHits(b, near, key, true) })
}

// appendHits reads key b.N times with AppendGet into a buffer with room,
// on one goroutine or, parallel, on GOMAXPROCS goroutines, and fails
// unless every read was a local hit.
func appendHits(b *testing.B, c *redisx.Client, key string, parallel bool) {
	ctx := context.Background()
	before := c.Stats().LocalMisses
	b.ReportAllocs()
	b.ResetTimer()
	if parallel {
		b.RunParallel(func(pb *testing.PB) {
			buf := make([]byte, 0, 2*valueBytes)
			for pb.Next() {
				if _, err := c.AppendGet(ctx, buf[:0], key); err != nil {
					b.Error(err)
					return
				}
			}
		})
	} else {
		buf := make([]byte, 0, 2*valueBytes)
		for i := 0; i < b.N; i++ {
			if _, err := c.AppendGet(ctx, buf[:0], key); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.StopTimer()
	if misses := c.Stats().LocalMisses - before; misses > 0 {
		b.Fatalf("%d of %d AppendGet calls were local misses, want none", misses, b.N)
	}
}

// zipfKeys is the key space of the Zipf workload.
const zipfKeys = 10000

// BenchmarkNearZipf reads keys drawn from a Zipf distribution (s = 1.1 over
// 10,000 keys) with a share of writes, at 100 goroutines, with and without
// the near-cache, over Multiplexed and Pool. It reports ops/s and the local
// hit ratio.
func BenchmarkNearZipf(b *testing.B) {
	for _, inner := range []struct {
		name string
		s    strategy.Strategy
	}{{"multiplexed", strategy.Multiplexed{}}, {"pool-32", strategy.Pool{Size: 32}}} {
		for _, near := range []bool{false, true} {
			var s strategy.Strategy = inner.s
			name := inner.name
			if near {
				s = localcache.Near{Inner: inner.s, MaxBytes: 64 << 20}
				name = "near-" + inner.name
			}
			for _, writePct := range []int{1, 10} {
				b.Run(fmt.Sprintf("strategy=%s/writes=%d%%", name, writePct), func(b *testing.B) {
					c := openClient(b, s)
					defer c.Close()
					ctx := context.Background()
					v := make([]byte, valueBytes)
					for i := 0; i < zipfKeys; i++ {
						if err := c.Set(ctx, zipfKey(i), v, 0); err != nil {
							b.Fatal(err)
						}
					}
					before := c.Stats()
					var seq atomic.Uint64
					b.ReportAllocs()
					b.SetParallelism(50) // 100 goroutines on 2 cores
					b.ResetTimer()
					b.RunParallel(func(pb *testing.PB) {
						r := rand.New(rand.NewPCG(seq.Add(1), 42))
						z := rand.NewZipf(r, 1.1, 1, zipfKeys-1)
						for pb.Next() {
							k := zipfKey(int(z.Uint64()))
							var err error
							if r.IntN(100) < writePct {
								err = c.Set(ctx, k, v, 0)
							} else {
								_, err = c.Get(ctx, k)
							}
							if err != nil {
								b.Error(err)
								return
							}
						}
					})
					b.StopTimer()
					after := c.Stats()
					b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
					if hits, misses := after.LocalHits-before.LocalHits, after.LocalMisses-before.LocalMisses; hits+misses > 0 {
						b.ReportMetric(float64(hits)/float64(hits+misses), "hit-ratio")
					}
				})
			}
		}
	}
}

func zipfKey(i int) string { return fmt.Sprintf("zipf:%d", i) }

// p6 is one round of bar P6: a near-cache hit through AppendGet on one
// goroutine (ns/op, allocs/op), the same on GOMAXPROCS goroutines (ns/op
// of the whole: throughput), and a Redis GET (ns/op).
type p6 struct {
	hitNs, parallelNs, getNs float64
	hitAllocs                int64
	// computeScaling is how much faster a loop of pure computation runs on
	// GOMAXPROCS goroutines than on one, in the same round: what the
	// machine, shared with other work, let any code scale to.
	computeScaling float64
}

// spin is pure computation for the scaling reference of P6.
func spin(x uint64) uint64 {
	for i := range uint64(20) {
		x = x*6364136223846793005 + i
	}
	return x
}

// measureP6 measures one round of P6 with near and plain (a Near client
// and a plain Multiplexed client); key is cached in near.
func measureP6(tb testing.TB, near, plain *redisx.Client, key string) p6 {
	ctx := context.Background()
	perOp := func(r testing.BenchmarkResult) float64 { return float64(r.T.Nanoseconds()) / float64(r.N) }
	misses := near.Stats().LocalMisses
	hit := testing.Benchmark(func(b *testing.B) { appendHits(b, near, key, false) })
	par := testing.Benchmark(func(b *testing.B) { appendHits(b, near, key, true) })
	if d := near.Stats().LocalMisses - misses; d > 0 || hit.N == 0 || par.N == 0 {
		tb.Fatalf("P6: %d AppendGet calls of a cached key were local misses, want none", d)
	}
	var sink atomic.Uint64
	one := testing.Benchmark(func(b *testing.B) {
		x := uint64(1)
		for i := 0; i < b.N; i++ {
			x = spin(x)
		}
		sink.Add(x)
	})
	all := testing.Benchmark(func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			x := uint64(1)
			for pb.Next() {
				x = spin(x)
			}
			sink.Add(x)
		})
	})
	get := testing.Benchmark(func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			plain.Get(ctx, key)
		}
	})
	return p6{hitNs: perOp(hit), parallelNs: perOp(par), getNs: perOp(get), hitAllocs: hit.AllocsPerOp(),
		computeScaling: perOp(one) / perOp(all)}
}

// openP6 opens bar P6's two clients and caches its key in the near one:
// read once, it is a local hit from the next read on. The key is written
// before the near client opens, so that no invalidation of the write can
// reach it and delete the entry.
func openP6(tb testing.TB) (near, plain *redisx.Client, key string) {
	ctx := context.Background()
	key = "near:p6"
	plain = openClient(tb, strategy.Multiplexed{})
	if err := plain.Set(ctx, key, make([]byte, valueBytes), 0); err != nil {
		tb.Fatal(err)
	}
	near = openClient(tb, localcache.Near{})
	if _, err := near.Get(ctx, key); err != nil {
		tb.Fatal(err)
	}
	return near, plain, key
}

// zipfOp is bar P10's operation on c, as the harness's near/wN workload
// (workload/fixed.go): a key drawn from a Zipf distribution (s = 1.1 over
// zipfKeys keys), SET with probability writePct%, else GET (which must
// return 64 bytes). Each of workers workers draws from its own source.
func zipfOp(c *redisx.Client, workers, writePct int) benchmarks.Op {
	type source struct {
		r *rand.Rand
		z *rand.Zipf
	}
	src := make([]source, workers)
	for w := range src {
		r := rand.New(rand.NewPCG(uint64(w), uint64(writePct)))
		src[w] = source{r, rand.NewZipf(r, 1.1, 1, zipfKeys-1)}
	}
	v := make([]byte, valueBytes)
	return func(ctx context.Context, w, _ int) error {
		s := src[w]
		k := zipfKey(int(s.z.Uint64()))
		if s.r.IntN(100) < writePct {
			return c.Set(ctx, k, v, 0)
		}
		got, err := c.Get(ctx, k)
		if err == nil && len(got) != valueBytes {
			err = fmt.Errorf("GET %s: %d bytes, want %d", k, len(got), valueBytes)
		}
		return err
	}
}

// measureP10 runs bar P10's rounds at writePct% writes: in each, the Zipf
// workload on 100 goroutines for d through Multiplexed alone, then
// through Near over Multiplexed, and returns the ops/s of each round and
// Near's hit ratio over its rounds. Each target runs with no other client
// open: a Near client's invalidation connection hears every write of the
// server — an idle one cost Multiplexed alone 9% at 10% writes — so Near
// is opened for its rounds only, and warmed for d/5 (not measured) first.
func measureP10(tb testing.TB, writePct, rounds int, d time.Duration) (plain, near []float64, hitRatio float64) {
	const goroutines = 100
	ctx := context.Background()
	seeder := openClient(tb, strategy.Multiplexed{})
	seedZipf(tb, seeder)
	seeder.Close()
	run := func(c *redisx.Client, d time.Duration) float64 {
		res, err := load.ClosedLoop(ctx, goroutines, d, zipfOp(c, goroutines, writePct))
		if res.Errors > 0 {
			tb.Fatalf("Zipf %d%% writes: %d errors, first: %v", writePct, res.Errors, err)
		}
		return res.QPS()
	}
	var hits, misses int64
	for range rounds {
		c := openClient(tb, strategy.Multiplexed{})
		plain = append(plain, run(c, d))
		c.Close()
		c = openClient(tb, localcache.Near{Inner: strategy.Multiplexed{}})
		run(c, d/5)
		before := c.Stats()
		near = append(near, run(c, d))
		after := c.Stats()
		c.Close()
		hits += after.LocalHits - before.LocalHits
		misses += after.LocalMisses - before.LocalMisses
	}
	return plain, near, float64(hits) / float64(max(hits+misses, 1))
}

// seedZipf stores the Zipf workload's keys, 64 B each.
func seedZipf(tb testing.TB, c *redisx.Client) {
	ctx := context.Background()
	v := make([]byte, valueBytes)
	kv := map[string][]byte{}
	for i := 0; i < zipfKeys; i++ {
		kv[zipfKey(i)] = v
		if len(kv) == 500 || i == zipfKeys-1 {
			if err := c.MSet(ctx, kv, 0); err != nil {
				tb.Fatal(err)
			}
			clear(kv)
		}
	}
}
