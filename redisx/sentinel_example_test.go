package redisx_test

import (
	"context"
	"fmt"
	"log"

	"github.com/redisx-go/kit/redisx"
	"github.com/redisx-go/kit/redisxtest"
	"github.com/redisx-go/kit/strategy"
)

// A deployment managed by Redis Sentinel is named by its sentinels and
// the master's name, not by the master's address: the client asks them,
// and follows the master through failovers.
func ExampleOptions_sentinel() {
	ctx := context.Background()
	g, err := redisxtest.NewSentinel(ctx, redisxtest.Options{Replicas: 1, Sentinels: 1})
	if err != nil {
		log.Fatal(err)
	}
	defer g.Close()

	c, err := redisx.New(ctx, redisx.Options{
		Sentinel: &redisx.SentinelOptions{
			Master: g.MasterName(), // "mymaster"
			Addrs:  g.Addrs(),      // "sentinel-1:26379", …: list them all
		},
		Strategy: strategy.Pool{Size: 8},
	})
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
