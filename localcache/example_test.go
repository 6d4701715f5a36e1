package localcache_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/redisx-go/kit/localcache"
	"github.com/redisx-go/kit/redisx"
	"github.com/redisx-go/kit/redisxtest"
	"github.com/redisx-go/kit/strategy"
)

func ExampleNear() {
	ctx := context.Background()
	// A redis-server of the example's own; yours is named in Addrs.
	srv, err := redisxtest.NewServer(ctx, redisxtest.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()

	c, err := redisx.New(ctx, redisx.Options{
		Addrs: []string{srv.Addr()},
		// Reads are served from process memory, up to 128 MiB of it, each
		// entry for at most a minute; misses and every write go through a
		// pool of 16 connections. Another process's writes reach the cache
		// as invalidation messages, within milliseconds.
		Strategy: localcache.Near{
			Inner:    strategy.Pool{Size: 16},
			MaxBytes: 128 << 20,
			TTL:      time.Minute,
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	if err := c.Set(ctx, "user:42:name", []byte("Ada"), time.Hour); err != nil {
		log.Fatal(err)
	}
	for range 3 {
		// The first read fetches from Redis; the next ones are local
		// once Near has stored its copy, which it does asynchronously.
		v, err := c.Get(ctx, "user:42:name")
		switch {
		case errors.Is(err, redisx.ErrNotFound):
			fmt.Println("no such user")
		case err != nil:
			log.Fatal(err)
		default:
			fmt.Printf("%s\n", v)
		}
	}

	// How the reads split into st.LocalHits and st.LocalMisses varies
	// from run to run. st.Invalidations and st.LocalFlushes count what
	// writes and FLUSHALL dropped from the cache.
	st := c.Stats()
	fmt.Printf("%d reads, %d flushes\n", st.LocalHits+st.LocalMisses, st.LocalFlushes)
	// Output:
	// Ada
	// Ada
	// Ada
	// 3 reads, 0 flushes
}
