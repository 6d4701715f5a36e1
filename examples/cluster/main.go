// Command cluster compares a cross-slot MGET on a Redis Cluster through
// strategy.Multiplexed and through strategy.SlotGrouped. It writes keys
// across the slots, then times the same MGET through a plain Multiplexed
// client (one MGET per slot, one after another) and through SlotGrouped
// (one pipeline per master, all masters at once), and prints both clients'
// statistics.
//
// Without -seeds it starts its own 3-master cluster on free loopback ports
// (redis-server and redis-cli must be installed) and stops it on exit:
//
//	go run ./examples/cluster
//	go run ./examples/cluster -seeds 127.0.0.1:7000,127.0.0.1:7001 -keys 100
//
// On an existing cluster it writes, and deletes at the end, only keys under
// redisx-example:cluster:. Ctrl-C (SIGINT) or SIGTERM closes the clients
// and stops the servers it started, then exits with status 130.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/redisx-go/kit/redisx"
	"github.com/redisx-go/kit/redisxtest"
	"github.com/redisx-go/kit/strategy"
)

const (
	prefix = "redisx-example:cluster:"
	rounds = 200 // MGETs timed per client
)

func main() {
	seeds := flag.String("seeds", "", "comma-separated cluster seed nodes, `host:port,...`; empty: start a 3-master cluster on loopback ports")
	nkeys := flag.Int("keys", 50, "number of keys written and read by each MGET")
	flag.Parse()
	if *nkeys < 1 {
		fmt.Fprintln(os.Stderr, "-keys must be at least 1")
		os.Exit(2)
	}
	os.Exit(run(splitSeeds(*seeds), *nkeys))
}

func splitSeeds(s string) []string {
	var seeds []string
	for _, a := range strings.Split(s, ",") {
		if a = strings.TrimSpace(a); a != "" {
			seeds = append(seeds, a)
		}
	}
	return seeds
}

// run returns the exit status. Everything it starts is stopped by its
// deferred calls, which os.Exit in main would skip.
func run(seeds []string, nkeys int) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		stop() // a second Ctrl-C kills the program at once
	}()

	err := demo(ctx, seeds, nkeys)
	switch {
	case ctx.Err() != nil:
		fmt.Println("interrupted: clients closed, started servers stopped")
		return 130
	case err != nil:
		fmt.Fprintln(os.Stderr, "error:", err)
		return 1
	}
	return 0
}

func demo(ctx context.Context, seeds []string, nkeys int) error {
	if len(seeds) == 0 {
		fmt.Println("starting a 3-master Redis Cluster on loopback ports...")
		start := time.Now()
		cl, err := redisxtest.NewCluster(ctx, redisxtest.ClusterOptions{Masters: 3})
		if err != nil {
			return err
		}
		defer func() {
			fmt.Println("stopping the cluster")
			if err := cl.Close(); err != nil {
				fmt.Fprintln(os.Stderr, "stop cluster:", err)
			}
		}()
		seeds = cl.Addrs()
		fmt.Printf("cluster ready in %v: %s\n", time.Since(start).Round(time.Millisecond), strings.Join(seeds, ", "))
	}

	plain, err := redisx.New(ctx, redisx.Options{Addrs: seeds, Strategy: strategy.Multiplexed{}})
	if err != nil {
		return fmt.Errorf("connect (multiplexed): %w", err)
	}
	defer plain.Close()
	grouped, err := redisx.New(ctx, redisx.Options{Addrs: seeds, Strategy: strategy.SlotGrouped{}})
	if err != nil {
		return fmt.Errorf("connect (slot-grouped): %w", err)
	}
	defer grouped.Close()
	fmt.Printf("connected two clients to %d masters: Multiplexed{} and SlotGrouped{}\n", grouped.Stats().Masters)

	keys := make([]string, nkeys)
	kv := make(map[string][]byte, nkeys)
	slots := make(map[int]bool)
	for i := range keys {
		keys[i] = fmt.Sprintf("%s%d", prefix, i)
		kv[keys[i]] = fmt.Appendf(nil, "value-%d", i)
		slots[redisx.Slot(keys[i])] = true
	}
	start := time.Now()
	if err := grouped.MSet(ctx, kv, 10*time.Minute); err != nil {
		return fmt.Errorf("write keys: %w", err)
	}
	fmt.Printf("wrote %d keys over %d slots with one SlotGrouped MSET in %v\n",
		nkeys, len(slots), time.Since(start).Round(time.Microsecond))
	defer func() {
		// A fresh context: the keys are removed even after an interrupt.
		dctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if n, err := grouped.Del(dctx, keys...); err != nil {
			fmt.Fprintln(os.Stderr, "delete keys:", err)
		} else {
			fmt.Printf("deleted %d keys\n", n)
		}
	}()

	clients := []struct {
		name string
		c    *redisx.Client
	}{
		{"Multiplexed{} (one MGET per slot, in sequence)", plain},
		{"SlotGrouped{} (one pipeline per master, in parallel)", grouped},
	}
	for _, cl := range clients {
		if err := check(ctx, cl.c, keys, kv); err != nil {
			return fmt.Errorf("%s: %w", cl.name, err)
		}
	}
	fmt.Printf("both clients read back all %d values\n", nkeys)

	fmt.Printf("timing %d MGETs of %d keys with each client, one goroutine:\n", rounds, nkeys)
	rates := make([]float64, len(clients))
	for i, cl := range clients {
		start := time.Now()
		for range rounds {
			if _, err := cl.c.MGet(ctx, keys...); err != nil {
				return fmt.Errorf("%s: mget: %w", cl.name, err)
			}
		}
		el := time.Since(start)
		rates[i] = rounds / el.Seconds()
		fmt.Printf("  %-52s %8.0f MGET/s  (%v per MGET)\n", cl.name, rates[i],
			(el / rounds).Round(time.Microsecond))
	}
	fmt.Printf("  SlotGrouped: %.1fx the MGET/s of the plain client\n", rates[1]/rates[0])

	fmt.Println("stats:")
	for _, cl := range clients {
		st := cl.c.Stats()
		fmt.Printf("  %-28s masters=%d nodes=%d redirects=%d flushes=%d commands=%d conns=%d\n",
			st.Strategy, st.Masters, st.Nodes, st.Redirects, st.Flushes, st.Commands, st.Conns)
	}
	return nil
}

// check reads keys with c and compares every value with want.
func check(ctx context.Context, c *redisx.Client, keys []string, want map[string][]byte) error {
	vs, err := c.MGet(ctx, keys...)
	if err != nil {
		return err
	}
	for i, v := range vs {
		if string(v) != string(want[keys[i]]) {
			return fmt.Errorf("read %s: got %q, want %q", keys[i], v, want[keys[i]])
		}
	}
	return nil
}
