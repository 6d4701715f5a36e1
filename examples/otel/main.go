// Command otel shows what redisx reports to OpenTelemetry. That is a client
// span per call (opt-in, through Options.TracerProvider) and the metrics —
// db.client.operation.duration, the stable database-client histogram, and
// the connection and cache gauges — printed here by the SDK's stdout
// exporters.
//
//	go run ./examples/otel                  # starts its own redis-server
//	go run ./examples/otel -addr 127.0.0.1:6379
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/redisx-go/kit/redisx"
	"github.com/redisx-go/kit/redisxtest"
	"github.com/redisx-go/kit/strategy"
	"go.opentelemetry.io/otel/exporters/stdout/stdoutmetric"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
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
	if addr == "" {
		srv, err := redisxtest.NewServer(ctx, redisxtest.Options{})
		if err != nil {
			return err
		}
		defer srv.Close()
		addr = srv.Addr()
	}

	// The application owns the SDK; redisx uses the API only.
	spans, err := stdouttrace.New(stdouttrace.WithPrettyPrint())
	if err != nil {
		return err
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	defer tp.Shutdown(context.Background())
	metrics, err := stdoutmetric.New(stdoutmetric.WithPrettyPrint())
	if err != nil {
		return err
	}
	reader := sdkmetric.NewPeriodicReader(metrics, sdkmetric.WithInterval(time.Hour)) // flushed at Shutdown
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))

	c, err := redisx.New(ctx, redisx.Options{
		Addrs:          []string{addr},
		Strategy:       strategy.Multiplexed{},
		ClientName:     "otel-example", // db.client.connection.pool.name
		MeterProvider:  mp,
		TracerProvider: tp, // spans are opt-in: without this, none
	})
	if err != nil {
		return err
	}

	const key = "redisx-example:otel"
	if err := c.Set(ctx, key, []byte("hello"), time.Minute); err != nil {
		return err
	}
	for range 3 {
		if _, err := c.Get(ctx, key); err != nil {
			return err
		}
	}
	// A miss is not an error: its span and measurement carry no error.type.
	if _, err := c.Get(ctx, key+":missing"); !errors.Is(err, redisx.ErrNotFound) {
		return fmt.Errorf("otel example: Get of a missing key: %v", err)
	}
	// A server error reply is: error.type and db.response.status_code say WRONGTYPE.
	if _, err := c.Do(ctx, "LPUSH", key, "x"); err == nil {
		return errors.New("otel example: LPUSH on a string key succeeded")
	}
	fmt.Fprintln(os.Stderr, "--- metrics (db.client.operation.duration and the gauges) ---")
	if err := mp.Shutdown(context.Background()); err != nil { // exports the metrics once
		return err
	}
	return c.Close()
}
