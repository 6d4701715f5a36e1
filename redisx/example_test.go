package redisx_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/redisx-go/kit/localcache"
	"github.com/redisx-go/kit/redisx"
	"github.com/redisx-go/kit/strategy"
)

// The examples that need a server connect to 127.0.0.1:6379 and have no
// Output line: they are compiled, not run.

func ExampleNew() {
	ctx := context.Background()
	c, err := redisx.New(ctx, redisx.Options{
		Addrs: []string{"127.0.0.1:6379"},
		// Zero Strategy: strategy.Multiplexed{}, one auto-pipelined
		// connection shared by every goroutine.
	})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	if err := c.Set(ctx, "greeting", []byte("hello"), time.Minute); err != nil {
		log.Fatal(err)
	}
	v, err := c.Get(ctx, "greeting")
	switch {
	case errors.Is(err, redisx.ErrNotFound):
		fmt.Println("no greeting")
	case err != nil:
		log.Fatal(err)
	default:
		fmt.Printf("%s\n", v)
	}
}

func ExampleNew_pool() {
	ctx := context.Background()
	c, err := redisx.New(ctx, redisx.Options{
		Addrs:    []string{"127.0.0.1:6379"},
		Strategy: strategy.Pool{Size: 32, MinIdle: 4},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	n, err := c.Del(ctx, "a", "b")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("removed", n)
	fmt.Println("pool bound:", c.Stats().MaxConns)
}

func ExampleClient_GetOrLoad() {
	ctx := context.Background()
	c, err := redisx.New(ctx, redisx.Options{Addrs: []string{"127.0.0.1:6379"}})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	// On a miss, concurrent callers of the same key share one call of the
	// loader; its result is stored for ten minutes.
	v, err := c.GetOrLoad(ctx, "user:42", 10*time.Minute, func(ctx context.Context) ([]byte, error) {
		return []byte(`{"id":42,"name":"Ada"}`), nil // from the database, say
	})
	if errors.Is(err, redisx.ErrLoad) {
		log.Fatal("the source of truth failed: ", err)
	}
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s\n", v)
}

func ExampleClient_MGet() {
	ctx := context.Background()
	c, err := redisx.New(ctx, redisx.Options{Addrs: []string{"127.0.0.1:6379"}})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	if err := c.MSet(ctx, map[string][]byte{"a": []byte("1"), "c": []byte("3")}, time.Minute); err != nil {
		log.Fatal(err)
	}
	keys := []string{"a", "b", "c"}
	vs, err := c.MGet(ctx, keys...)
	if err != nil {
		log.Fatal(err)
	}
	for i, v := range vs {
		if v == nil {
			fmt.Printf("%s: missing\n", keys[i])
			continue
		}
		fmt.Printf("%s: %s\n", keys[i], v)
	}
}

// A partial result: on a Redis Cluster with SlotGrouped, a node that
// fails costs only its keys. MGet returns the other nodes' values with an
// error joining one *strategy.NodeError per failed node.
func ExampleClient_MGet_partialResult() {
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
		// Partial: every NodeError names its node and keys; the
		// elements of those keys are nil, the others are read.
		unavailable := map[string]bool{}
		var joined interface{ Unwrap() []error }
		if errors.As(err, &joined) {
			for _, e := range joined.Unwrap() {
				if errors.As(e, &nodeErr) {
					log.Printf("%d keys unavailable on %s: %v", len(nodeErr.Keys), nodeErr.Node, nodeErr.Err)
					for _, k := range nodeErr.Keys {
						unavailable[k] = true
					}
				}
			}
		}
		for i, v := range vs {
			if !unavailable[keys[i]] {
				fmt.Printf("%s: %q\n", keys[i], v) // nil: missing
			}
		}
	case err != nil:
		log.Fatal(err) // nothing was read
	default:
		fmt.Println(len(vs), "values")
	}
}

// AppendGet reads into a buffer the caller reuses: on a near-cache hit it
// allocates nothing once the buffer has grown to the value's size.
func ExampleClient_AppendGet() {
	ctx := context.Background()
	c, err := redisx.New(ctx, redisx.Options{
		Addrs:    []string{"127.0.0.1:6379"},
		Strategy: localcache.Near{MaxBytes: 64 << 20},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	if err := c.Set(ctx, "config:flags", []byte("dark-mode,beta"), time.Minute); err != nil {
		log.Fatal(err)
	}
	var buf []byte // the caller's, reused by every read
	for range 3 {
		buf, err = c.AppendGet(ctx, buf[:0], "config:flags")
		if errors.Is(err, redisx.ErrNotFound) {
			fmt.Println("no flags")
			continue
		}
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s\n", buf) // buf may be modified: the client keeps no reference
	}
}

// Ping for a health check: it sends one PING and expects PONG.
func ExampleClient_Ping() {
	ctx := context.Background()
	c, err := redisx.New(ctx, redisx.Options{Addrs: []string{"127.0.0.1:6379"}})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	http.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), time.Second)
		defer cancel()
		if err := c.Ping(ctx); err != nil {
			http.Error(w, "redis: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
}

func ExampleClient_Do() {
	ctx := context.Background()
	c, err := redisx.New(ctx, redisx.Options{Addrs: []string{"127.0.0.1:6379"}})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	// Do runs any command; redigo's helpers convert its reply.
	n, err := redis.Int64(c.Do(ctx, "INCRBY", "visits", 5))
	if errors.Is(err, redisx.ErrUnsupported) {
		log.Fatal("this strategy cannot run arbitrary commands")
	}
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("visits:", n)
}

func ExampleParseURL() {
	o, err := redisx.ParseURL("redis://app:s3cret@cache.internal:6380/2?strategy=pool&size=32&dial_timeout=2s")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(o.Addrs, o.DB, o.Username, o.DialTimeout)
	fmt.Printf("%T %+v\n", o.Strategy, o.Strategy)

	_, err = redisx.ParseURL("redis://:s3cret@cache.internal?size=32")
	fmt.Println(errors.Is(err, redisx.ErrInvalidArgument), err)
	// Output:
	// [cache.internal:6380] 2 app 2s
	// strategy.Pool {Size:32 MinIdle:0 MaxIdleTime:0s MaxLifetime:0s HealthCheckPeriod:0s}
	// true redisx: invalid argument: size= in URL applies to strategy=pool, not multiplexed
}

// On a Redis Cluster, list a few seed nodes: cluster mode is detected and
// keys are routed by slot. SlotGrouped sends a cross-slot MGet as one
// pipelined round trip per node, all nodes in parallel.
func ExampleNew_cluster() {
	ctx := context.Background()
	c, err := redisx.New(ctx, redisx.Options{
		Addrs:    []string{"127.0.0.1:7000", "127.0.0.1:7001", "127.0.0.1:7002"},
		Strategy: strategy.SlotGrouped{Transport: strategy.Multiplexed{}},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	vs, err := c.MGet(ctx, "user:1", "user:2", "user:3")
	var nodeErr *strategy.NodeError
	if errors.As(err, &nodeErr) {
		// One node failed; the values of the others are in vs.
		log.Printf("%d keys unavailable on %s", len(nodeErr.Keys), nodeErr.Node)
	} else if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(vs), c.Stats().Masters)
}
