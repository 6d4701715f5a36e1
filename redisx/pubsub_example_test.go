package redisx_test

import (
	"context"
	"fmt"
	"log"

	"github.com/redisx-go/kit/redisx"
	"github.com/redisx-go/kit/redisxtest"
)

// A subscription receives every message published after Subscribe
// returns. A Reconnected marker (not shown: the server stays up) would
// say that its connection was replaced and messages may have been
// missed meanwhile.
func ExampleClient_Subscribe() {
	ctx := context.Background()
	srv, err := redisxtest.NewServer(ctx, redisxtest.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	c, err := redisx.New(ctx, srv.Options())
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	sub, err := c.Subscribe(ctx, "orders")
	if err != nil {
		log.Fatal(err)
	}
	defer sub.Close()
	if err := sub.PSubscribe(ctx, "alerts:*"); err != nil { // more while it runs
		log.Fatal(err)
	}

	n, err := c.Publish(ctx, "orders", []byte("order 1 placed"))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("subscribers:", n)
	c.Publish(ctx, "alerts:disk", []byte("90% full"))

	for range 2 {
		m := <-sub.Messages()
		if m.Kind == redisx.Reconnected {
			fmt.Println("gap: messages may have been missed")
			continue
		}
		fmt.Printf("%s %q: %s\n", m.Channel, m.Pattern, m.Payload)
	}
	// Output:
	// subscribers: 1
	// orders "": order 1 placed
	// alerts:disk "alerts:*": 90% full
}
