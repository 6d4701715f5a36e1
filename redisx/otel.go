package redisx

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"time"

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
	tracer    trace.Tracer         // nil: calls are not traced
	spanAttrs []attribute.KeyValue // db.system.name, server.address, server.port
	reg       metric.Registration  // nil: no metrics callback registered
}

// setupTelemetry installs tracing (only with an explicit TracerProvider)
// and registers the observable instruments on the MeterProvider (the
// global one when o.MeterProvider is nil). A failure to create the
// instruments is reported to otel.Handle and leaves the client without
// metrics; it never fails New.
func (c *Client) setupTelemetry(o *Options, addrs []string) {
	first := addrs[0]
	if o.TracerProvider != nil {
		c.tel.tracer = o.TracerProvider.Tracer(instrumentationName)
		attrs := []attribute.KeyValue{attrDBSystem.String(dbSystemRedisValue)}
		if host, port, err := net.SplitHostPort(first); err == nil {
			attrs = append(attrs, attrServerAddress.String(host))
			if p, err := strconv.Atoi(port); err == nil {
				attrs = append(attrs, attrServerPort.Int(p))
			}
		} else {
			attrs = append(attrs, attrServerAddress.String(first))
		}
		c.tel.spanAttrs = attrs
	}
	mp := o.MeterProvider
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	pool := o.ClientName
	if pool == "" {
		pool = first
	}
	reg, err := c.registerMetrics(mp.Meter(instrumentationName), pool)
	if err != nil {
		otel.Handle(err)
		return
	}
	c.tel.reg = reg
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

// startSpan starts a client span named op. batch > 0 adds
// db.operation.batch.size. Only keys' count is recorded: never keys,
// values nor credentials.
func (c *Client) startSpan(ctx context.Context, op string, batch int) (context.Context, trace.Span) {
	attrs := make([]attribute.KeyValue, 0, len(c.tel.spanAttrs)+2)
	attrs = append(attrs, c.tel.spanAttrs...)
	attrs = append(attrs, attrDBOperation.String(op))
	if batch > 0 {
		attrs = append(attrs, attrDBBatchSize.Int(batch))
	}
	return c.tel.tracer.Start(ctx, op, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
}

// endSpan records err on span (a miss is not an error) and ends it.
func endSpan(span trace.Span, err error) {
	if err != nil && !errors.Is(err, ErrNotFound) {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

func (c *Client) tracedGet(ctx context.Context, key string) ([]byte, error) {
	ctx, span := c.startSpan(ctx, "GET", 0)
	v, err := c.get(ctx, key)
	endSpan(span, err)
	return v, err
}

func (c *Client) tracedSet(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	ctx, span := c.startSpan(ctx, "SET", 0)
	err := c.set(ctx, key, value, ttl)
	endSpan(span, err)
	return err
}

func (c *Client) tracedDel(ctx context.Context, keys []string) (int64, error) {
	ctx, span := c.startSpan(ctx, "DEL", len(keys))
	n, err := c.del(ctx, keys)
	endSpan(span, err)
	return n, err
}

func (c *Client) tracedMGet(ctx context.Context, keys []string) ([][]byte, error) {
	ctx, span := c.startSpan(ctx, "MGET", len(keys))
	vs, err := c.mgetKeys(ctx, keys)
	endSpan(span, err)
	return vs, err
}

func (c *Client) tracedMSet(ctx context.Context, kv map[string][]byte, ttl time.Duration) error {
	ctx, span := c.startSpan(ctx, "MSET", len(kv))
	err := c.msetPairs(ctx, kv, ttl)
	endSpan(span, err)
	return err
}

func (c *Client) tracedGetOrLoad(ctx context.Context, key string, ttl time.Duration, load Loader) ([]byte, error) {
	ctx, span := c.startSpan(ctx, "GETORLOAD", 0)
	v, err := c.getOrLoad(ctx, key, ttl, load)
	endSpan(span, err)
	return v, err
}

func (c *Client) tracedDo(ctx context.Context, args []any) (any, error) {
	ctx, span := c.startSpan(ctx, commandName(args), 0)
	v, err := c.doCmd(ctx, args)
	endSpan(span, err)
	return v, err
}

// commandName is the uppercased name of the command in args, or "DO" when
// it has none.
func commandName(args []any) string {
	if len(args) > 0 {
		switch a := args[0].(type) {
		case string:
			if a != "" {
				return strings.ToUpper(a)
			}
		case []byte:
			if len(a) > 0 {
				return strings.ToUpper(string(a))
			}
		}
	}
	return "DO"
}
