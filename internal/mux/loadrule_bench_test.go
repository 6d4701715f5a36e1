package mux

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redisx-go/kit/internal/launcher"
)

// BenchmarkMuxLoadRule measures the load rule (see gathers) side by
// side with the same node without it (its writers always gather), in one
// process against one server: each iteration is a round of GETs from the
// given goroutines for 100 ms on a node with the rule and for 100 ms on
// one without, in alternating order, and the median of the rounds'
// ratios is reported as with/without (GET/s). The server is pinned to
// the last CPU, as the harness pins its own (when taskset exists). On a
// shared machine, run many rounds: -benchtime 24x. It runs with the
// default lanes and with one (Lanes: 1). The rule decides whether a
// lane's writer gathers batches (see gathers); without it, it always
// does.
func BenchmarkMuxLoadRule(b *testing.B) {
	srv := launcher.Standalone(b, launcher.Options{})
	ctx := context.Background()
	if ok, note := launcher.PinLast(ctx, srv); !ok {
		b.Logf("server not pinned: %s", note)
	}
	for _, lanes := range []int{0, 1} {
		with := openMuxNode(b, srv.Addr(), Options{Lanes: lanes})
		without := openMuxNode(b, srv.Addr(), Options{Lanes: lanes})
		without.gatherAbove = -1
		if err := with.Set(ctx, "loadrule:k", make([]byte, 64), time.Hour); err != nil {
			b.Fatal(err)
		}
		loadRuleRounds(b, fmt.Sprintf("lanes=%d", lanes), with, without)
	}
}

// loadRuleRounds runs BenchmarkMuxLoadRule's rounds on with and without.
func loadRuleRounds(b *testing.B, name string, with, without *Node) {
	for _, g := range []int{1, 4, 10, 20, 32, 50, 100, 1000} {
		b.Run(fmt.Sprintf("%s/goroutines=%d", name, g), func(b *testing.B) {
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
