// Command getloop runs one closed loop of GETs (or SETs, or SET-then-GET
// pairs) through redisx at the concurrency levels given, and prints the
// operations per second at each. It uses nothing but the redisx facade
// and strategy values that every commit since the facade has, so that
// scripts/ab-commits.sh can build the same loop at two commits and compare
// the library alone; the benchmarks' own loops changed over time.
//
//	go run ./scripts/getloop -addr 127.0.0.1:6379 -g 10,100,1000
//
// With -costs it also prints, per operation at each level, the client's
// CPU time (µs), its context switches and, given the server's process id
// (-server-pid), the server's CPU time: counts that a busy machine
// disturbs less than the rates.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redisx-go/kit/redisx"
	"github.com/redisx-go/kit/strategy"
)

type config struct {
	addr, levels, op, ctxKind string
	cpuProfile                string
	d                         time.Duration
	conns, lanes, pool, size  int
	keys, serverPID           int
	costs                     bool
}

func main() {
	var c config
	flag.StringVar(&c.addr, "addr", "127.0.0.1:6379", "server host:port")
	flag.StringVar(&c.levels, "g", "100,1000", "goroutines, comma-separated")
	flag.DurationVar(&c.d, "d", time.Second, "length of each level")
	flag.IntVar(&c.conns, "conns", 0, "Multiplexed{Conns: n} (0: the zero value)")
	flag.IntVar(&c.lanes, "lanes", 0, "Multiplexed{Lanes: n} (0: the zero value)")
	flag.IntVar(&c.pool, "pool", 0, "Pool{Size: n} instead of Multiplexed")
	flag.IntVar(&c.size, "size", 64, "value bytes")
	flag.IntVar(&c.keys, "keys", 1000, "keys, set before the first level")
	flag.StringVar(&c.op, "op", "get", "get, set or setget")
	flag.StringVar(&c.ctxKind, "ctx", "background", "the calls' context: background (cannot end), cancel (can be cancelled, as the harness's), or timeout (a 1 s deadline per call)")
	flag.BoolVar(&c.costs, "costs", false, "print the client's CPU µs and context switches per operation at each level (cpu_g=N, cs_g=N), the mean write batch and the lanes open (batch_g=N, lanes_g=N), and the server's CPU µs (srv_g=N) with -server-pid")
	flag.IntVar(&c.serverPID, "server-pid", 0, "the server's process id, for -costs")
	flag.StringVar(&c.cpuProfile, "cpuprofile", "", "write a CPU profile of the levels to this file")
	flag.Parse()
	if err := run(c); err != nil {
		fmt.Fprintln(os.Stderr, "getloop:", err)
		os.Exit(1)
	}
}

func run(cfg config) error {
	if cfg.op != "get" && cfg.op != "set" && cfg.op != "setget" {
		return fmt.Errorf("-op %q: want get, set or setget", cfg.op)
	}
	if cfg.ctxKind != "background" && cfg.ctxKind != "cancel" && cfg.ctxKind != "timeout" {
		return fmt.Errorf("-ctx %q: want background, cancel or timeout", cfg.ctxKind)
	}
	var s strategy.Strategy = strategy.Multiplexed{Conns: cfg.conns, Lanes: cfg.lanes}
	if cfg.pool > 0 {
		s = strategy.Pool{Size: cfg.pool}
	}
	ctx := context.Background()
	c, err := redisx.New(ctx, redisx.Options{Addrs: []string{cfg.addr}, Strategy: s})
	if err != nil {
		return err
	}
	defer c.Close()
	v := make([]byte, cfg.size)
	keys := make([]string, max(cfg.keys, 1))
	for i := range keys {
		keys[i] = "getloop:" + strconv.Itoa(i)
		if err := c.Set(ctx, keys[i], v, 0); err != nil {
			return err
		}
	}
	if cfg.cpuProfile != "" {
		f, err := os.Create(cfg.cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	for _, f := range strings.Split(cfg.levels, ",") {
		g, err := strconv.Atoi(f)
		if err != nil || g < 1 {
			return fmt.Errorf("-g %q: want positive integers", cfg.levels)
		}
		before, sb := costsNow(cfg.serverPID), c.Stats()
		ops, elapsed, err := level(ctx, c, g, cfg.d, keys, v, cfg.op, cfg.ctxKind)
		if err != nil {
			return err
		}
		after, sa := costsNow(cfg.serverPID), c.Stats()
		fmt.Printf("g=%d %.0f\n", g, float64(ops)/elapsed.Seconds())
		if cfg.costs && ops > 0 {
			n := float64(ops)
			fmt.Printf("cpu_g=%d %.2f\ncs_g=%d %.3f\n", g, float64(after.cpu-before.cpu)/1e3/n, g, float64(after.switches-before.switches)/n)
			if f := sa.Flushes - sb.Flushes; f > 0 {
				fmt.Printf("batch_g=%d %.1f\nlanes_g=%d %d\n", g, float64(sa.Commands-sb.Commands)/float64(f), g, sa.Lanes)
			}
			if cfg.serverPID > 0 {
				fmt.Printf("srv_g=%d %.2f\n", g, float64(after.server-before.server)/1e3/n)
			}
		}
	}
	return nil
}

// costs are the process's CPU time and context switches, and the
// server's CPU time, so far (ns).
type costs struct{ cpu, switches, server int64 }

func costsNow(serverPID int) costs {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	c := costs{
		cpu:      ru.Utime.Nano() + ru.Stime.Nano(),
		switches: ru.Nvcsw + ru.Nivcsw,
	}
	if serverPID > 0 {
		// utime and stime, fields 14 and 15 of /proc/PID/stat, in clock
		// ticks (USER_HZ, 100 on Linux).
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", serverPID)); err == nil {
			s := string(b)
			if i := strings.LastIndexByte(s, ')'); i >= 0 {
				f := strings.Fields(s[i+1:])
				if len(f) > 12 {
					u, _ := strconv.ParseInt(f[11], 10, 64)
					st, _ := strconv.ParseInt(f[12], 10, 64)
					c.server = (u + st) * int64(10*time.Millisecond)
				}
			}
		}
	}
	return c
}

// level runs g goroutines for d and returns their operations and the time
// they took.
func level(ctx context.Context, c *redisx.Client, g int, d time.Duration, keys []string, v []byte, op, ctxKind string) (int64, time.Duration, error) {
	if ctxKind == "cancel" {
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
	}
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
				cctx, cancel := ctx, context.CancelFunc(nil)
				if ctxKind == "timeout" {
					cctx, cancel = context.WithTimeout(ctx, time.Second)
				}
				var err error
				switch op {
				case "get":
					_, err = c.Get(cctx, k)
				case "set":
					err = c.Set(cctx, k, v, 0)
				default:
					if err = c.Set(cctx, k, v, 0); err == nil {
						_, err = c.Get(cctx, k)
					}
				}
				if cancel != nil {
					cancel()
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
		return 0, 0, err
	}
	return total.Load(), time.Since(start), nil
}
