package mux

import (
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redisx-go/kit/internal/launcher"
)

// BenchmarkMuxLoadRule measures the load rule (see spreads and gathers)
// side by side with the same node's use of its lanes without it, in one
// process against one server: each iteration is a round of GETs from the
// given goroutines for 100 ms on a node with the rule and for 100 ms on
// one without, in alternating order, and the median of the rounds'
// ratios is reported as with/without (GET/s). The server is pinned to
// the last CPU, as the harness pins its own (when taskset exists). On a
// shared machine, run many rounds: -benchtime 24x.
func BenchmarkMuxLoadRule(b *testing.B) {
	srv := launcher.Standalone(b, launcher.Options{})
	pinLast(b, srv)
	with := openMuxNode(b, srv.Addr(), Options{})
	without := openMuxNode(b, srv.Addr(), Options{})
	without.noLoadRule = true
	ctx := context.Background()
	if err := with.Set(ctx, "loadrule:k", make([]byte, 64), time.Hour); err != nil {
		b.Fatal(err)
	}
	for _, g := range []int{1, 4, 10, 20, 32, 50, 100, 1000} {
		b.Run(fmt.Sprintf("goroutines=%d", g), func(b *testing.B) {
			var ratios []float64
			for r := range b.N {
				first, second := with, without
				if r%2 == 1 {
					first, second = without, with
				}
				x, y := getRate(b, first, g), getRate(b, second, g)
				if r%2 == 1 {
					x, y = y, x
				}
				ratios = append(ratios, x/y)
			}
			slices.Sort(ratios)
			b.ReportMetric(ratios[len(ratios)/2], "with/without")
			b.ReportMetric(ratios[0], "min")
			b.ReportMetric(ratios[len(ratios)-1], "max")
		})
	}
}

// getRate returns the GETs per second of goroutines goroutines on n over
// 100 ms, after 25 ms of warm-up.
func getRate(b *testing.B, n *Node, goroutines int) float64 {
	var done atomic.Int64
	var stop atomic.Bool
	var wg sync.WaitGroup
	ctx := context.Background()
	for range goroutines {
		wg.Go(func() {
			for !stop.Load() {
				if _, err := n.Get(ctx, "loadrule:k"); err != nil {
					b.Error(err)
					return
				}
				done.Add(1)
			}
		})
	}
	time.Sleep(25 * time.Millisecond)
	start, t0 := done.Load(), time.Now()
	time.Sleep(100 * time.Millisecond)
	end, elapsed := done.Load(), time.Since(t0)
	stop.Store(true)
	wg.Wait()
	return float64(end-start) / elapsed.Seconds()
}

// pinLast moves srv's process, all its threads, to the last CPU with
// taskset, so that the client does not compete with it for the others;
// it only logs when it cannot.
func pinLast(b *testing.B, srv *launcher.Server) {
	info, err := srv.CLI(context.Background(), "INFO", "server")
	pid := regexp.MustCompile(`process_id:(\d+)`).FindStringSubmatch(info)
	if err != nil || pid == nil || runtime.NumCPU() < 2 {
		b.Logf("server not pinned (%d CPUs, INFO: %v)", runtime.NumCPU(), err)
		return
	}
	cpu := strconv.Itoa(runtime.NumCPU() - 1)
	if out, err := exec.Command("taskset", "-a", "-p", "-c", cpu, pid[1]).CombinedOutput(); err != nil {
		b.Logf("server not pinned: taskset: %v: %s", err, out)
	}
}
