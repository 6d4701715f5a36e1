// Command getloop runs one closed loop of GETs (or SETs, or SET-then-GET
// pairs) through redisx at the concurrency levels given, and prints the
// operations per second at each. It uses nothing but the redisx facade
// and strategy values that every commit since the facade has, so that
// scripts/ab-commits.sh can build the same loop at two commits and compare
// the library alone; the benchmarks' own loops changed over time.
//
//	go run ./scripts/getloop -addr 127.0.0.1:6379 -g 10,100,1000
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redisx-go/kit/redisx"
	"github.com/redisx-go/kit/strategy"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:6379", "server host:port")
	levels := flag.String("g", "100,1000", "goroutines, comma-separated")
	d := flag.Duration("d", time.Second, "length of each level")
	conns := flag.Int("conns", 0, "Multiplexed{Conns: n} (0: the zero value)")
	pool := flag.Int("pool", 0, "Pool{Size: n} instead of Multiplexed")
	size := flag.Int("size", 64, "value bytes")
	op := flag.String("op", "get", "get, set or setget")
	flag.Parse()
	if err := run(*addr, *levels, *d, *conns, *pool, *size, *op); err != nil {
		fmt.Fprintln(os.Stderr, "getloop:", err)
		os.Exit(1)
	}
}

func run(addr, levels string, d time.Duration, conns, pool, size int, op string) error {
	if op != "get" && op != "set" && op != "setget" {
		return fmt.Errorf("-op %q: want get, set or setget", op)
	}
	var s strategy.Strategy = strategy.Multiplexed{Conns: conns}
	if pool > 0 {
		s = strategy.Pool{Size: pool}
	}
	ctx := context.Background()
	c, err := redisx.New(ctx, redisx.Options{Addrs: []string{addr}, Strategy: s})
	if err != nil {
		return err
	}
	defer c.Close()
	v := make([]byte, size)
	keys := make([]string, 1000)
	for i := range keys {
		keys[i] = "getloop:" + strconv.Itoa(i)
		if err := c.Set(ctx, keys[i], v, 0); err != nil {
			return err
		}
	}
	for _, f := range strings.Split(levels, ",") {
		g, err := strconv.Atoi(f)
		if err != nil || g < 1 {
			return fmt.Errorf("-g %q: want positive integers", levels)
		}
		qps, err := level(ctx, c, g, d, keys, v, op)
		if err != nil {
			return err
		}
		fmt.Printf("g=%d %.0f\n", g, qps)
	}
	return nil
}

// level runs g goroutines for d and returns their operations per second.
func level(ctx context.Context, c *redisx.Client, g int, d time.Duration, keys []string, v []byte, op string) (float64, error) {
	var stop atomic.Bool
	var total atomic.Int64
	var first atomic.Value
	var wg sync.WaitGroup
	start := time.Now()
	for w := range g {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := int64(0)
			for i := w * 7919; !stop.Load(); i++ {
				k := keys[i%len(keys)]
				var err error
				switch op {
				case "get":
					_, err = c.Get(ctx, k)
				case "set":
					err = c.Set(ctx, k, v, 0)
				default:
					if err = c.Set(ctx, k, v, 0); err == nil {
						_, err = c.Get(ctx, k)
					}
				}
				if err != nil {
					first.CompareAndSwap(nil, err)
					stop.Store(true)
					return
				}
				n++
			}
			total.Add(n)
		}()
	}
	time.Sleep(d)
	stop.Store(true)
	wg.Wait()
	if err, _ := first.Load().(error); err != nil {
		return 0, err
	}
	return float64(total.Load()) / time.Since(start).Seconds(), nil
}
