package redisx_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"sync"

	"github.com/gomodule/redigo/redis"
	"github.com/redisx-go/kit/redisx"
	"github.com/redisx-go/kit/redisxtest"
)

// An optimistic transaction: read, compute, write only if nobody wrote in
// between, and try again when somebody did. Ten goroutines increment one
// counter a hundred times each; none of the increments is lost.
func ExampleClient_Watch() {
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

	increment := func(ctx context.Context, key string) error {
		for {
			err := c.Watch(ctx, func(tx *redisx.Tx) error {
				n, err := redis.Int(tx.Do(ctx, "GET", key))
				if err != nil && !errors.Is(err, redis.ErrNil) {
					return err
				}
				_, err = tx.Exec(ctx, []any{"SET", key, n + 1})
				return err
			}, key)
			if !errors.Is(err, redisx.ErrTxConflict) {
				return err // nil: done
			}
			// Somebody wrote key after WATCH: nothing was applied, go again.
		}
	}
	var wg sync.WaitGroup
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				if err := increment(ctx, "visits"); err != nil {
					log.Print(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	v, err := c.Get(ctx, "visits")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s\n", v)
	// Output: 1000
}
