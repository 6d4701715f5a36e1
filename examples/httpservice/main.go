// Command httpservice is a small cache-aside HTTP service, ready to be
// load-tested over each strategy. Items are read through redisx's GetOrLoad
// in front of a slow store, and the strategy comes from the -url flag, so
// the same service can be measured over a multiplexed connection, a pool or
// a near-cache without a code change.
//
//	go run ./examples/httpservice -url 'redis://127.0.0.1:6379?strategy=pool&size=32'
//	curl -X PUT -d 'hello' localhost:8080/items/1
//	curl localhost:8080/items/1
//	curl localhost:8080/healthz
//	curl localhost:8080/stats
//
// Without -url it starts its own redis-server on a free loopback port.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/redisx-go/kit/redisx"
	"github.com/redisx-go/kit/redisxtest"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:8080", "HTTP listen `address`")
	raw := flag.String("url", "", "Redis `URL` (redis://host:port?strategy=…); empty: start a redis-server")
	delay := flag.Duration("store-delay", 20*time.Millisecond, "latency of a read from the store behind the cache")
	ttl := flag.Duration("ttl", time.Minute, "how long an item stays cached")
	flag.Parse()
	if err := run(*listen, *raw, *delay, *ttl); err != nil {
		log.Fatal(err)
	}
}

func run(listen, raw string, delay, ttl time.Duration) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if raw == "" {
		srv, err := redisxtest.NewServer(ctx, redisxtest.Options{})
		if err != nil {
			return err
		}
		defer srv.Close()
		raw = "redis://" + srv.Addr()
		log.Printf("started redis-server on %s", srv.Addr())
	}
	o, err := redisx.ParseURL(raw)
	if err != nil {
		return err
	}
	c, err := redisx.New(ctx, o)
	if err != nil {
		return err
	}
	defer c.Close()

	svc := &Service{cache: c, store: NewStore(delay), ttl: ttl}
	hs := &http.Server{Addr: listen, Handler: svc.Handler(), ReadHeaderTimeout: 5 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- hs.ListenAndServe() }()
	log.Printf("listening on http://%s with strategy %s", listen, c.Stats().Strategy)
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := hs.Shutdown(shutdown); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}
