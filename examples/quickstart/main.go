// Command quickstart shows the cache API on one Redis server:
// Set, Get, MGet, GetOrLoad and Stats.
//
//	go run ./examples/quickstart -addr 127.0.0.1:6379 -strategy pool
//
// Without -addr it starts its own redis-server on a free loopback port
// (through redisxtest) and stops it at the end.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"time"

	"github.com/redisx-go/kit/redisx"
	"github.com/redisx-go/kit/redisxtest"
	"github.com/redisx-go/kit/strategy"
)

func main() {
	addr := flag.String("addr", "", "Redis server `host:port`; empty: start a redis-server on a free loopback port")
	kind := flag.String("strategy", "multiplexed", "client strategy: multiplexed or pool")
	flag.Parse()

	var s strategy.Strategy
	switch *kind {
	case "multiplexed":
		s = strategy.Multiplexed{}
	case "pool":
		s = strategy.Pool{Size: 8}
	default:
		log.Fatalf("-strategy %q: want multiplexed or pool", *kind)
	}

	if err := connectAndRun(*addr, s); err != nil {
		log.Fatal(err)
	}
}

func connectAndRun(addr string, s strategy.Strategy) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if addr == "" {
		srv, err := redisxtest.NewServer(ctx, redisxtest.Options{})
		if err != nil {
			return err
		}
		defer srv.Close()
		addr = srv.Addr()
		fmt.Println("started redis-server on", addr)
	}
	c, err := redisx.New(ctx, redisx.Options{Addrs: []string{addr}, Strategy: s})
	if err != nil {
		return err
	}
	defer c.Close()
	return run(ctx, c)
}

func run(ctx context.Context, c *redisx.Client) error {
	const prefix = "redisx-example:"
	if err := c.Set(ctx, prefix+"greeting", []byte("hello"), time.Minute); err != nil {
		return err
	}
	v, err := c.Get(ctx, prefix+"greeting")
	if err != nil {
		return err
	}
	fmt.Printf("get greeting: %s\n", v)

	if _, err := c.Del(ctx, prefix+"missing", prefix+"user:42"); err != nil {
		return err
	}
	_, err = c.Get(ctx, prefix+"missing")
	fmt.Printf("get missing: not found = %t\n", errors.Is(err, redisx.ErrNotFound))

	keys := []string{prefix + "greeting", prefix + "missing"}
	vs, err := c.MGet(ctx, keys...)
	if err != nil {
		return err
	}
	for i, v := range vs {
		if v == nil {
			fmt.Printf("mget %s: missing\n", keys[i])
		} else {
			fmt.Printf("mget %s: %s\n", keys[i], v)
		}
	}

	load := func(ctx context.Context) ([]byte, error) {
		fmt.Println("loading user:42 from the source of truth")
		return []byte(`{"id":42,"name":"Ada"}`), nil
	}
	for range 2 { // the second call is a hit: the loader does not run
		v, err := c.GetOrLoad(ctx, prefix+"user:42", time.Minute, load)
		if err != nil {
			return err
		}
		fmt.Printf("getorload user:42: %s\n", v)
	}

	st := c.Stats()
	fmt.Printf("stats: strategy=%s conns=%d dials=%d loads=%d shared=%d load_errors=%d\n",
		st.Strategy, st.Conns, st.Dials, st.Loads, st.SharedLoads, st.LoadErrors)
	return nil
}
