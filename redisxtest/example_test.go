package redisxtest_test

import (
	"context"
	"fmt"
	"log"

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
