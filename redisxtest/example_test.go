package redisxtest_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/redisx-go/kit/redisx"
	"github.com/redisx-go/kit/redisxtest"
	"github.com/redisx-go/kit/strategy"
)

// A test starts its own server with redisxtest.Start(t, …); a program
// such as this example uses NewServer and closes it itself.
func ExampleNewServer() {
	ctx := context.Background()
	srv, err := redisxtest.NewServer(ctx, redisxtest.Options{})
	if err != nil {
		log.Fatal(err) // redis-server is not installed, for one
	}
	defer srv.Close()

	o := srv.Options()
	o.Strategy = strategy.Pool{Size: 4}
	c, err := redisx.New(ctx, o)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	if err := c.Set(ctx, "greeting", []byte("hello"), 0); err != nil {
		log.Fatal(err)
	}
	v, err := c.Get(ctx, "greeting")
	fmt.Println(string(v), err)
	// Output: hello <nil>
}

// A program starts its own sentinel group with NewSentinel (a test calls
// StartSentinel(t, …)); the client follows the master through a crash.
func ExampleNewSentinel() {
	ctx := context.Background()
	g, err := redisxtest.NewSentinel(ctx, redisxtest.Options{Replicas: 2, Sentinels: 3})
	if err != nil {
		log.Fatal(err) // redis-server or redis-sentinel is not installed, for one
	}
	defer g.Close()

	c, err := redisx.New(ctx, g.Options()) // Options.Sentinel names the sentinels
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	if err := c.Set(ctx, "greeting", []byte("hello"), 0); err != nil {
		log.Fatal(err)
	}
	// Replication is asynchronous: a write the master acknowledged and
	// then lost in a crash before a replica had it is gone. Loopback
	// replicas have it within a millisecond.
	time.Sleep(100 * time.Millisecond)

	old, err := g.KillMaster()
	if err != nil {
		log.Fatal(err)
	}
	promoted, err := g.WaitFailover(ctx, old)
	if err != nil {
		log.Fatal(err)
	}
	// The client's calls fail with ErrConnection, and are retried, until
	// it has moved to the new master.
	for {
		v, err := c.Get(ctx, "greeting")
		if err == nil {
			fmt.Println(string(v), promoted != old)
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Output: hello true
}
