package benchmarks_test

import (
	"context"
	"fmt"
	"log"
	"strings"
	"time"

	"github.com/redisx-go/kit/benchmarks"
	"github.com/redisx-go/kit/benchmarks/target"
	"github.com/redisx-go/kit/redisx"
	"github.com/redisx-go/kit/strategy"
)

// ExampleRun measures a target and a workload of your own: any strategy
// value (or any Open function) is a target, and any operation over a
// Client is a workload. Here the servers are the embedded ones; set
// Servers.Standalone (or Cluster) to measure yours.
func ExampleRun() {
	ctx := context.Background()
	emb, err := benchmarks.StartEmbedded(ctx, true, false, false)
	if err != nil {
		log.Fatal(err)
	}
	defer emb.Stop()

	p := benchmarks.DefaultPlan()
	p.Levels = []int{1, 8}
	p.Duration, p.Warmup = 50*time.Millisecond, 10*time.Millisecond
	p.Targets = nil
	p.AddTarget(target.StrategyTarget("multiplexed", strategy.Multiplexed{}))
	p.AddTarget(target.StrategyTarget("pool-8", strategy.Pool{Size: 8}))

	// Keys live under KeyPrefix: the harness deletes them at the end.
	sessions := make([]string, 100)
	for i := range sessions {
		sessions[i] = fmt.Sprintf("%ssession:%d", benchmarks.KeyPrefix, i)
	}
	p.Workloads = []benchmarks.Workload{{
		Name:        "session-read",
		Description: "GET of one of 100 sessions of 1 KiB",
		Setup: func(ctx context.Context, c *redisx.Client) error {
			for _, k := range sessions {
				if err := c.Set(ctx, k, make([]byte, 1024), time.Hour); err != nil {
					return err
				}
			}
			return nil
		},
		Op: func(c benchmarks.Client, workers int) benchmarks.Op {
			return func(ctx context.Context, worker, i int) error {
				_, err := c.Get(ctx, sessions[(worker*31+i)%len(sessions)])
				return err
			}
		},
	}}

	rep, err := benchmarks.Run(ctx, p, emb.Servers, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(rep.Cells), "cells")
	for _, r := range rep.Recommendations {
		// r.Confidence is significant (r.Strategy won), equivalent
		// (r.Strategy is within 5% of the best, with the fewest
		// connections) or undecided (r.Strategy is empty, r.Contenders
		// could not be told apart). r.URL and r.Go configure r.Strategy.
		named := r.Strategy == "" || strings.HasPrefix(r.URL, "redis://"+emb.Servers.Standalone)
		fmt.Println(r.Workload, r.Concurrency, named)
	}
	// Output:
	// 4 cells
	// session-read 1 true
	// session-read 8 true
}
