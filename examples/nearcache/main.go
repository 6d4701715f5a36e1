// Command nearcache shows localcache.Near, the coherent near-cache, in
// front of strategy.Multiplexed. It serves a hot key from process memory,
// then shows a write by an independent client (go-redis) reaching the cache
// within milliseconds, and FLUSHALL emptying it.
//
// Without -addr it starts its own redis-server on a free loopback port
// (redis-server must be installed) and stops it on exit:
//
//	go run ./examples/nearcache
//	go run ./examples/nearcache -addr 127.0.0.1:6379 -flushall
//
// With -addr it writes, and deletes at the end, only keys under
// redisx-example:near:; since FLUSHALL empties the whole server, it is sent
// to a server named by -addr only when -flushall is given too. Ctrl-C
// (SIGINT) or SIGTERM closes the clients and stops the server it started,
// then exits with status 130.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redisx-go/kit/localcache"
	"github.com/redisx-go/kit/redisx"
	"github.com/redisx-go/kit/redisxtest"
	"github.com/redisx-go/kit/strategy"
)

const (
	prefix   = "redisx-example:near:"
	hotReads = 100_000 // local reads of the hot key
	writes   = 5       // go-redis writes whose arrival is timed
	batch    = 20      // keys cached before FLUSHALL
	deadline = 2 * time.Second
)

func main() {
	addr := flag.String("addr", "", "Redis server `host:port`; empty: start a redis-server on a free loopback port")
	flushall := flag.Bool("flushall", false, "send FLUSHALL to the server named by -addr (always done on a server this program starts)")
	flag.Parse()
	os.Exit(run(*addr, *flushall))
}

// run returns the exit status. Everything it starts is stopped by its
// deferred calls, which os.Exit in main would skip.
func run(addr string, flushall bool) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		stop() // a second Ctrl-C kills the program at once
	}()

	err := demo(ctx, addr, flushall)
	switch {
	case ctx.Err() != nil:
		fmt.Println("interrupted: clients closed, started server stopped")
		return 130
	case err != nil:
		fmt.Fprintln(os.Stderr, "error:", err)
		return 1
	}
	return 0
}

func demo(ctx context.Context, addr string, flushall bool) error {
	if addr == "" {
		fmt.Println("starting redis-server on a free loopback port...")
		srv, err := redisxtest.NewServer(ctx, redisxtest.Options{})
		if err != nil {
			return err
		}
		defer func() {
			fmt.Println("stopping redis-server")
			if err := srv.Close(); err != nil {
				fmt.Fprintln(os.Stderr, "stop server:", err)
			}
		}()
		addr, flushall = srv.Addr(), true
		fmt.Println("redis-server ready at", addr)
	}

	c, err := redisx.New(ctx, redisx.Options{
		Addrs: []string{addr},
		Strategy: localcache.Near{
			Inner:    strategy.Multiplexed{},
			MaxBytes: 16 << 20,
			TTL:      time.Minute,
		},
	})
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer c.Close()
	// The other writer: a go-redis client with connections of its own.
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	if err := rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("go-redis: %w", err)
	}
	fmt.Printf("near cache (%s) and an independent go-redis client connected to %s\n", c.Stats().Strategy, addr)

	hot := prefix + "hot"
	keys := []string{hot}
	for i := range batch {
		keys = append(keys, fmt.Sprintf("%sitem:%d", prefix, i))
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := c.Del(dctx, keys...); err != nil {
			fmt.Fprintln(os.Stderr, "delete keys:", err)
		}
	}()

	if err := hotKey(ctx, c, rdb, hot); err != nil {
		return err
	}
	if err := otherWriter(ctx, c, rdb, hot); err != nil {
		return err
	}
	if flushall {
		if err := flush(ctx, c, rdb, keys[1:]); err != nil {
			return err
		}
	} else {
		fmt.Println("FLUSHALL skipped: it would empty the server at -addr; add -flushall to run it")
	}

	st := c.Stats()
	fmt.Printf("stats: local hits=%d misses=%d invalidations=%d flushes=%d bytes=%d dials=%d\n",
		st.LocalHits, st.LocalMisses, st.Invalidations, st.LocalFlushes, st.LocalBytes, st.Dials)
	return nil
}

// hotKey reads one key many times: the first read goes to Redis, the rest
// are served locally.
func hotKey(ctx context.Context, c *redisx.Client, rdb *redis.Client, key string) error {
	fmt.Println("--- a hot key")
	if err := c.Set(ctx, key, []byte("v1"), 10*time.Minute); err != nil {
		return err
	}
	if err := cached(ctx, c, key); err != nil {
		return err
	}
	before := c.Stats()
	start := time.Now()
	for range hotReads {
		if _, err := c.Get(ctx, key); err != nil {
			return err
		}
	}
	local := time.Since(start) / hotReads
	after := c.Stats()
	fmt.Printf("%d reads of %s: %d local hits, %d misses, %v per read\n",
		hotReads, key, after.LocalHits-before.LocalHits, after.LocalMisses-before.LocalMisses, local)

	const remote = 1000
	start = time.Now()
	for range remote {
		if err := rdb.Get(ctx, key).Err(); err != nil {
			return err
		}
	}
	fmt.Printf("the same GET sent to Redis by go-redis: %v per read\n", time.Since(start)/remote)
	return nil
}

// otherWriter changes the key with go-redis and times how long the near
// cache goes on returning the old value.
func otherWriter(ctx context.Context, c *redisx.Client, rdb *redis.Client, key string) error {
	fmt.Printf("--- %d writes by another client: go-redis SETs %s while this process reads it in a loop\n", writes, key)
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "value\tSET acknowledged after\tnew value read after SET sent\t… after SET acknowledged\treads of the old value\t")
	old := "v1"
	var slowest time.Duration
	for i := range writes {
		if err := cached(ctx, c, key); err != nil {
			return err
		}
		inv := c.Stats().Invalidations
		val := fmt.Sprintf("v%d", i+2)
		sent := time.Now()
		if err := rdb.Set(ctx, key, val, 10*time.Minute).Err(); err != nil {
			return err
		}
		acked := time.Now()
		stale := 0
		for {
			v, err := c.Get(ctx, key)
			if err != nil {
				return err
			}
			if string(v) == val {
				break
			}
			if string(v) != old {
				return fmt.Errorf("read %q while waiting for %q", v, val)
			}
			stale++
			if time.Since(sent) > deadline {
				return fmt.Errorf("the near cache still returns %q %v after go-redis wrote %q", old, deadline, val)
			}
		}
		seen := time.Now()
		if c.Stats().Invalidations == inv {
			return fmt.Errorf("%s changed without an invalidation", key)
		}
		slowest = max(slowest, seen.Sub(sent))
		fmt.Fprintf(tw, "%s\t%v\t%v\t%v\t%d\t\n", val, acked.Sub(sent).Round(time.Microsecond),
			seen.Sub(sent).Round(time.Microsecond), seen.Sub(acked).Round(time.Microsecond), stale)
		old = val
	}
	tw.Flush()
	fmt.Printf("every write was seen through an invalidation message, the slowest %v after its SET was sent\n",
		slowest.Round(time.Microsecond))
	return nil
}

// flush caches keys, sends FLUSHALL from go-redis and shows that none of
// them is served locally any more.
func flush(ctx context.Context, c *redisx.Client, rdb *redis.Client, keys []string) error {
	fmt.Println("--- FLUSHALL")
	kv := make(map[string][]byte, len(keys))
	for _, k := range keys {
		kv[k] = []byte("cached")
	}
	if err := c.MSet(ctx, kv, 10*time.Minute); err != nil {
		return err
	}
	for _, k := range keys {
		if err := cached(ctx, c, k); err != nil {
			return err
		}
	}
	hits, _, err := readAll(ctx, c, keys)
	if err != nil {
		return err
	}
	fmt.Printf("%d keys cached: reading them all = %d local hits (%d bytes held locally)\n",
		len(keys), hits, c.Stats().LocalBytes)

	flushes := c.Stats().LocalFlushes
	sent := time.Now()
	if err := rdb.FlushAll(ctx).Err(); err != nil {
		return err
	}
	for c.Stats().LocalFlushes == flushes {
		if time.Since(sent) > deadline {
			return fmt.Errorf("no local flush %v after FLUSHALL", deadline)
		}
		time.Sleep(50 * time.Microsecond)
	}
	fmt.Printf("go-redis FLUSHALL: the local cache was flushed (LocalFlushes %d -> %d) %v after it was sent\n",
		flushes, c.Stats().LocalFlushes, time.Since(sent).Round(time.Microsecond))

	hits, missing, err := readAll(ctx, c, keys)
	if err != nil {
		return err
	}
	fmt.Printf("reading the %d keys again: %d local hits, %d not found on the server\n", len(keys), hits, missing)
	if hits != 0 || missing != len(keys) {
		return errors.New("the local cache outlived FLUSHALL")
	}
	return nil
}

// readAll reads every key once and counts the local hits and the keys not
// found.
func readAll(ctx context.Context, c *redisx.Client, keys []string) (hits, missing int, err error) {
	before := c.Stats().LocalHits
	for _, k := range keys {
		_, err := c.Get(ctx, k)
		switch {
		case errors.Is(err, redisx.ErrNotFound):
			missing++
		case err != nil:
			return 0, 0, err
		}
	}
	return int(c.Stats().LocalHits - before), missing, nil
}

// cached reads key until a read is served locally: a value read from Redis
// is stored in the local cache asynchronously.
func cached(ctx context.Context, c *redisx.Client, key string) error {
	start := time.Now()
	for {
		before := c.Stats().LocalHits
		if _, err := c.Get(ctx, key); err != nil {
			return err
		}
		if c.Stats().LocalHits > before {
			return nil
		}
		if time.Since(start) > deadline {
			return fmt.Errorf("%s not cached locally after %v", key, deadline)
		}
		time.Sleep(100 * time.Microsecond)
	}
}
