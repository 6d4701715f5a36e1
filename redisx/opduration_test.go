package redisx_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/redisx-go/kit/internal/launcher"
	"github.com/redisx-go/kit/redisx"
)

const durationMetric = "db.client.operation.duration"

// durations collects reader's db.client.operation.duration points.
func durations(t *testing.T, reader *sdkmetric.ManualReader) (metricdata.Metrics, []metricdata.HistogramDataPoint[float64]) {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	m, ok := metricsByName(rm)[durationMetric]
	if !ok {
		t.Fatalf("no %s in %v", durationMetric, names(metricsByName(rm)))
	}
	h, ok := m.Data.(metricdata.Histogram[float64])
	if !ok {
		t.Fatalf("%s is a %T; want a float64 histogram", durationMetric, m.Data)
	}
	return m, h.DataPoints
}

// point returns the one data point with exactly the attributes of want
// among those of points with operation op.
func point(t *testing.T, points []metricdata.HistogramDataPoint[float64], op string, extra ...attribute.KeyValue) (metricdata.HistogramDataPoint[float64], bool) {
	t.Helper()
	for _, p := range points {
		if v, _ := p.Attributes.Value("db.operation.name"); v.AsString() != op {
			continue
		}
		_, hasErr := p.Attributes.Value("error.type")
		match := len(extra) > 0 || !hasErr
		for _, kv := range extra {
			if v, ok := p.Attributes.Value(kv.Key); !ok || v != kv.Value {
				match = false
			}
		}
		if match {
			return p, true
		}
	}
	return metricdata.HistogramDataPoint[float64]{}, false
}

// TestOperationDurationMetric runs each Client method against a real
// server and reads db.client.operation.duration back from the SDK.
func TestOperationDurationMetric(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	ctx := t.Context()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())
	c, err := redisx.New(ctx, redisx.Options{Addrs: []string{srv.Addr()}, DB: 3, MeterProvider: mp})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	const key, missing = "duration:k", "duration:missing"
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	_, err = c.Del(ctx, key, missing)
	must(err)
	must(c.Set(ctx, key, []byte("secret-value"), time.Minute))
	_, err = c.Get(ctx, key)
	must(err)
	if _, err := c.Get(ctx, missing); !errors.Is(err, redisx.ErrNotFound) {
		t.Fatalf("Get(missing) = %v; want ErrNotFound", err)
	}
	_, err = c.AppendGet(ctx, nil, key)
	must(err)
	_, err = c.MGet(ctx, key, missing)
	must(err)
	must(c.MSet(ctx, map[string][]byte{key: []byte("v")}, time.Minute))
	_, err = c.GetOrLoad(ctx, missing, time.Minute, func(context.Context) ([]byte, error) { return []byte("v"), nil })
	must(err)
	must(c.Ping(ctx))
	_, err = c.Do(ctx, "ping")
	must(err)
	var re redis.Error
	if _, err := c.Do(ctx, "INCR", key); !errors.As(err, &re) {
		t.Fatalf("INCR of a non-integer = %v; want a server error", err)
	}
	if _, err := c.Do(ctx, "no:such:command"); err == nil {
		t.Fatal("an unknown command succeeded")
	}
	if _, err := c.Get(ctx, key); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if _, err := c.Get(ctx, key); !errors.Is(err, redisx.ErrClosed) {
		t.Fatalf("Get after Close = %v; want ErrClosed", err)
	}

	m, points := durations(t, reader)
	if m.Unit != "s" {
		t.Errorf("%s unit %q; want s", durationMetric, m.Unit)
	}
	wantBounds := []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}
	for _, p := range points {
		if !slices.Equal(p.Bounds, wantBounds) {
			t.Errorf("bucket bounds %v; want %v", p.Bounds, wantBounds)
		}
		checkAttr(t, p.Attributes, "db.system.name", "redis")
		checkAttr(t, p.Attributes, "db.namespace", "3")
		checkAttr(t, p.Attributes, "server.address", "127.0.0.1")
		if v, ok := p.Attributes.Value("server.port"); !ok || v.AsInt64() != int64(srv.Port()) {
			t.Errorf("server.port = %v; want %d", v.String(), srv.Port())
		}
		for _, kv := range p.Attributes.ToSlice() {
			if s := kv.Value.String(); s == key || s == missing || s == "secret-value" {
				t.Errorf("a duration records a key or value: %v", kv)
			}
		}
		if _, ok := p.Min.Value(); p.Count > 0 && (!ok || p.Sum <= 0) {
			t.Errorf("point %v: count %d, sum %v; want positive durations", p.Attributes.ToSlice(), p.Count, p.Sum)
		}
	}
	for _, want := range []struct {
		op    string
		count uint64
	}{
		// Get hit, miss (not an error), AppendGet, the last Get; not
		// GetOrLoad's own GET.
		{"GET", 4},
		{"SET", 1}, // not GetOrLoad's own SET
		{"DEL", 1},
		{"MGET", 1},
		{"MSET", 1},
		{"GETORLOAD", 1},
		{"PING", 2}, // Ping and Do("ping")
	} {
		p, ok := point(t, points, want.op)
		if !ok || p.Count != want.count {
			t.Errorf("%s successes: %d measurements (found %v); want %d", want.op, p.Count, ok, want.count)
		}
	}
	if p, ok := point(t, points, "INCR", attribute.String("error.type", "ERR"), attribute.String("db.response.status_code", "ERR")); !ok || p.Count != 1 {
		t.Errorf("INCR server error: %d measurements with error.type=ERR and db.response.status_code=ERR (found %v); want 1", p.Count, ok)
	}
	if _, ok := point(t, points, "INCR"); ok {
		t.Error("a failed INCR was measured without error.type")
	}
	if p, ok := point(t, points, "OTHER", attribute.String("error.type", "ERR")); !ok || p.Count != 1 {
		t.Errorf("Do of an odd command name: %d measurements as OTHER (found %v); want 1", p.Count, ok)
	}
	if p, ok := point(t, points, "GET", attribute.String("error.type", "closed")); !ok || p.Count != 1 {
		t.Errorf("Get after Close: %d measurements with error.type=closed (found %v); want 1", p.Count, ok)
	}
}

// TestOperationDurationErrorTypes: each kind of failure gets its
// error.type, a server error prefix Redis does not use is _OTHER without
// a status code, and Do's command names stay bounded.
func TestOperationDurationErrorTypes(t *testing.T) {
	ctx := context.Background()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(ctx)
	f := newFakeAppend()
	f.do = func(args []any) (any, error) {
		switch args[0] {
		case "MODULE.CMD":
			return nil, fmt.Errorf("redisx: MODULE.CMD: %w", redis.Error("WEIRDPREFIX something"))
		case "AUTHCMD":
			return nil, fmt.Errorf("%w: 127.0.0.1:1: WRONGPASS", redisx.ErrAuth)
		}
		return "OK", nil
	}
	c, err := redisx.New(ctx, redisx.Options{Strategy: fakeStrategy{f}, MeterProvider: mp})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	c.Get(cancelled, "k")
	c.Set(ctx, "k", nil, -time.Second)
	c.GetOrLoad(ctx, "k", 0, func(context.Context) ([]byte, error) { return nil, errors.New("down") })
	c.Do(ctx, "MODULE.CMD")
	c.Do(ctx, "AUTHCMD")
	for i := range 200 {
		c.Do(ctx, "CMD"+strconv.Itoa(i))
	}

	_, points := durations(t, reader)
	for _, tc := range []struct {
		op, typ string
	}{{"GET", "canceled"}, {"SET", "invalid_argument"}, {"GETORLOAD", "load"}, {"MODULE.CMD", "_OTHER"}, {"AUTHCMD", "auth"}} {
		p, ok := point(t, points, tc.op, attribute.String("error.type", tc.typ))
		if !ok || p.Count != 1 {
			t.Errorf("%s: %d measurements with error.type=%s (found %v); want 1", tc.op, p.Count, tc.typ, ok)
		}
		if _, has := p.Attributes.Value("db.response.status_code"); has {
			t.Errorf("%s error.type=%s has db.response.status_code; want none", tc.op, tc.typ)
		}
	}
	ops := map[string]bool{}
	for _, p := range points {
		v, _ := p.Attributes.Value("db.operation.name")
		ops[v.AsString()] = true
	}
	if len(ops) > 128+5 || !ops["OTHER"] {
		t.Errorf("200 distinct Do commands made %d db.operation.name values (OTHER among them: %v); want at most 128 plus the fixed ones", len(ops), ops["OTHER"])
	}
}

// TestOperationDurationAllocations: over a fake backend, Get and
// AppendGet through the facade allocate exactly what the backend does,
// without metrics, with the global provider (no SDK installed), with a
// no-op provider and with the SDK recording every call.
func TestOperationDurationAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are distorted by the race detector")
	}
	ctx := context.Background()
	reader := sdkmetric.NewManualReader()
	sdk := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer sdk.Shutdown(ctx)
	f := newFakeAppend()
	if err := f.Set(ctx, "k", make([]byte, 64), 0); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 0, 128)
	backendGet := testing.AllocsPerRun(1000, func() { f.Get(ctx, "k") })
	backendAppend := testing.AllocsPerRun(1000, func() { f.AppendGet(ctx, buf[:0], "k") })

	for _, tc := range []struct {
		name string
		mp   metric.MeterProvider // nil: the global one
		none bool                 // NewFromBackend: no instrumentation
	}{
		{"provider=none", nil, true},
		{"provider=global", nil, false},
		{"provider=noop", noop.NewMeterProvider(), false},
		{"provider=sdk", sdk, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c *redisx.Client
			if tc.none {
				c = redisx.NewFromBackend(f)
			} else {
				var err error
				if c, err = redisx.New(ctx, redisx.Options{Strategy: fakeStrategy{f}, MeterProvider: tc.mp}); err != nil {
					t.Fatal(err)
				}
			}
			// Not closed: the fake is shared; Close would only mark it.
			get := testing.AllocsPerRun(1000, func() {
				if _, err := c.Get(ctx, "k"); err != nil {
					t.Fatal(err)
				}
			})
			appendGet := testing.AllocsPerRun(1000, func() {
				if _, err := c.AppendGet(ctx, buf[:0], "k"); err != nil {
					t.Fatal(err)
				}
			})
			if get != backendGet || appendGet != backendAppend {
				t.Errorf("allocations per call: Get %.1f, AppendGet %.1f through the facade; %.1f and %.1f on the backend", get, appendGet, backendGet, backendAppend)
			}
		})
	}
	if _, points := durations(t, reader); len(points) == 0 {
		t.Error("the SDK recorded no duration")
	}
}
