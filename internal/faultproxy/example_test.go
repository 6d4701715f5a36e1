package faultproxy_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/redisx-go/kit/internal/faultproxy"
	"github.com/redisx-go/kit/internal/launcher"
	"github.com/redisx-go/kit/strategy"
)

// A test points its backend at the proxy instead of the server, then
// switches faults on and off while the backend runs. (A backend, not a
// redisx.Client: nothing under internal/ imports the facade; and a
// backend does not retry, so each fault's first effect shows.)
func ExampleStart() {
	ctx := context.Background()
	srv, err := launcher.Start(ctx, launcher.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Stop()
	p, err := faultproxy.Start(ctx, srv.Addr())
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close()

	c, err := strategy.Multiplexed{}.Open(ctx, strategy.Config{
		Addrs:       []string{p.Addr()}, // the proxy, not the server
		DialTimeout: time.Second,
		ReadTimeout: 200 * time.Millisecond,
	})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	// get reads a key; a miss is a success.
	get := func(ctx context.Context) error {
		if _, err := c.Get(ctx, "k"); err != nil && !errors.Is(err, strategy.ErrNotFound) {
			return err
		}
		return nil
	}

	fmt.Println("healthy:", get(ctx))

	p.Delay(faultproxy.Downstream, 200*time.Millisecond) // a slow server
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	err = get(short)
	cancel()
	fmt.Println("slow, past a 50 ms deadline:", errors.Is(err, context.DeadlineExceeded))

	p.Blackhole(true) // a half-open connection
	err = get(ctx)    // no deadline: ReadTimeout bounds the wait
	fmt.Println("half-open, past the read timeout:", errors.Is(err, strategy.ErrConnection))

	p.Heal()
	fmt.Println("healed:", get(ctx))
	// Output:
	// healthy: <nil>
	// slow, past a 50 ms deadline: true
	// half-open, past the read timeout: true
	// healed: <nil>
}
