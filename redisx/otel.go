package redisx

import (
	"context"
	"errors"
	"net"
	"strconv"

	"github.com/redisx-go/kit/strategy"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// instrumentationName names the tracer and the meter of this package.
const instrumentationName = "github.com/redisx-go/kit/redisx"

// Attribute keys of the stable OpenTelemetry database conventions.
const (
	attrDBSystem       = attribute.Key("db.system.name")
	attrDBOperation    = attribute.Key("db.operation.name")
	attrDBNamespace    = attribute.Key("db.namespace")
	attrDBStatusCode   = attribute.Key("db.response.status_code")
	attrErrorType      = attribute.Key("error.type")
	attrDBBatchSize    = attribute.Key("db.operation.batch.size")
	attrPoolName       = attribute.Key("db.client.connection.pool.name")
	attrConnState      = attribute.Key("db.client.connection.state")
	attrServerAddress  = attribute.Key("server.address")
	attrServerPort     = attribute.Key("server.port")
	dbSystemRedisValue = "redis"
)

// telemetry is a Client's OpenTelemetry state. The zero value means: no
// tracing, no metrics (NewFromBackend).
type telemetry struct {
	tracer trace.Tracer            // nil: calls are not traced
	hist   metric.Float64Histogram // nil: operation durations are not measured
	ops    *operations             // names and attributes; set whenever tracer or hist is
	reg    metric.Registration     // nil: no metrics callback registered
}

// setupTelemetry installs tracing (only with an explicit TracerProvider),
// the operation duration histogram and the observable instruments on the
// MeterProvider (the global one when o.MeterProvider is nil). A failure to
// create instruments is reported to otel.Handle and leaves the client
// without them; it never fails New.
func (c *Client) setupTelemetry(o *Options, cfg strategy.Config) {
	first := firstAddr(cfg)
	mp := o.MeterProvider
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	meter := mp.Meter(instrumentationName)
	hist, err := meter.Float64Histogram("db.client.operation.duration",
		metric.WithUnit("s"),
		metric.WithDescription("Duration of database client operations."),
		// 100 µs to 10 s, with sub-millisecond resolution where a cache
		// operation usually falls.
		metric.WithExplicitBucketBoundaries(0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
			0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10))
	if err != nil {
		otel.Handle(err)
	} else {
		c.tel.hist = hist
	}
	if o.TracerProvider != nil {
		c.tel.tracer = o.TracerProvider.Tracer(instrumentationName)
	}
	if c.tel.hist != nil || c.tel.tracer != nil {
		c.tel.ops = newOperations(baseAttributes(first, cfg.DB))
	}
	pool := o.ClientName
	if pool == "" {
		pool = first
	}
	reg, err := c.registerMetrics(meter, pool)
	if err != nil {
		otel.Handle(err)
		return
	}
	c.tel.reg = reg
}

// baseAttributes are the attributes of every span and duration:
// db.system.name, db.namespace (the DB index) and the first address as
// server.address and server.port.
func baseAttributes(addr string, db int) []attribute.KeyValue {
	attrs := []attribute.KeyValue{attrDBSystem.String(dbSystemRedisValue), attrDBNamespace.String(strconv.Itoa(db))}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return append(attrs, attrServerAddress.String(addr))
	}
	attrs = append(attrs, attrServerAddress.String(host))
	if p, err := strconv.Atoi(port); err == nil {
		attrs = append(attrs, attrServerPort.Int(p))
	}
	return attrs
}

// registerMetrics creates the observable instruments and registers the one
// callback that reads them all from a single Stats snapshot.
func (c *Client) registerMetrics(m metric.Meter, pool string) (metric.Registration, error) {
	base := []attribute.KeyValue{attrDBSystem.String(dbSystemRedisValue), attrPoolName.String(pool)}
	all := metric.WithAttributeSet(attribute.NewSet(base...))
	idle := metric.WithAttributeSet(attribute.NewSet(append(base[:len(base):len(base)], attrConnState.String("idle"))...))
	used := metric.WithAttributeSet(attribute.NewSet(append(base[:len(base):len(base)], attrConnState.String("used"))...))

	var errs []error
	check := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	upDown := func(name, unit, desc string) metric.Int64ObservableUpDownCounter {
		i, err := m.Int64ObservableUpDownCounter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		check(err)
		return i
	}
	counter := func(name, unit, desc string) metric.Int64ObservableCounter {
		i, err := m.Int64ObservableCounter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		check(err)
		return i
	}
	connCount := upDown("db.client.connection.count", "{connection}", "The number of connections that are currently in the state described by the state attribute.")
	connMax := upDown("db.client.connection.max", "{connection}", "The maximum number of open connections allowed.")
	pending := upDown("db.client.connection.pending_requests", "{request}", "The number of commands sent and not yet answered, or waiting for a connection.")
	acquireWait, err := m.Float64ObservableCounter("redisx.pool.acquire.wait", metric.WithUnit("s"),
		metric.WithDescription("The total time callers waited to obtain a pooled connection."))
	check(err)
	redirects := counter("redisx.cluster.redirects", "{redirect}", "MOVED and ASK redirects followed.")
	refreshes := counter("redisx.cluster.topology_refreshes", "{refresh}", "Reloads of the cluster slot map.")
	nearHits := counter("redisx.near.hits", "{hit}", "Reads served by the near-cache.")
	nearMisses := counter("redisx.near.misses", "{miss}", "Reads the near-cache could not serve.")
	nearInval := counter("redisx.near.invalidations", "{invalidation}", "Near-cache entries dropped by invalidation messages or own writes.")
	nearBytes := upDown("redisx.near.bytes", "By", "Bytes held by the near-cache (approximate).")
	loads := counter("redisx.loads", "{load}", "GetOrLoad loader calls.")
	shared := counter("redisx.loads.shared", "{request}", "GetOrLoad calls answered by another caller's load.")
	stale := counter("redisx.stale_served", "{request}", "GetOrLoad calls served a value inside its stale-while-revalidate period.")
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}

	return m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		s := c.Stats()
		if s.Idle == 0 && s.InUse == 0 {
			// No pool accounting (multiplexed): every open connection is
			// shared by callers, hence in use.
			o.ObserveInt64(connCount, int64(s.Conns), used)
			o.ObserveInt64(connCount, 0, idle)
		} else {
			o.ObserveInt64(connCount, int64(s.InUse), used)
			o.ObserveInt64(connCount, int64(s.Idle), idle)
		}
		o.ObserveInt64(connMax, int64(s.MaxConns), all)
		o.ObserveInt64(pending, s.Pending, all)
		o.ObserveFloat64(acquireWait, s.AcquireWait.Seconds(), all)
		o.ObserveInt64(redirects, s.Redirects, all)
		o.ObserveInt64(refreshes, s.TopologyRefreshes, all)
		o.ObserveInt64(nearHits, s.LocalHits, all)
		o.ObserveInt64(nearMisses, s.LocalMisses, all)
		o.ObserveInt64(nearInval, s.Invalidations, all)
		o.ObserveInt64(nearBytes, s.LocalBytes, all)
		o.ObserveInt64(loads, s.Loads, all)
		o.ObserveInt64(shared, s.SharedLoads, all)
		o.ObserveInt64(stale, s.StaleServed, all)
		return nil
	}, connCount, connMax, pending, acquireWait, redirects, refreshes,
		nearHits, nearMisses, nearInval, nearBytes, loads, shared, stale)
}

// unregisterMetrics stops the metrics callback (Close).
func (c *Client) unregisterMetrics() {
	if c.tel.reg != nil {
		if err := c.tel.reg.Unregister(); err != nil {
			otel.Handle(err)
		}
	}
}

// startSpan starts a client span for op. batch > 0 adds
// db.operation.batch.size. Only keys' count is recorded: never keys,
// values nor credentials.
func (t *telemetry) startSpan(ctx context.Context, op *operation, batch int) (context.Context, trace.Span) {
	attrs := op.attrs
	if batch > 0 {
		attrs = append(attrs[:len(attrs):len(attrs)], attrDBBatchSize.Int(batch))
	}
	return t.tracer.Start(ctx, op.name, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
}

// endSpan records err on span (a miss is not an error), with the
// error.type and db.response.status_code of the duration metric, and ends
// it.
func endSpan(span trace.Span, err error) {
	if err != nil && !isMiss(err) {
		typ, status := errorType(err)
		span.SetAttributes(attrErrorType.String(typ))
		if status != "" {
			span.SetAttributes(attrDBStatusCode.String(status))
		}
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}
