package redisx_test

import (
	"context"
	"errors"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redisx-go/kit/localcache"
	"github.com/redisx-go/kit/redisx"
	"github.com/redisx-go/kit/strategy"
)

// facadeURLKeys are the parameters the facade reads itself; sentinelURLKeys
// those a redis-sentinel URL adds. The strategies list theirs (URLKeys).
var (
	facadeURLKeys = []string{
		"strategy", "addr", "client_name", "dial_timeout", "read_timeout", "write_timeout",
		"stale_while_revalidate", "load_timeout", "max_conn_age", "retry_min_backoff",
		"retry_max_backoff", "ttl_jitter", "retry_max_attempts", "pubsub_buffer", "read_from",
	}
	sentinelURLKeys = []string{"db", "sentinel_username", "sentinel_password"}
)

// nowhere is a loopback address nothing listens on: New gets to dial it
// only when it finds nothing wrong with the options first.
const nowhere = "127.0.0.1:1"

// TestParseURLRefusesWhatNewRefuses gives every URL parameter a value
// that New refuses (or that the parameter's syntax does not allow):
// ParseURL refuses it too, rather than return Options that fail later.
// Where the value is one Options can hold, New refuses those Options
// before it dials.
func TestParseURLRefusesWhatNewRefuses(t *testing.T) {
	sentinel := &redisx.SentinelOptions{Master: "m", Addrs: []string{nowhere}}
	for _, tc := range []struct {
		url  string
		opts *redisx.Options // the same value as Options; nil: none can hold it
	}{
		{"redis://h?strategy=cluster", nil},
		{"redis://h?addr=nohost", &redisx.Options{Addrs: []string{nowhere, "nohost"}}},
		{"redis://h?client_name=a%20b", &redisx.Options{Addrs: []string{nowhere}, ClientName: "a b"}},
		{"redis://h?client_name=a%0Ab", &redisx.Options{Addrs: []string{nowhere}, ClientName: "a\nb"}},
		{"redis://h?dial_timeout=-1s", &redisx.Options{Addrs: []string{nowhere}, DialTimeout: -time.Second}},
		{"redis://h?read_timeout=soon", nil},  // negative: no bound
		{"redis://h?write_timeout=soon", nil}, // likewise
		{"redis://h?stale_while_revalidate=-1s", &redisx.Options{Addrs: []string{nowhere}, StaleWhileRevalidate: -time.Second}},
		{"redis://h?load_timeout=-1s", &redisx.Options{Addrs: []string{nowhere}, LoadTimeout: -time.Second}},
		{"redis://h?max_conn_age=-1s", &redisx.Options{Addrs: []string{nowhere}, MaxConnAge: -time.Second}},
		{"redis://h?retry_min_backoff=-1ms", &redisx.Options{Addrs: []string{nowhere}, Retry: redisx.Retry{MinBackoff: -time.Millisecond}}},
		{"redis://h?retry_max_backoff=-1ms", &redisx.Options{Addrs: []string{nowhere}, Retry: redisx.Retry{MaxBackoff: -time.Millisecond}}},
		{"redis://h?retry_min_backoff=1s&retry_max_backoff=10ms", &redisx.Options{Addrs: []string{nowhere}, Retry: redisx.Retry{MinBackoff: time.Second, MaxBackoff: 10 * time.Millisecond}}},
		{"redis://h?retry_max_attempts=-1", &redisx.Options{Addrs: []string{nowhere}, Retry: redisx.Retry{MaxAttempts: -1}}},
		{"redis://h?ttl_jitter=1", &redisx.Options{Addrs: []string{nowhere}, TTLJitter: 1}},
		{"redis://h?pubsub_buffer=-1", &redisx.Options{Addrs: []string{nowhere}, PubSubBuffer: -1}},
		{"redis://h?read_from=replicas", nil},
		{"redis://h?strategy=slotgrouped&read_from=replica", &redisx.Options{Addrs: []string{nowhere}, Strategy: strategy.SlotGrouped{}, ReadFrom: redisx.ReadReplicaPreferred}},
		{"redis://h?near=1MiB&read_from=nearest", &redisx.Options{Addrs: []string{nowhere}, Strategy: localcache.Near{MaxBytes: 1 << 20}, ReadFrom: redisx.ReadNearest}},

		{"redis://h?conns=2&lanes=4", &redisx.Options{Addrs: []string{nowhere}, Strategy: strategy.Multiplexed{Conns: 2, Lanes: 4}}},
		{"redis://h?conns=1025", &redisx.Options{Addrs: []string{nowhere}, Strategy: strategy.Multiplexed{Conns: 1025}}},
		{"redis://h?lanes=1025", &redisx.Options{Addrs: []string{nowhere}, Strategy: strategy.Multiplexed{Lanes: 1025}}},
		{"redis://h?max_pending=-1", &redisx.Options{Addrs: []string{nowhere}, Strategy: strategy.Multiplexed{MaxPending: -1}}},
		{"redis://h?blocking=-1", &redisx.Options{Addrs: []string{nowhere}, Strategy: strategy.Multiplexed{Blocking: -1}}},

		{"redis://h?strategy=pool&size=-1", &redisx.Options{Addrs: []string{nowhere}, Strategy: strategy.Pool{Size: -1}}},
		{"redis://h?strategy=pool&size=2&min_idle=3", &redisx.Options{Addrs: []string{nowhere}, Strategy: strategy.Pool{Size: 2, MinIdle: 3}}},
		{"redis://h?strategy=pool&max_idle_time=soon", nil}, // negative: never
		{"redis://h?strategy=pool&max_lifetime=-1s", &redisx.Options{Addrs: []string{nowhere}, Strategy: strategy.Pool{MaxLifetime: -time.Second}}},
		{"redis://h?strategy=pool&health_check_period=-1s", &redisx.Options{Addrs: []string{nowhere}, Strategy: strategy.Pool{HealthCheckPeriod: -time.Second}}},

		{"redis://h?strategy=slotgrouped&transport=near", nil},
		{"redis://h?strategy=slotgrouped&max_batch=-1", &redisx.Options{Addrs: []string{nowhere}, Strategy: strategy.SlotGrouped{MaxBatch: -1}}},
		{"redis://h?strategy=slotgrouped&transport=pool&size=2&min_idle=3", &redisx.Options{Addrs: []string{nowhere}, Strategy: strategy.SlotGrouped{Transport: strategy.Pool{Size: 2, MinIdle: 3}}}},

		{"redis://h?near=-1", &redisx.Options{Addrs: []string{nowhere}, Strategy: localcache.Near{MaxBytes: -1}}},
		{"redis://h?near=1MiB&near_ttl=-1s", &redisx.Options{Addrs: []string{nowhere}, Strategy: localcache.Near{TTL: -time.Second}}},
		{"redis://h?near=1MiB&near_negative_ttl=-1s", &redisx.Options{Addrs: []string{nowhere}, Strategy: localcache.Near{NegativeTTL: -time.Second}}},
		{"redis://h?near=1MiB&near_jitter=1", &redisx.Options{Addrs: []string{nowhere}, Strategy: localcache.Near{Jitter: 1}}},
		{"redis://h?near=1MiB&near_ping_interval=-1s", &redisx.Options{Addrs: []string{nowhere}, Strategy: localcache.Near{PingInterval: -time.Second}}},
		{"redis://h?near_prefix=a", nil}, // any prefix, but only with near
		{"redis://h?near=1MiB&near_tracking=all", &redisx.Options{Addrs: []string{nowhere}, Strategy: localcache.Near{Tracking: localcache.TrackNone + 1}}},
		{"redis://h?near=1MiB&near_tracking=", &redisx.Options{Addrs: []string{nowhere}, Strategy: localcache.Near{Tracking: -1}}},
		{"redis://h?near_tracking=none", nil}, // only with near
		{"redis://h?near=1MiB&conns=2&lanes=4", &redisx.Options{Addrs: []string{nowhere}, Strategy: localcache.Near{Inner: strategy.Multiplexed{Conns: 2, Lanes: 4}}}},

		{"redis-sentinel://h/m?db=-1", &redisx.Options{Sentinel: sentinel, DB: -1}},
		{"redis-sentinel://h/m?sentinel_username=u", &redisx.Options{Sentinel: &redisx.SentinelOptions{Master: "m", Addrs: []string{nowhere}, Username: "u"}}},
		{"redis-sentinel://h/m?sentinel_password=a&sentinel_password=b", nil},
		{"redis-sentinel://h/m?strategy=slotgrouped", &redisx.Options{Sentinel: sentinel, Strategy: strategy.SlotGrouped{}}},
		{"redis-sentinel://h/m?near=1MiB&read_from=replica", &redisx.Options{Sentinel: sentinel, Strategy: localcache.Near{}, ReadFrom: redisx.ReadReplicaPreferred}},
		{"redis-sentinel://h/m?dial_timeout=-1s", &redisx.Options{Sentinel: sentinel, DialTimeout: -time.Second}},
	} {
		if o, err := redisx.ParseURL(tc.url); !errors.Is(err, redisx.ErrInvalidArgument) {
			t.Errorf("ParseURL(%q) = %+v, %v; want ErrInvalidArgument", tc.url, o.Strategy, err)
		}
		if tc.opts == nil {
			continue
		}
		o := *tc.opts
		o.DialTimeout = cmpDuration(o.DialTimeout, 100*time.Millisecond)
		o.Retry.MaxAttempts = cmpInt(o.Retry.MaxAttempts, 1)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		c, err := redisx.New(ctx, o)
		cancel()
		if err == nil {
			c.Close()
		}
		if !errors.Is(err, redisx.ErrInvalidArgument) {
			t.Errorf("New(the Options of %q): %v; want ErrInvalidArgument before any dial", tc.url, err)
		}
	}
}

// cmpDuration and cmpInt return v, or def when v is zero.
func cmpDuration(v, def time.Duration) time.Duration {
	if v == 0 {
		return def
	}
	return v
}

func cmpInt(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

// TestParseURLRefusalsCoverEveryParameter: each parameter a URL can
// carry has a row in TestParseURLRefusesWhatNewRefuses.
func TestParseURLRefusalsCoverEveryParameter(t *testing.T) {
	b, err := os.ReadFile("url_params_test.go")
	if err != nil {
		t.Fatal(err)
	}
	src := string(b)
	keys := slices.Concat(facadeURLKeys, sentinelURLKeys)
	for _, s := range []strategy.URLStrategy{strategy.Multiplexed{}, strategy.Pool{}, strategy.SlotGrouped{}, localcache.Near{}} {
		keys = append(keys, s.URLKeys()...)
	}
	for _, k := range keys {
		if !strings.Contains(src, "?"+k+"=") && !strings.Contains(src, "&"+k+"=") {
			t.Errorf("URL parameter %s has no row in TestParseURLRefusesWhatNewRefuses", k)
		}
	}
	// Every parameter of a URL FormatURL writes is one of keys.
	u, err := redisx.FormatURL(redisx.Options{
		Addrs: []string{"a:1", "b:2"}, ClientName: "x", DialTimeout: 1, ReadTimeout: 1, WriteTimeout: 1,
		StaleWhileRevalidate: 1, LoadTimeout: 1, MaxConnAge: 1, TTLJitter: 0.5, PubSubBuffer: 1,
		Retry:    redisx.Retry{MaxAttempts: 2, MinBackoff: 1, MaxBackoff: 2},
		ReadFrom: redisx.ReadReplicaPreferred,
		Strategy: localcache.Near{Inner: strategy.SlotGrouped{Transport: strategy.Pool{Size: 2, MinIdle: 1, MaxIdleTime: 1, MaxLifetime: 1, HealthCheckPeriod: 1}, MaxBatch: 3},
			MaxBytes: 1 << 20, TTL: 1, NegativeTTL: 1, Jitter: 0.1, Prefixes: []string{"p"}, PingInterval: 1},
	})
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	for k := range parsed.Query() {
		if !slices.Contains(keys, k) {
			t.Errorf("FormatURL writes parameter %s, which this test does not know", k)
		}
	}
}
