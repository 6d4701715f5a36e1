package goredis_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redisx-go/kit/redisx"
	"github.com/redisx-go/kit/redisxtest"
	"github.com/redisx-go/kit/strategy/goredis"
)

// A service that already has a go-redis client adopts redisx over it: the
// client's pool settings, hooks and instrumentation keep working.
func ExampleStrategy() {
	ctx := context.Background()
	srv, err := redisxtest.NewServer(ctx, redisxtest.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()

	rdb := redis.NewClient(&redis.Options{
		Addr:     srv.Addr(),
		PoolSize: 20,
		// Let each call's context deadline bound it, as with the other
		// strategies.
		ContextTimeoutEnabled: true,
	})
	defer rdb.Close() // the client's owner closes it (unless CloseClient is set)

	c, err := redisx.New(ctx, redisx.Options{
		Strategy: goredis.Strategy{Client: rdb},
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

	// Do returns redigo's reply types, as with every strategy, converted
	// from go-redis's: a bulk string is a []byte.
	v, err := c.Do(ctx, "GET", "session:9")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%T %s\n", v, v)
	// Output:
	// go-redis reads alice
	// []uint8 alice
}
