package localcache_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/redisx-go/kit/localcache"
	"github.com/redisx-go/kit/redisx"
	"github.com/redisx-go/kit/strategy"
)

// The example connects to 127.0.0.1:6379 and has no Output line: it is
// compiled, not run.

func ExampleNear() {
	ctx := context.Background()
	c, err := redisx.New(ctx, redisx.Options{
		Addrs: []string{"127.0.0.1:6379"},
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
		// The first read fetches from Redis; the next ones are local.
		// Values returned are shared with the cache: do not modify them.
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

	st := c.Stats()
	fmt.Printf("local hits %d, misses %d, invalidations %d, flushes %d, ~%d bytes held\n",
		st.LocalHits, st.LocalMisses, st.Invalidations, st.LocalFlushes, st.LocalBytes)
}
