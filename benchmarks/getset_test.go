package benchmarks_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/redisx-go/kit/redisx"
)

// Concurrency levels of the sweep.
var levels = []int{1, 4, 10, 100, 1000}

const (
	benchKeys  = 1024
	valueBytes = 64
)

func benchKey(i int) string { return fmt.Sprintf("bench:key:%d", i) }

func seed(b testing.TB, t suiteTarget) []string {
	keys := make([]string, benchKeys)
	v := make([]byte, valueBytes)
	for i := range keys {
		keys[i] = benchKey(i)
		if err := t.set(context.Background(), keys[i], v); err != nil {
			b.Fatalf("seed: %v", err)
		}
	}
	return keys
}

// parallel runs op b.N times in all on exactly goroutines goroutines and
// reports ops/s and errors. (b.RunParallel would not do: it runs a
// multiple of GOMAXPROCS goroutines, so 1 would be 2 on two cores.)
func parallel(b *testing.B, goroutines int, op func(ctx context.Context, i int) error) {
	b.ReportAllocs()
	var errs, claimed atomic.Int64
	ctx, n := context.Background(), int64(b.N)
	var wg sync.WaitGroup
	b.ResetTimer()
	for g := range goroutines {
		wg.Go(func() {
			i := g * 7919
			for claimed.Add(1) <= n {
				i++
				if err := op(ctx, i); err != nil {
					errs.Add(1)
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
	if n := errs.Load(); n > 0 {
		b.Fatalf("%d errors", n)
	}
}

func BenchmarkGet(b *testing.B) {
	for _, open := range targets(b) {
		t := open()
		keys := seed(b, t)
		for _, g := range levels {
			b.Run(fmt.Sprintf("strategy=%s/goroutines=%d", t.name, g), func(b *testing.B) {
				parallel(b, g, func(ctx context.Context, i int) error {
					v, err := t.get(ctx, keys[i%benchKeys])
					if err == nil && len(v) != valueBytes {
						err = errors.New("short value")
					}
					if errors.Is(err, redisx.ErrNotFound) {
						return err
					}
					return err
				})
			})
		}
		t.close()
	}
}

func BenchmarkSet(b *testing.B) {
	v := make([]byte, valueBytes)
	for _, open := range targets(b) {
		t := open()
		for _, g := range levels {
			b.Run(fmt.Sprintf("strategy=%s/goroutines=%d", t.name, g), func(b *testing.B) {
				parallel(b, g, func(ctx context.Context, i int) error {
					return t.set(ctx, benchKey(i%benchKeys), v)
				})
			})
		}
		t.close()
	}
}
