package redisx_test

import (
	"context"
	"runtime"
	"strconv"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/redisx-go/kit/internal/launcher"
	"github.com/redisx-go/kit/redisx"
	"github.com/redisx-go/kit/strategy"
)

// fakeStaticBackend is a fake Backend whose every Get returns a copy of
// one value, with nothing to lock: the facade's own cost shows.
type fakeStaticBackend struct{ v []byte }

func (f fakeStaticBackend) Get(context.Context, string) ([]byte, error) {
	return append([]byte(nil), f.v...), nil
}
func (fakeStaticBackend) Set(context.Context, string, []byte, time.Duration) error { return nil }
func (fakeStaticBackend) Del(context.Context, ...string) (int64, error)            { return 0, nil }
func (fakeStaticBackend) Close() error                                             { return nil }

// BenchmarkClientGetMetrics measures what db.client.operation.duration
// costs a Get: provider=none is a client without instrumentation
// (NewFromBackend), provider=noop one on the global provider with no SDK
// installed (the default), provider=sdk one recording into the SDK. On
// backend=redis a Get is a round trip to a local server (Multiplexed);
// on backend=fake it returns a copy of a value in memory, so the facade's
// own cost is all there is.
func BenchmarkClientGetMetrics(b *testing.B) {
	ctx := context.Background()
	srv := launcher.Standalone(b, launcher.Options{})
	cfg := strategy.Config{Addrs: []string{srv.Addr()}, DialTimeout: 5 * time.Second, ReadTimeout: 3 * time.Second, WriteTimeout: 3 * time.Second}
	reader := sdkmetric.NewManualReader()
	sdk := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer sdk.Shutdown(ctx)

	open := map[string]func(provider string) (*redisx.Client, error){
		"redis": func(provider string) (*redisx.Client, error) {
			if provider == "none" {
				be, err := strategy.Multiplexed{}.Open(ctx, cfg)
				if err != nil {
					return nil, err
				}
				return redisx.NewFromBackend(be), nil
			}
			o := redisx.Options{Addrs: []string{srv.Addr()}}
			if provider == "sdk" {
				o.MeterProvider = sdk
			}
			return redisx.New(ctx, o)
		},
		"fake": func(provider string) (*redisx.Client, error) {
			be := fakeStaticBackend{v: make([]byte, 64)}
			if provider == "none" {
				return redisx.NewFromBackend(be), nil
			}
			o := redisx.Options{Strategy: fakeStrategy{be}}
			if provider == "sdk" {
				o.MeterProvider = sdk
			}
			return redisx.New(ctx, o)
		},
	}
	for _, backend := range []string{"redis", "fake"} {
		for _, provider := range []string{"none", "noop", "sdk"} {
			c, err := open[backend](provider)
			if err != nil {
				b.Fatal(err)
			}
			if err := c.Set(ctx, "bench:metrics", make([]byte, 64), 0); err != nil {
				b.Fatal(err)
			}
			for _, goroutines := range []int{1, 1000} {
				name := "backend=" + backend + "/provider=" + provider + "/goroutines=" + strconv.Itoa(goroutines)
				b.Run(name, func(b *testing.B) {
					b.ReportAllocs()
					if goroutines == 1 {
						for b.Loop() {
							if _, err := c.Get(ctx, "bench:metrics"); err != nil {
								b.Fatal(err)
							}
						}
						return
					}
					b.SetParallelism((goroutines + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
					b.RunParallel(func(pb *testing.PB) {
						for pb.Next() {
							if _, err := c.Get(ctx, "bench:metrics"); err != nil {
								b.Error(err)
								return
							}
						}
					})
				})
			}
			c.Close()
		}
	}
}
