package redisx_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/redisx-go/kit/localcache"
	"github.com/redisx-go/kit/redisx"
	"github.com/redisx-go/kit/redisxtest"
	"github.com/redisx-go/kit/strategy"
)

// Cache-aside with its extras: values loaded together expire at scattered
// times (TTLJitter), a value just past its ttl is served at once while one
// background load refreshes it (StaleWhileRevalidate), and hot keys are
// read from process memory (localcache.Near).
func ExampleClient_GetOrLoad_staleWhileRevalidate() {
	ctx := context.Background()
	srv, err := redisxtest.NewServer(ctx, redisxtest.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()

	c, err := redisx.New(ctx, redisx.Options{
		Addrs: []string{srv.Addr()},
		// Near reports each key's remaining ttl, which
		// StaleWhileRevalidate needs; its local copies are kept coherent
		// with Redis and never outlive their key there.
		Strategy: localcache.Near{
			Inner:    strategy.Multiplexed{},
			MaxBytes: 64 << 20,
			TTL:      time.Minute,
		},
		// Each value's ttl is shortened by up to 10%, so that a batch
		// loaded at once does not expire, and reload, at once.
		TTLJitter: 0.1,
		// Values are kept 30 s past their ttl. A GetOrLoad in those 30 s
		// returns the old value without waiting and starts one
		// background load (per key) to replace it.
		StaleWhileRevalidate: 30 * time.Second,
	})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close() // cancels refreshes still running

	load := func(ctx context.Context) ([]byte, error) {
		return []byte(`{"id":7,"plan":"pro"}`), nil // the database, say
	}
	for range 3 {
		// The first call runs the loader and stores the value for
		// 4.5–5 min (plus 30 s of grace); later calls are hits, served
		// from process memory once Near has stored its local copy (which
		// it does asynchronously, after the first read from Redis).
		v, err := c.GetOrLoad(ctx, "account:7", 5*time.Minute, load)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s\n", v)
	}

	// st.LocalHits, 0 to 2 here, varies from run to run: it depends on
	// when Near stored its local copy.
	st := c.Stats()
	fmt.Printf("loads %d, served stale %d\n", st.Loads, st.StaleServed)
	// Output:
	// {"id":7,"plan":"pro"}
	// {"id":7,"plan":"pro"}
	// {"id":7,"plan":"pro"}
	// loads 1, served stale 0
}
