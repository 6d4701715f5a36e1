package redisx_test

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/redisx-go/kit/localcache"
	"github.com/redisx-go/kit/redisx"
	"github.com/redisx-go/kit/strategy"
	"github.com/redisx-go/kit/strategy/goredis"
	noopmetric "go.opentelemetry.io/otel/metric/noop"
	nooptrace "go.opentelemetry.io/otel/trace/noop"
)

// sameOptions reports whether two Options configure the same client, as
// ParseURL's round trip promises: TLS by presence and minimum version (a
// tls.Config is compared by its settings, not its identity), the rest
// field by field.
func sameOptions(a, b redisx.Options) bool {
	if (a.TLS == nil) != (b.TLS == nil) || a.TLS != nil && a.TLS.MinVersion != b.TLS.MinVersion {
		return false
	}
	a.TLS, b.TLS = nil, nil
	return reflect.DeepEqual(a, b)
}

func TestFormatURLRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		in   redisx.Options
		url  string         // FormatURL(in), exactly
		want redisx.Options // ParseURL(url); zero: in itself
	}{
		{
			name: "zero options",
			url:  "redis://127.0.0.1:6379?strategy=multiplexed",
			want: redisx.Options{Addrs: []string{"127.0.0.1:6379"}, Strategy: strategy.Multiplexed{}},
		},
		{
			name: "multiplexed, every field",
			in: redisx.Options{
				Addrs:    []string{"10.0.0.7:6380"},
				Strategy: strategy.Multiplexed{Conns: 4, MaxPending: 1000, Blocking: 2},
				DB:       3,
			},
			url: "redis://10.0.0.7:6380/3?strategy=multiplexed&conns=4&max_pending=1000&blocking=2",
		},
		{
			name: "multiplexed, adaptive lanes",
			in:   redisx.Options{Addrs: []string{"10.0.0.7:6380"}, Strategy: strategy.Multiplexed{Lanes: 8}},
			url:  "redis://10.0.0.7:6380?strategy=multiplexed&lanes=8",
		},
		{
			name: "pool, every field, and every connection field",
			in: redisx.Options{
				Addrs: []string{"[::1]:7000", "b:7001", "c:7002"},
				Strategy: strategy.Pool{
					Size: 32, MinIdle: 2, MaxIdleTime: -1, MaxLifetime: time.Hour, HealthCheckPeriod: 90 * time.Second,
				},
				Username:             "app",
				Password:             "p@ss/w:rd",
				TLS:                  &tls.Config{MinVersion: tls.VersionTLS12},
				ClientName:           "orders-api",
				DialTimeout:          250 * time.Millisecond,
				ReadTimeout:          -1,
				WriteTimeout:         2*time.Second + 5*time.Nanosecond,
				TTLJitter:            0.1,
				StaleWhileRevalidate: time.Minute,
				LoadTimeout:          5 * time.Second,
			},
			url: "rediss://app:p%40ss%2Fw%3Ard@[::1]:7000?strategy=pool&size=32&min_idle=2&max_idle_time=-1ns" +
				"&max_lifetime=1h0m0s&health_check_period=1m30s&client_name=orders-api&dial_timeout=250ms" +
				"&read_timeout=-1ns&write_timeout=2.000000005s&ttl_jitter=0.1&stale_while_revalidate=1m0s" +
				"&load_timeout=5s&addr=b:7001&addr=c:7002",
		},
		{
			name: "connection age and retry policy",
			in: redisx.Options{
				Addrs: []string{"h:6379"}, Strategy: strategy.Multiplexed{},
				MaxConnAge: 10 * time.Minute,
				Retry:      redisx.Retry{MaxAttempts: 5, MinBackoff: 5 * time.Millisecond, MaxBackoff: time.Second},
			},
			url: "redis://h:6379?strategy=multiplexed&max_conn_age=10m0s&retry_max_attempts=5" +
				"&retry_min_backoff=5ms&retry_max_backoff=1s",
		},
		{
			name: "reads from a cluster's replicas",
			in:   redisx.Options{Addrs: []string{"a:7000", "b:7001"}, Strategy: strategy.Pool{}, ReadFrom: redisx.ReadReplicaPreferred, PubSubBuffer: 50},
			url:  "redis://a:7000?strategy=pool&pubsub_buffer=50&read_from=replica&addr=b:7001",
		},
		{
			name: "retries off",
			in:   redisx.Options{Addrs: []string{"h:6379"}, Strategy: strategy.Multiplexed{}, Retry: redisx.Retry{MaxAttempts: 1}},
			url:  "redis://h:6379?strategy=multiplexed&retry_max_attempts=1",
		},
		{
			name: "password only",
			in:   redisx.Options{Addrs: []string{"h:6379"}, Password: "pw", Strategy: strategy.Multiplexed{}},
			url:  "redis://:pw@h:6379?strategy=multiplexed",
		},
		{
			name: "TLS with the zero minimum version is rediss",
			in:   redisx.Options{Addrs: []string{"h:6379"}, TLS: &tls.Config{}, Strategy: strategy.Multiplexed{}},
			url:  "rediss://h:6379?strategy=multiplexed",
			want: redisx.Options{Addrs: []string{"h:6379"}, TLS: &tls.Config{MinVersion: tls.VersionTLS12}, Strategy: strategy.Multiplexed{}},
		},
		{
			name: "slotgrouped, nil transport",
			in:   redisx.Options{Addrs: []string{"h:7000"}, Strategy: strategy.SlotGrouped{MaxBatch: 100}},
			url:  "redis://h:7000?strategy=slotgrouped&transport=multiplexed&max_batch=100",
			want: redisx.Options{Addrs: []string{"h:7000"}, Strategy: strategy.SlotGrouped{Transport: strategy.Multiplexed{}, MaxBatch: 100}},
		},
		{
			name: "slotgrouped over multiplexed",
			in: redisx.Options{Addrs: []string{"h:7000"}, Strategy: strategy.SlotGrouped{
				Transport: strategy.Multiplexed{Conns: 2, MaxPending: 50, Blocking: 1},
			}},
			url: "redis://h:7000?strategy=slotgrouped&transport=multiplexed&conns=2&max_pending=50&blocking=1",
		},
		{
			name: "slotgrouped over a pool pointer",
			in: redisx.Options{Addrs: []string{"h:7000"}, Strategy: &strategy.SlotGrouped{
				Transport: &strategy.Pool{Size: 8, MaxLifetime: time.Minute},
				MaxBatch:  500,
			}},
			url: "redis://h:7000?strategy=slotgrouped&transport=pool&size=8&max_lifetime=1m0s&max_batch=500",
			want: redisx.Options{Addrs: []string{"h:7000"}, Strategy: strategy.SlotGrouped{
				Transport: strategy.Pool{Size: 8, MaxLifetime: time.Minute},
				MaxBatch:  500,
			}},
		},
		{
			name: "near, zero value",
			in:   redisx.Options{Addrs: []string{"h:6379"}, Strategy: localcache.Near{}},
			url:  "redis://h:6379?strategy=multiplexed&near=0",
			want: redisx.Options{Addrs: []string{"h:6379"}, Strategy: localcache.Near{Inner: strategy.Multiplexed{}}},
		},
		{
			name: "near over multiplexed, every field",
			in: redisx.Options{Addrs: []string{"h:6379"}, Strategy: localcache.Near{
				Inner:        strategy.Multiplexed{Conns: 2},
				MaxBytes:     64 << 20,
				TTL:          10 * time.Second,
				NegativeTTL:  time.Second,
				Jitter:       0.05,
				Prefixes:     []string{"user:", "a&b=c"},
				PingInterval: 500 * time.Millisecond,
				Tracking:     localcache.TrackBroadcast,
			}},
			url: "redis://h:6379?strategy=multiplexed&conns=2&near=64MiB&near_ttl=10s&near_negative_ttl=1s" +
				"&near_jitter=0.05&near_prefix=user:&near_prefix=a%26b%3Dc&near_ping_interval=500ms&near_tracking=broadcast",
		},
		{
			name: "near without tracking",
			in:   redisx.Options{Addrs: []string{"h:6379"}, Strategy: localcache.Near{Inner: strategy.Multiplexed{}, TTL: 300 * time.Millisecond, Tracking: localcache.TrackNone}},
			url:  "redis://h:6379?strategy=multiplexed&near=0&near_ttl=300ms&near_tracking=none",
		},
		{
			name: "near over pool, odd size in bytes, empty prefixes",
			in: redisx.Options{Addrs: []string{"h:6379"}, Strategy: &localcache.Near{
				Inner: strategy.Pool{Size: 4}, MaxBytes: 1000001, Prefixes: []string{},
			}},
			url:  "redis://h:6379?strategy=pool&size=4&near=1000001",
			want: redisx.Options{Addrs: []string{"h:6379"}, Strategy: localcache.Near{Inner: strategy.Pool{Size: 4}, MaxBytes: 1000001}},
		},
		{
			name: "near over slotgrouped over pool",
			in: redisx.Options{Addrs: []string{"h:7000", "h:7001"}, Strategy: localcache.Near{
				Inner:    strategy.SlotGrouped{Transport: strategy.Pool{Size: 16}, MaxBatch: 64},
				MaxBytes: 3 << 40,
			}},
			url: "redis://h:7000?strategy=slotgrouped&transport=pool&size=16&max_batch=64&near=3TiB&addr=h:7001",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := redisx.FormatURL(tt.in)
			if err != nil || got != tt.url {
				t.Fatalf("FormatURL(%+v) = %q, %v;\nwant %q, nil", tt.in, got, err, tt.url)
			}
			back, err := redisx.ParseURL(got)
			if err != nil {
				t.Fatalf("ParseURL(FormatURL(…) = %q): %v", got, err)
			}
			want := tt.want
			if reflect.ValueOf(want).IsZero() {
				want = tt.in
			}
			if !sameOptions(back, want) {
				t.Errorf("ParseURL(%q) =\n  %#v\nwant\n  %#v", got, back, want)
			}
		})
	}
}

// countingStrategy is a Strategy no URL can describe.
type countingStrategy struct{ strategy.Multiplexed }

func TestFormatURLRefusesWhatAURLCannotHold(t *testing.T) {
	base := func(f func(*redisx.Options)) redisx.Options {
		o := redisx.Options{Addrs: []string{"h:6379"}, Password: secret}
		f(&o)
		return o
	}
	tests := []struct {
		name string
		o    redisx.Options
	}{
		{"go-redis", base(func(o *redisx.Options) { o.Strategy = goredis.Strategy{} })},
		{"custom strategy", base(func(o *redisx.Options) { o.Strategy = countingStrategy{} })},
		{"near over go-redis", base(func(o *redisx.Options) { o.Strategy = localcache.Near{Inner: goredis.Strategy{}} })},
		{"near inside near", base(func(o *redisx.Options) { o.Strategy = localcache.Near{Inner: &localcache.Near{}} })},
		{"slotgrouped over near", base(func(o *redisx.Options) { o.Strategy = strategy.SlotGrouped{Transport: localcache.Near{}} })},
		{"slotgrouped over slotgrouped", base(func(o *redisx.Options) {
			o.Strategy = strategy.SlotGrouped{Transport: strategy.SlotGrouped{}}
		})},
		{"nil pool pointer", base(func(o *redisx.Options) { o.Strategy = (*strategy.Pool)(nil) })},
		{"nil near pointer", base(func(o *redisx.Options) { o.Strategy = (*localcache.Near)(nil) })},
		{"TLS server name", base(func(o *redisx.Options) { o.TLS = &tls.Config{ServerName: "other"} })},
		{"TLS 1.3 minimum", base(func(o *redisx.Options) { o.TLS = &tls.Config{MinVersion: tls.VersionTLS13} })},
		{"TLS skip verify", base(func(o *redisx.Options) { o.TLS = &tls.Config{InsecureSkipVerify: true} })},
		{"meter provider", base(func(o *redisx.Options) { o.MeterProvider = noopmetric.NewMeterProvider() })},
		{"tracer provider", base(func(o *redisx.Options) { o.TracerProvider = nooptrace.NewTracerProvider() })},
		{"negative conns", base(func(o *redisx.Options) { o.Strategy = strategy.Multiplexed{Conns: -1} })},
		{"negative pool size", base(func(o *redisx.Options) { o.Strategy = strategy.Pool{Size: -1} })},
		{"negative max batch", base(func(o *redisx.Options) { o.Strategy = strategy.SlotGrouped{MaxBatch: -1} })},
		{"negative near size", base(func(o *redisx.Options) { o.Strategy = localcache.Near{MaxBytes: -1} })},
		{"near jitter of 1", base(func(o *redisx.Options) { o.Strategy = localcache.Near{Jitter: 1} })},
		{"ttl jitter NaN", base(func(o *redisx.Options) { o.TTLJitter = math.NaN() })},
		{"negative DB", base(func(o *redisx.Options) { o.DB = -1 })},
		{"negative retry attempts", base(func(o *redisx.Options) { o.Retry.MaxAttempts = -1 })},
		{"first address without port", base(func(o *redisx.Options) { o.Addrs = []string{"h"} })},
		{"first address without host", base(func(o *redisx.Options) { o.Addrs = []string{":6379"} })},
		{"first address port 0", base(func(o *redisx.Options) { o.Addrs = []string{"h:0"} })},
		{"first address not a URL host", base(func(o *redisx.Options) { o.Addrs = []string{"a/b:6379"} })},
		{"seed without port", base(func(o *redisx.Options) { o.Addrs = []string{"h:1", "nohost"} })},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, format := range []func(redisx.Options) (string, error){redisx.FormatURL, redisx.RedactedURL} {
				u, err := format(tt.o)
				if !errors.Is(err, redisx.ErrInvalidArgument) {
					t.Fatalf("FormatURL(%+v) = %q, %v; want an error wrapping ErrInvalidArgument", tt.o, u, err)
				}
				if strings.Contains(err.Error(), secret) {
					t.Errorf("FormatURL error %q contains the password", err)
				}
			}
		})
	}
}

// TestFormatURLRefusesCredentialsFunction: a function has no URL form, so
// FormatURL refuses it rather than drop it; RedactedURL, which drops every
// credential, drops it too.
func TestFormatURLRefusesCredentialsFunction(t *testing.T) {
	o := redisx.Options{
		Addrs:       []string{"h:6379"},
		Strategy:    strategy.Multiplexed{},
		Credentials: func(context.Context) (string, string, error) { return "app", secret, nil },
	}
	if u, err := redisx.FormatURL(o); !errors.Is(err, redisx.ErrInvalidArgument) {
		t.Errorf("FormatURL(Options with Credentials) = %q, %v; want an error wrapping ErrInvalidArgument", u, err)
	}
	const want = "redis://h:6379?strategy=multiplexed"
	if u, err := redisx.RedactedURL(o); err != nil || u != want {
		t.Errorf("RedactedURL(Options with Credentials) = %q, %v; want %q, nil", u, err, want)
	}
}

func TestRedactedURLHasNoCredentials(t *testing.T) {
	o := redisx.Options{
		Addrs:    []string{"cache:6380"},
		Username: "app",
		Password: secret,
		Strategy: localcache.Near{Inner: strategy.Pool{Size: 32}, MaxBytes: 128 << 20},
	}
	u, err := redisx.RedactedURL(o)
	const want = "redis://cache:6380?strategy=pool&size=32&near=128MiB"
	if err != nil || u != want {
		t.Fatalf("RedactedURL(…) = %q, %v; want %q, nil", u, err, want)
	}
	back, err := redisx.ParseURL(u)
	if err != nil {
		t.Fatal(err)
	}
	o.Username, o.Password = "", ""
	if !sameOptions(back, o) {
		t.Errorf("ParseURL(RedactedURL(o)) = %#v; want o without credentials %#v", back, o)
	}
	full, err := redisx.FormatURL(o)
	if err != nil || full != want {
		t.Errorf("FormatURL(o without credentials) = %q, %v; want RedactedURL's %q", full, err, want)
	}
}

// TestFormatURLKnowsEveryField fails when a field is added to Options or to
// a strategy a URL can name: teach ParseURL and FormatURL about it (or
// make FormatURL refuse it), then list it here.
func TestFormatURLKnowsEveryField(t *testing.T) {
	known := map[reflect.Type][]string{
		reflect.TypeFor[redisx.Options](): {
			"Addrs", "Sentinel", "ReadFrom", "Strategy", "Username", "Password", "Credentials", "MaxConnAge", "DB", "TLS", "ClientName", "DialTimeout",
			"ReadTimeout", "WriteTimeout", "Retry", "TTLJitter", "StaleWhileRevalidate", "LoadTimeout", "PubSubBuffer", "MeterProvider", "TracerProvider",
		},
		reflect.TypeFor[strategy.Multiplexed](): {"Conns", "Lanes", "MaxPending", "Blocking"},
		reflect.TypeFor[strategy.Pool]():        {"Size", "MinIdle", "MaxIdleTime", "MaxLifetime", "HealthCheckPeriod"},
		reflect.TypeFor[strategy.SlotGrouped](): {"Transport", "MaxBatch"},
		reflect.TypeFor[localcache.Near]():      {"Inner", "MaxBytes", "TTL", "NegativeTTL", "Jitter", "Prefixes", "PingInterval", "Tracking"},
	}
	for typ, names := range known {
		var fields []string
		for f := range typ.Fields() {
			fields = append(fields, f.Name)
		}
		if !reflect.DeepEqual(fields, names) {
			t.Errorf("%v has fields %v; FormatURL knows %v", typ, fields, names)
		}
	}
}

// FuzzURLRoundTrip checks that every URL ParseURL accepts can be written
// back by FormatURL, and that ParseURL reads that URL as the same Options.
func FuzzURLRoundTrip(f *testing.F) {
	for _, s := range []string{
		"redis://",
		"rediss://user:pw@h:6390/2?strategy=pool&size=32&min_idle=2&max_idle_time=5m",
		"redis://:p%40ss@[::1]:7000?addr=b:7001&addr=c:7002&client_name=x&dial_timeout=1s",
		"redis://h?strategy=slotgrouped&transport=pool&size=8&max_batch=100&near=64MiB&near_prefix=a:",
		"redis://h?near=1000001&near_ttl=1m&near_jitter=0.5&conns=3&blocking=1&ttl_jitter=0.01",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		o, err := redisx.ParseURL(raw)
		if err != nil {
			return
		}
		u, err := redisx.FormatURL(o)
		if err != nil {
			t.Fatalf("ParseURL(%q) = %#v, which FormatURL refuses: %v", raw, o, err)
		}
		back, err := redisx.ParseURL(u)
		if err != nil {
			t.Fatalf("ParseURL(FormatURL(ParseURL(%q)) = %q): %v", raw, u, err)
		}
		if !sameOptions(back, o) {
			t.Fatalf("ParseURL(%q) =\n  %#v\nbut ParseURL(FormatURL(…) = %q) =\n  %#v", raw, o, u, back)
		}
		if again, err := redisx.FormatURL(back); err != nil || again != u {
			t.Fatalf("FormatURL is not stable: %q, then %q, %v", u, again, err)
		}
	})
}

func ExampleFormatURL() {
	o := redisx.Options{
		Addrs:    []string{"cache.internal:6379"},
		Password: "s3cr3t",
		Strategy: localcache.Near{
			Inner:    strategy.SlotGrouped{Transport: strategy.Pool{Size: 32}},
			MaxBytes: 256 << 20,
			TTL:      30 * time.Second,
		},
	}
	u, err := redisx.FormatURL(o)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(u)
	// For a log line or a report: the same without credentials.
	r, err := redisx.RedactedURL(o)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(r)
	// Output:
	// redis://:s3cr3t@cache.internal:6379?strategy=slotgrouped&transport=pool&size=32&near=256MiB&near_ttl=30s
	// redis://cache.internal:6379?strategy=slotgrouped&transport=pool&size=32&near=256MiB&near_ttl=30s
}
