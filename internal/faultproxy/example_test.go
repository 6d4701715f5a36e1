package faultproxy_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/redisx-go/kit/internal/faultproxy"
	"github.com/redisx-go/kit/redisx"
	"github.com/redisx-go/kit/redisxtest"
)

// A test points its client at the proxy instead of the server, then
// switches faults on and off while the client runs.
func ExampleStart() {
	ctx := context.Background()
	srv, err := redisxtest.NewServer(ctx, redisxtest.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	p, err := faultproxy.Start(ctx, srv.Addr())
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close()

	c, err := redisx.New(ctx, redisx.Options{
		Addrs:       []string{p.Addr()}, // the proxy, not the server
		ReadTimeout: 200 * time.Millisecond,
		Retry:       redisx.Retry{MaxAttempts: 1}, // each fault's first effect, not hidden by a retry
	})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	// get reads a key; a miss is a success.
	get := func(ctx context.Context) error {
		if _, err := c.Get(ctx, "k"); err != nil && !errors.Is(err, redisx.ErrNotFound) {
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
	fmt.Println("half-open, past the read timeout:", errors.Is(err, redisx.ErrConnection))

	p.Heal()
	fmt.Println("healed:", get(ctx))
	// Output:
	// healthy: <nil>
	// slow, past a 50 ms deadline: true
	// half-open, past the read timeout: true
	// healed: <nil>
}
