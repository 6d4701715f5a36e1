package strategy_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"sync"
	"time"

	redigo "github.com/gomodule/redigo/redis"
	"github.com/redisx-go/kit/redisx"
	"github.com/redisx-go/kit/redisxtest"
	"github.com/redisx-go/kit/strategy"
)

// Each example starts a redis-server, or a Redis Cluster, of its own with
// redisxtest, so that it runs and its output is checked; a program of
// yours names its servers in Addrs instead.

// All goroutines share the same few connections; whatever they queue while
// a write is in progress leaves in the next one.
func ExampleMultiplexed() {
	ctx := context.Background()
	srv, err := redisxtest.NewServer(ctx, redisxtest.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()

	c, err := redisx.New(ctx, redisx.Options{
		Addrs: []string{srv.Addr()},
		// Two shared connections; a key always uses the same one, so the
		// commands of one key stay in order.
		Strategy: strategy.Multiplexed{Conns: 2},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	before := c.Stats() // New's PING counts too
	var wg sync.WaitGroup
	for i := range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := fmt.Sprintf("counter:%d", i%10)
			if err := c.Set(ctx, key, []byte("1"), time.Minute); err != nil {
				log.Print(err)
				return
			}
			if _, err := c.Get(ctx, key); err != nil {
				log.Print(err)
			}
		}()
	}
	wg.Wait()

	// The writes that carried them (st.Flushes - before.Flushes) vary
	// from run to run: the more goroutines queue at once, the fewer.
	st := c.Stats()
	fmt.Printf("%d commands over %d connections\n", st.Commands-before.Commands, st.Conns)
	// Output: 200 commands over 2 connections
}

// A pool lends each call a connection of its own: the model to use for long
// blocking commands, which would otherwise hold a shared connection.
func ExamplePool() {
	ctx := context.Background()
	srv, err := redisxtest.NewServer(ctx, redisxtest.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()

	c, err := redisx.New(ctx, redisx.Options{
		Addrs: []string{srv.Addr()},
		Strategy: strategy.Pool{
			Size:        32,              // at most 32 connections; further callers wait
			MinIdle:     4,               // kept open and ready
			MaxIdleTime: 5 * time.Minute, // idle longer: closed
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	if _, err := c.Do(ctx, "RPUSH", "jobs", "resize:42"); err != nil {
		log.Fatal(err)
	}
	for range 2 {
		// BLPOP waits up to 100 ms on its own connection, bounded by the
		// context.
		ctx2, cancel := context.WithTimeout(ctx, 2*time.Second)
		reply, err := c.Do(ctx2, "BLPOP", "jobs", 0.1)
		cancel()
		switch {
		case err != nil:
			log.Fatal(err)
		case reply == nil:
			fmt.Println("no job within 100 ms")
		default:
			fmt.Printf("job: %q\n", reply) // the list's name and the job
		}
	}

	// st.Idle and st.AcquireWait vary from run to run: MinIdle's
	// connections are opened in the background.
	st := c.Stats()
	fmt.Printf("in use %d, bound %d\n", st.InUse, st.MaxConns)
	// Output:
	// job: ["jobs" "resize:42"]
	// no job within 100 ms
	// in use 0, bound 32
}

// On a Redis Cluster, SlotGrouped sends a multi-key call as one pipelined
// round trip per master, all masters at once, instead of one command per
// slot in sequence.
func ExampleSlotGrouped() {
	ctx := context.Background()
	cl, err := redisxtest.NewCluster(ctx, redisxtest.ClusterOptions{}) // 3 masters
	if err != nil {
		log.Fatal(err)
	}
	defer cl.Close()

	c, err := redisx.New(ctx, redisx.Options{
		Addrs: cl.Addrs(), // yours: "10.0.0.1:7000", "10.0.0.2:7000", …
		Strategy: strategy.SlotGrouped{
			Transport: strategy.Multiplexed{}, // or strategy.Pool{…}
			MaxBatch:  500,                    // longer slot groups are split
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	kv := make(map[string][]byte)
	keys := make([]string, 0, 100)
	for i := range 100 {
		k := fmt.Sprintf("product:%d", i) // 100 keys, about as many slots
		kv[k] = fmt.Appendf(nil, "price %d", i)
		keys = append(keys, k)
	}
	if err := c.MSet(ctx, kv, 10*time.Minute); err != nil {
		log.Fatal(err)
	}
	vs, err := c.MGet(ctx, keys...) // vs[i] is the value of keys[i]
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s: %s\n", keys[7], vs[7])

	st := c.Stats()
	fmt.Printf("%s over %d masters, %d redirects followed\n", st.Strategy, st.Masters, st.Redirects)
	// Output:
	// product:7: price 7
	// slot-grouped/multiplexed over 3 masters, 0 redirects followed
}

// When a node of a cluster fails, SlotGrouped still returns the values read
// from the other nodes, with one *NodeError per failed node naming the
// keys whose values are missing.
func ExampleNodeError() {
	ctx := context.Background()
	// A cluster of 3 masters without replicas, whose masters keep serving
	// their slots when one of them is down (cluster-require-full-coverage
	// no; with the default, yes, they refuse every key once they have
	// marked it failed).
	cl, err := redisxtest.NewCluster(ctx, redisxtest.ClusterOptions{
		Args: []string{"--cluster-require-full-coverage", "no"},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer cl.Close()

	c, err := redisx.New(ctx, redisx.Options{
		Addrs:    cl.Addrs(),
		Strategy: strategy.SlotGrouped{},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	keys := []string{"user:1", "user:2", "user:3", "user:4"}
	for _, k := range keys {
		if err := c.Set(ctx, k, []byte("data of "+k), time.Minute); err != nil {
			log.Fatal(err)
		}
	}
	// The master of slots 0-5460, which holds user:3, crashes (here it
	// is told to shut down).
	if conn, err := redigo.Dial("tcp", cl.Addrs()[0]); err == nil {
		conn.Do("SHUTDOWN", "NOSAVE") // no reply: the server is gone
		conn.Close()
	}

	vs, err := c.MGet(ctx, keys...)
	var nodeErr *strategy.NodeError
	switch {
	case errors.As(err, &nodeErr):
		// A partial failure: vs holds what the healthy nodes returned;
		// nodeErr.Keys have no value. The error joins one *NodeError per
		// failed node; errors.As finds the first. nodeErr.Node is its
		// address, nodeErr.Err why it failed.
		fmt.Println("keys unavailable:", nodeErr.Keys)
		if errors.Is(err, redisx.ErrConnection) {
			fmt.Println("a node is unreachable; retrying later may help")
		}
	case err != nil:
		log.Fatal(err) // the whole call failed (a cancelled context, say)
	}
	for i, v := range vs {
		if v == nil { // missing, or held by a failed node (in its NodeError)
			fmt.Printf("%s: no value\n", keys[i])
			continue
		}
		fmt.Printf("%s: %s\n", keys[i], v)
	}
	// Output:
	// keys unavailable: [user:3]
	// a node is unreachable; retrying later may help
	// user:1: data of user:1
	// user:2: data of user:2
	// user:3: no value
	// user:4: data of user:4
}
