package redisx_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/redisx-go/kit/internal/launcher"
	"github.com/redisx-go/kit/redisx"
	"github.com/redisx-go/kit/strategy"
)

// TestOTelMetrics: the observable instruments report the client's Stats
// with the pool name attribute, and stop reporting after Close.
func TestOTelMetrics(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	for _, tc := range []struct {
		name, clientName, pool string
		s                      strategy.Strategy
	}{
		{"multiplexed", "", srv.Addr(), strategy.Multiplexed{}},
		{"pool", "svc-cache", "svc-cache", strategy.Pool{Size: 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			reader := sdkmetric.NewManualReader()
			mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
			defer mp.Shutdown(context.Background())
			c, err := redisx.New(ctx, redisx.Options{
				Addrs: []string{srv.Addr()}, Strategy: tc.s, ClientName: tc.clientName, MeterProvider: mp,
			})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			key := "otel:metrics:" + tc.name
			if _, err := c.Del(ctx, key); err != nil {
				t.Fatal(err)
			}
			load := func(context.Context) ([]byte, error) { return []byte("v"), nil }
			for i := 0; i < 3; i++ {
				if _, err := c.GetOrLoad(ctx, key, time.Minute, load); err != nil {
					t.Fatal(err)
				}
			}

			var rm metricdata.ResourceMetrics
			if err := reader.Collect(ctx, &rm); err != nil {
				t.Fatal(err)
			}
			ms := metricsByName(rm)
			count, ok := ms["db.client.connection.count"]
			if !ok {
				t.Fatalf("no db.client.connection.count in %v", names(ms))
			}
			if count.Unit != "{connection}" {
				t.Errorf("db.client.connection.count unit %q, want {connection}", count.Unit)
			}
			var conns int64
			for _, dp := range count.Data.(metricdata.Sum[int64]).DataPoints {
				checkAttr(t, dp.Attributes, "db.client.connection.pool.name", tc.pool)
				checkAttr(t, dp.Attributes, "db.system.name", "redis")
				if st, ok := dp.Attributes.Value("db.client.connection.state"); !ok || (st.AsString() != "idle" && st.AsString() != "used") {
					t.Errorf("db.client.connection.state = %v, want idle or used", st)
				}
				conns += dp.Value
			}
			if conns < 1 {
				t.Errorf("db.client.connection.count sums to %d, want >= 1", conns)
			}
			loads, ok := ms["redisx.loads"]
			if !ok {
				t.Fatalf("no redisx.loads in %v", names(ms))
			}
			dps := loads.Data.(metricdata.Sum[int64]).DataPoints
			if len(dps) != 1 || dps[0].Value != 1 {
				t.Fatalf("redisx.loads = %+v, want one point of 1", dps)
			}
			checkAttr(t, dps[0].Attributes, "db.client.connection.pool.name", tc.pool)
			if w := ms["redisx.pool.acquire.wait"]; w.Unit != "s" {
				t.Errorf("redisx.pool.acquire.wait unit %q, want s", w.Unit)
			}

			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			rm = metricdata.ResourceMetrics{}
			if err := reader.Collect(ctx, &rm); err != nil {
				t.Fatal(err)
			}
			// The observable instruments stop; the duration histogram,
			// cumulative, keeps its last figures.
			ms = metricsByName(rm)
			delete(ms, "db.client.operation.duration")
			if len(ms) != 0 {
				t.Errorf("after Close, still reported: %v", names(ms))
			}
		})
	}
}

func metricsByName(rm metricdata.ResourceMetrics) map[string]metricdata.Metrics {
	ms := map[string]metricdata.Metrics{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			ms[m.Name] = m
		}
	}
	return ms
}

func names(ms map[string]metricdata.Metrics) []string {
	var ns []string
	for n := range ms {
		ns = append(ns, n)
	}
	return ns
}

func checkAttr(t *testing.T, set attribute.Set, key, want string) {
	t.Helper()
	if v, ok := set.Value(attribute.Key(key)); !ok || v.AsString() != want {
		t.Errorf("attribute %s = %q (present %v), want %q", key, v.String(), ok, want)
	}
}

// TestOTelTracing: spans are named after the operation, a miss is not an
// error, a failing command is, and neither keys nor values are recorded.
func TestOTelTracing(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	ctx := t.Context()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer tp.Shutdown(context.Background())
	c, err := redisx.New(ctx, redisx.Options{Addrs: []string{srv.Addr()}, TracerProvider: tp})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	const key, value = "otel:trace:missing", "secret-value"
	if _, err := c.Del(ctx, key, "otel:trace:str"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(ctx, key); !errors.Is(err, redisx.ErrNotFound) {
		t.Fatalf("Get of a missing key: %v, want ErrNotFound", err)
	}
	if err := c.Set(ctx, "otel:trace:str", []byte(value), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Do(ctx, "incr", "otel:trace:str"); err == nil {
		t.Fatal("INCR of a non-integer succeeded")
	}
	if _, err := c.MGet(ctx, "a", "b", "c"); err != nil {
		t.Fatal(err)
	}

	spans := rec.Ended()
	byName := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range spans {
		byName[s.Name()] = s
		if s.SpanKind() != trace.SpanKindClient {
			t.Errorf("span %s kind %v, want client", s.Name(), s.SpanKind())
		}
		for _, kv := range s.Attributes() {
			if v := kv.Value.String(); v == key || v == value || v == "otel:trace:str" {
				t.Errorf("span %s records a key or value: %v", s.Name(), kv)
			}
		}
		checkAttr(t, attribute.NewSet(s.Attributes()...), "db.system.name", "redis")
		checkAttr(t, attribute.NewSet(s.Attributes()...), "db.operation.name", s.Name())
		checkAttr(t, attribute.NewSet(s.Attributes()...), "server.address", "127.0.0.1")
	}
	get, ok := byName["GET"]
	if !ok {
		t.Fatalf("no GET span among %d spans", len(spans))
	}
	if get.Status().Code == codes.Error || len(get.Events()) != 0 {
		t.Errorf("GET of a missing key: status %v, events %v; want no error", get.Status(), get.Events())
	}
	incr, ok := byName["INCR"]
	if !ok {
		t.Fatal("no INCR span for Do")
	}
	if incr.Status().Code != codes.Error || len(incr.Events()) == 0 {
		t.Errorf("failing INCR: status %v, %d events; want an error status and a recorded error", incr.Status(), len(incr.Events()))
	}
	checkAttr(t, attribute.NewSet(incr.Attributes()...), "error.type", "ERR")
	checkAttr(t, attribute.NewSet(incr.Attributes()...), "db.response.status_code", "ERR")
	mget, ok := byName["MGET"]
	if !ok {
		t.Fatal("no MGET span")
	}
	mgetAttrs := attribute.NewSet(mget.Attributes()...)
	if v, ok := mgetAttrs.Value("db.operation.batch.size"); !ok || v.AsInt64() != 3 {
		t.Errorf("MGET db.operation.batch.size = %v, want 3", v.String())
	}
}

// TestOTelNoTracingByDefault: without Options.TracerProvider no span is
// started, not even on the global provider.
func TestOTelNoTracingByDefault(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer tp.Shutdown(context.Background())
	prev := otel.GetTracerProvider()
	otel.SetTracerProvider(tp)
	defer otel.SetTracerProvider(prev)

	ctx := t.Context()
	c, err := redisx.New(ctx, redisx.Options{Addrs: []string{srv.Addr()}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Set(ctx, "otel:none", []byte("v"), time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(ctx, "otel:none"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Do(ctx, "PING"); err != nil {
		t.Fatal(err)
	}
	if n := len(rec.Started()); n != 0 {
		t.Fatalf("%d spans started with no TracerProvider, want 0", n)
	}
}

// TestOTelAllocationsTracingOff: with tracing off (and metrics on the
// global provider) a Get still allocates at most twice.
func TestOTelAllocationsTracingOff(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are distorted by the race detector")
	}
	srv := launcher.Standalone(t, launcher.Options{})
	ctx := context.Background()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(ctx)
	c, err := redisx.New(ctx, redisx.Options{Addrs: []string{srv.Addr()}, MeterProvider: mp})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Set(ctx, "otel:allocs", make([]byte, 64), 0); err != nil {
		t.Fatal(err)
	}
	get := testing.AllocsPerRun(2000, func() {
		if _, err := c.Get(ctx, "otel:allocs"); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("Get allocates %.2f times per call with tracing off", get)
	if get > 2 {
		t.Errorf("Get allocates %.2f times per call with tracing off, want <= 2", get)
	}
}

// TestOTelTracingGetOrLoadAndPing: GetOrLoad's span is the parent of its
// own GET and SET spans; Ping and AppendGet have spans of their own; a
// Do with an odd command name is named OTHER, never after its argument.
func TestOTelTracingGetOrLoadAndPing(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	ctx := t.Context()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer tp.Shutdown(context.Background())
	c, err := redisx.New(ctx, redisx.Options{Addrs: []string{srv.Addr()}, TracerProvider: tp})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const key = "otel:trace:load"
	if _, err := c.Del(ctx, key); err != nil {
		t.Fatal(err)
	}
	rec.Reset()
	if _, err := c.GetOrLoad(ctx, key, time.Minute, func(context.Context) ([]byte, error) { return []byte("v"), nil }); err != nil {
		t.Fatal(err)
	}
	if err := c.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AppendGet(ctx, nil, key); err != nil {
		t.Fatal(err)
	}
	c.Do(ctx, "user:42")

	spans := rec.Ended()
	var got []string
	var load sdktrace.ReadOnlySpan
	for _, s := range spans {
		got = append(got, s.Name())
		if s.Name() == "GETORLOAD" {
			load = s
		}
	}
	want := []string{"GET", "SET", "GETORLOAD", "PING", "GET", "OTHER"}
	if !slices.Equal(got, want) {
		t.Fatalf("spans %v; want %v", got, want)
	}
	for _, s := range spans[:2] {
		if s.Parent().SpanID() != load.SpanContext().SpanID() {
			t.Errorf("GetOrLoad's own %s span is not a child of GETORLOAD", s.Name())
		}
	}
}
