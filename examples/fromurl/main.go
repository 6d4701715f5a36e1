// Command fromurl builds its client from a redis:// URL, so that the
// server, the credentials and the strategy come from configuration. For
// example:
//
//	go run ./examples/fromurl -url 'redis://127.0.0.1:6379/0?strategy=pool&size=16'
//
// Without -url it starts its own redis-server on a free loopback port
// (through redisxtest) and builds the URL of that server.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"time"

	"github.com/redisx-go/kit/redisx"
	"github.com/redisx-go/kit/redisxtest"
)

func main() {
	if err := run(); err != nil {
		log.Fatal(err) // never repeats the URL, which may hold a password
	}
}

func run() error {
	raw := flag.String("url", "", "Redis `URL`: redis://[[user]:password@]host[:port][/db][?strategy=pool&size=32…]; empty: start a redis-server and use pool strategy on it")
	flag.Parse()

	if *raw == "" {
		srv, err := redisxtest.NewServer(context.Background(), redisxtest.Options{})
		if err != nil {
			return err
		}
		defer srv.Close()
		*raw = "redis://" + srv.Addr() + "/0?strategy=pool&size=16"
		fmt.Println("started redis-server on", srv.Addr())
	}
	o, err := redisx.ParseURL(*raw)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := redisx.New(ctx, o)
	if err != nil {
		return err
	}
	defer c.Close()
	fmt.Printf("connected to %v db %d with %T\n", o.Addrs, o.DB, o.Strategy)

	const prefix = "redisx-example:"
	if err := c.MSet(ctx, map[string][]byte{prefix + "a": []byte("1"), prefix + "b": []byte("2")}, time.Minute); err != nil {
		return err
	}
	if err := c.Set(ctx, prefix+"c", []byte("3"), time.Minute); err != nil {
		return err
	}
	v, err := c.Get(ctx, prefix+"c")
	if err != nil {
		return err
	}
	fmt.Printf("get c: %s\n", v)
	keys := []string{prefix + "a", prefix + "b", prefix + "nope"}
	vs, err := c.MGet(ctx, keys...)
	if err != nil {
		return err
	}
	for i, v := range vs {
		fmt.Printf("mget %s: %q (missing: %t)\n", keys[i], v, v == nil)
	}

	if _, err := c.Del(ctx, prefix+"report"); err != nil {
		return err
	}
	v, err = c.GetOrLoad(ctx, prefix+"report", 30*time.Second, func(ctx context.Context) ([]byte, error) {
		return []byte("generated at " + time.Now().UTC().Format(time.RFC3339)), nil
	})
	if err != nil {
		return err
	}
	fmt.Printf("getorload report: %s\n", v)

	st := c.Stats()
	fmt.Printf("stats: %+v\n", st)
	return nil
}
