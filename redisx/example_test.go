package redisx_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"

	"net/http/httptest"
	"slices"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/redisx-go/kit/localcache"
	"github.com/redisx-go/kit/redisx"
	"github.com/redisx-go/kit/redisxtest"
	"github.com/redisx-go/kit/strategy"
)

// Each example starts a redis-server of its own with redisxtest, so that
// it runs and its output is checked; a program of yours names its server
// in Addrs ("cache.internal:6379") instead.

func ExampleNew() {
	ctx := context.Background()
	srv, err := redisxtest.NewServer(ctx, redisxtest.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()

	c, err := redisx.New(ctx, redisx.Options{
		Addrs: []string{srv.Addr()},
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
	// Output: hello
}

func ExampleNew_pool() {
	ctx := context.Background()
	srv, err := redisxtest.NewServer(ctx, redisxtest.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()

	c, err := redisx.New(ctx, redisx.Options{
		Addrs:    []string{srv.Addr()},
		Strategy: strategy.Pool{Size: 32, MinIdle: 4},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	if err := c.Set(ctx, "a", []byte("1"), time.Minute); err != nil {
		log.Fatal(err)
	}
	n, err := c.Del(ctx, "a", "b") // b does not exist
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("removed", n)
	fmt.Println("pool bound:", c.Stats().MaxConns)
	// Output:
	// removed 1
	// pool bound: 32
}

func ExampleClient_GetOrLoad() {
	ctx := context.Background()
	srv, err := redisxtest.NewServer(ctx, redisxtest.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()

	c, err := redisx.New(ctx, redisx.Options{Addrs: []string{srv.Addr()}})
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
	// Output: {"id":42,"name":"Ada"}
}

func ExampleClient_MGet() {
	ctx := context.Background()
	srv, err := redisxtest.NewServer(ctx, redisxtest.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()

	c, err := redisx.New(ctx, redisx.Options{Addrs: []string{srv.Addr()}})
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
	// Output:
	// a: 1
	// b: missing
	// c: 3
}

// A partial result: on a Redis Cluster with SlotGrouped, a node that
// fails costs only its keys. MGet returns the other nodes' values with an
// error joining one *strategy.NodeError per failed node.
func ExampleClient_MGet_partialResult() {
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
	if conn, err := redis.Dial("tcp", cl.Addrs()[0]); err == nil {
		conn.Do("SHUTDOWN", "NOSAVE") // no reply: the server is gone
		conn.Close()
	}

	vs, err := c.MGet(ctx, keys...)
	var nodeErr *strategy.NodeError
	switch {
	case errors.As(err, &nodeErr):
		// Partial: every NodeError names its node (Node) and keys; the
		// elements of those keys are nil, the others are read.
		unavailable := map[string]bool{}
		var joined interface{ Unwrap() []error }
		if errors.As(err, &joined) {
			for _, e := range joined.Unwrap() {
				if errors.As(e, &nodeErr) {
					fmt.Printf("unavailable: %v, connection error: %v\n",
						slices.Sorted(slices.Values(nodeErr.Keys)), errors.Is(nodeErr, redisx.ErrConnection))
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
	// Output:
	// unavailable: [user:3], connection error: true
	// user:1: "data of user:1"
	// user:2: "data of user:2"
	// user:4: "data of user:4"
}

// AppendGet reads into a buffer the caller reuses: on a near-cache hit it
// allocates nothing once the buffer has grown to the value's size.
func ExampleClient_AppendGet() {
	ctx := context.Background()
	srv, err := redisxtest.NewServer(ctx, redisxtest.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()

	c, err := redisx.New(ctx, redisx.Options{
		Addrs:    []string{srv.Addr()},
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
	// Output:
	// dark-mode,beta
	// dark-mode,beta
	// dark-mode,beta
}

// Ping for a health check: it sends one PING and expects PONG.
func ExampleClient_Ping() {
	ctx := context.Background()
	srv, err := redisxtest.NewServer(ctx, redisxtest.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()

	c, err := redisx.New(ctx, redisx.Options{Addrs: []string{srv.Addr()}})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	mux := http.NewServeMux() // or http.HandleFunc, on the default one
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), time.Second)
		defer cancel()
		if err := c.Ping(ctx); err != nil {
			http.Error(w, "redis: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})

	check := func() {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest("GET", "/healthz", nil))
		fmt.Println(rec.Code) // the body of a 503 names the server and the failure
	}
	check()
	srv.Close() // the server goes away
	check()
	// Output:
	// 200
	// 503
}

func ExampleClient_Do() {
	ctx := context.Background()
	srv, err := redisxtest.NewServer(ctx, redisxtest.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()

	c, err := redisx.New(ctx, redisx.Options{Addrs: []string{srv.Addr()}})
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
	// Output: visits: 5
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
	cl, err := redisxtest.NewCluster(ctx, redisxtest.ClusterOptions{}) // 3 masters
	if err != nil {
		log.Fatal(err)
	}
	defer cl.Close()

	c, err := redisx.New(ctx, redisx.Options{
		Addrs:    cl.Addrs(), // yours: "10.0.0.1:7000", "10.0.0.2:7000", …
		Strategy: strategy.SlotGrouped{Transport: strategy.Multiplexed{}},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	if err := c.Set(ctx, "user:2", []byte("Grace"), time.Minute); err != nil {
		log.Fatal(err)
	}
	keys := []string{"user:1", "user:2", "user:3"} // three slots
	vs, err := c.MGet(ctx, keys...)
	var nodeErr *strategy.NodeError
	if errors.As(err, &nodeErr) {
		// One node failed; the values of the others are in vs.
		log.Printf("%d keys unavailable on %s", len(nodeErr.Keys), nodeErr.Node)
	} else if err != nil {
		log.Fatal(err)
	}
	for i, v := range vs {
		if v != nil {
			fmt.Printf("%s: %s\n", keys[i], v)
		}
	}
	fmt.Println(c.Stats().Masters, "masters")
	// Output:
	// user:2: Grace
	// 3 masters
}

// Keys that share a {hash tag} share a slot, so a cluster accepts them in
// one command.
func ExampleSlot() {
	fmt.Println(redisx.Slot("user:{42}:name") == redisx.Slot("user:{42}:email"))
	fmt.Println(redisx.Slot("foo"))
	// Output:
	// true
	// 12182
}
