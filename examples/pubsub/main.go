// Command pubsub shows Pub/Sub through redisx. It subscribes to a channel
// and a pattern, publishes messages to them, and — on the server it starts
// itself — restarts that server, after which the subscription is back by
// itself and says so with a Reconnected marker.
//
//	go run ./examples/pubsub                      # its own redis-server
//	go run ./examples/pubsub -addr 127.0.0.1:6379 # yours (not restarted)
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
	addr := flag.String("addr", "", "Redis server `host:port`; empty: start a redis-server on a free loopback port")
	flag.Parse()
	if err := run(*addr); err != nil {
		log.Fatal(err)
	}
}

func run(addr string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var srv *redisxtest.Server
	if addr == "" {
		var err error
		if srv, err = redisxtest.NewServer(ctx, redisxtest.Options{}); err != nil {
			return err
		}
		defer srv.Close()
		addr = srv.Addr()
		fmt.Println("started redis-server on", addr)
	}
	c, err := redisx.New(ctx, redisx.Options{Addrs: []string{addr}})
	if err != nil {
		return err
	}
	defer c.Close()

	// Subscribe returns once the server confirmed: nothing published
	// from here on is missed.
	sub, err := c.Subscribe(ctx, "example:news")
	if err != nil {
		return err
	}
	defer sub.Close()
	if err := sub.PSubscribe(ctx, "example:events:*"); err != nil {
		return err
	}

	publish := func(channel, msg string) error {
		_, err := c.Publish(ctx, channel, []byte(msg))
		return err
	}
	for _, m := range [][2]string{{"example:news", "hello"}, {"example:events:login", "ada"}} {
		if err := publish(m[0], m[1]); err != nil {
			return err
		}
	}
	if err := receive(ctx, sub, 2); err != nil {
		return err
	}

	if srv == nil {
		return nil // not our server: we do not restart it
	}
	fmt.Println("restarting the server…")
	if err := srv.Kill(); err != nil {
		return err
	}
	if err := srv.Restart(ctx); err != nil {
		return err
	}
	// The subscription reconnects by itself; the marker comes first.
	if err := receive(ctx, sub, 1); err != nil {
		return err
	}
	for {
		// The client's own connection is redialled by the first call.
		if err := publish("example:news", "back"); err == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	return receive(ctx, sub, 1)
}

// receive prints the next n messages of sub.
func receive(ctx context.Context, sub *redisx.Subscription, n int) error {
	for range n {
		select {
		case m := <-sub.Messages():
			switch {
			case m.Kind == redisx.Reconnected:
				fmt.Println("reconnected: messages published meanwhile were missed")
			case m.Pattern != "":
				fmt.Printf("%s (via %s): %s\n", m.Channel, m.Pattern, m.Payload)
			default:
				fmt.Printf("%s: %s\n", m.Channel, m.Payload)
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}
