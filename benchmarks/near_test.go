package benchmarks_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

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

// BenchmarkNearHit is bar P6's two sides in one run: a GET served from the
// near-cache and a GET that goes to Redis, one goroutine each.
func BenchmarkNearHit(b *testing.B) {
	ctx := context.Background()
	near := openClient(b, localcache.Near{})
	defer near.Close()
	plain := openClient(b, strategy.Multiplexed{})
	defer plain.Close()
	if err := plain.Set(ctx, "near:hot", make([]byte, valueBytes), 0); err != nil {
		b.Fatal(err)
	}
	if _, err := near.Get(ctx, "near:hot"); err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		c    *redisx.Client
	}{{"near-hit", near}, {"redis-get", plain}} {
		b.Run("op="+tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if _, err := tc.c.Get(ctx, "near:hot"); err != nil {
					b.Fatal(err)
				}
			}
		})
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

// measureP6 returns the ns/op and allocs/op of a near-cache hit and of a
// Redis GET, measured one after the other in this run.
func measureP6(tb testing.TB) (hitNs, getNs float64, hitAllocs int64) {
	ctx := context.Background()
	near := openClient(tb, localcache.Near{})
	defer near.Close()
	plain := openClient(tb, strategy.Multiplexed{})
	defer plain.Close()
	if err := plain.Set(ctx, "near:p6", make([]byte, valueBytes), 0); err != nil {
		tb.Fatal(err)
	}
	if _, err := near.Get(ctx, "near:p6"); err != nil {
		tb.Fatal(err)
	}
	// Let ristretto apply the buffered set before timing hits.
	deadline := time.Now().Add(2 * time.Second)
	for near.Stats().LocalHits == 0 && time.Now().Before(deadline) {
		near.Get(ctx, "near:p6")
		time.Sleep(time.Millisecond)
	}
	hit := testing.Benchmark(func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			near.Get(ctx, "near:p6")
		}
	})
	get := testing.Benchmark(func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			plain.Get(ctx, "near:p6")
		}
	})
	perOp := func(r testing.BenchmarkResult) float64 { return float64(r.T.Nanoseconds()) / float64(r.N) }
	return perOp(hit), perOp(get), hit.AllocsPerOp()
}
