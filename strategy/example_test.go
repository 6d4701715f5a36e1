package strategy_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redisx-go/kit/redisx"
	"github.com/redisx-go/kit/strategy"
)

// The examples connect to 127.0.0.1:6379, or to a Redis Cluster whose seed
// nodes are 127.0.0.1:7000-7002, and have no Output line: they are
// compiled, not run.

// All goroutines share the same few connections; whatever they queue while
// a write is in progress leaves in the next one.
func ExampleMultiplexed() {
	ctx := context.Background()
	c, err := redisx.New(ctx, redisx.Options{
		Addrs: []string{"127.0.0.1:6379"},
		// Two shared connections; a key always uses the same one, so the
		// commands of one key stay in order.
		Strategy: strategy.Multiplexed{Conns: 2},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

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

	st := c.Stats()
	fmt.Printf("%d commands in %d writes over %d connections\n", st.Commands, st.Flushes, st.Conns)
}

// A pool lends each call a connection of its own: the model to use for long
// blocking commands, which would otherwise hold a shared connection.
func ExamplePool() {
	ctx := context.Background()
	c, err := redisx.New(ctx, redisx.Options{
		Addrs: []string{"127.0.0.1:6379"},
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

	// BLPOP waits up to 1 s on its own connection, bounded by the context.
	ctx2, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	reply, err := c.Do(ctx2, "BLPOP", "jobs", 1)
	switch {
	case err != nil:
		log.Fatal(err)
	case reply == nil:
		fmt.Println("no job within a second")
	default:
		fmt.Printf("job: %q\n", reply)
	}

	st := c.Stats()
	fmt.Printf("in use %d, idle %d, bound %d, waited %v for a connection\n",
		st.InUse, st.Idle, st.MaxConns, st.AcquireWait)
}

// On a Redis Cluster, SlotGrouped sends a multi-key call as one pipelined
// round trip per master, all masters at once, instead of one command per
// slot in sequence.
func ExampleSlotGrouped() {
	ctx := context.Background()
	c, err := redisx.New(ctx, redisx.Options{
		Addrs: []string{"127.0.0.1:7000", "127.0.0.1:7001", "127.0.0.1:7002"},
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
}

// A service that already has a go-redis client adopts redisx over it: the
// client's pool settings, hooks and instrumentation keep working.
func ExampleGoRedis() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{
		Addr:     "127.0.0.1:6379",
		PoolSize: 20,
		// Let each call's context deadline bound it, as with the other
		// strategies.
		ContextTimeoutEnabled: true,
	})
	defer rdb.Close() // the client's owner closes it (unless CloseClient is set)

	c, err := redisx.New(ctx, redisx.Options{
		Strategy: strategy.GoRedis{Client: rdb},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close() // leaves rdb open

	if err := c.Set(ctx, "session:9", []byte("alice"), 30*time.Minute); err != nil {
		log.Fatal(err)
	}
	// Both APIs see the same data, over the same connections.
	name, err := rdb.Get(ctx, "session:9").Result()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("go-redis reads", name)

	// With GoRedis, Do returns go-redis's reply types: a string here.
	v, err := c.Do(ctx, "GET", "session:9")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%T %v\n", v, v)
}

// When a node of a cluster fails, SlotGrouped still returns the values read
// from the other nodes, with one *NodeError per failed node naming the
// keys whose values are missing.
func ExampleNodeError() {
	ctx := context.Background()
	c, err := redisx.New(ctx, redisx.Options{
		Addrs:    []string{"127.0.0.1:7000", "127.0.0.1:7001", "127.0.0.1:7002"},
		Strategy: strategy.SlotGrouped{},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	keys := []string{"user:1", "user:2", "user:3", "user:4"}
	vs, err := c.MGet(ctx, keys...)
	var nodeErr *strategy.NodeError
	switch {
	case errors.As(err, &nodeErr):
		// A partial failure: vs holds what the healthy nodes returned;
		// nodeErr.Keys have no value. The error joins one *NodeError per
		// failed node; errors.As finds the first.
		fmt.Printf("%d keys unavailable on %s: %v\n", len(nodeErr.Keys), nodeErr.Node, nodeErr.Err)
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
}
