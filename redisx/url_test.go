package redisx_test

import (
	"errors"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/redisx-go/kit/localcache"
	"github.com/redisx-go/kit/redisx"
	"github.com/redisx-go/kit/strategy"
)

// secret is the password of every failing URL below; no error may repeat it.
const secret = "s3cr3t-PW"

func TestParseURL(t *testing.T) {
	tests := []struct {
		name string
		url  string
		want redisx.Options // TLS compared separately: only whether it is set
		tls  bool
	}{
		{
			name: "defaults",
			url:  "redis://",
			want: redisx.Options{Addrs: []string{"127.0.0.1:6379"}, Strategy: strategy.Multiplexed{}},
		},
		{
			name: "host only",
			url:  "redis://cache.internal",
			want: redisx.Options{Addrs: []string{"cache.internal:6379"}, Strategy: strategy.Multiplexed{}},
		},
		{
			name: "host port db",
			url:  "redis://10.0.0.7:6380/3",
			want: redisx.Options{Addrs: []string{"10.0.0.7:6380"}, DB: 3, Strategy: strategy.Multiplexed{}},
		},
		{
			name: "root path is db 0",
			url:  "redis://h:7000/",
			want: redisx.Options{Addrs: []string{"h:7000"}, Strategy: strategy.Multiplexed{}},
		},
		{
			name: "ipv6 host",
			url:  "redis://[::1]:7000/1",
			want: redisx.Options{Addrs: []string{"[::1]:7000"}, DB: 1, Strategy: strategy.Multiplexed{}},
		},
		{
			name: "password only",
			url:  "redis://:pw@h",
			want: redisx.Options{Addrs: []string{"h:6379"}, Password: "pw", Strategy: strategy.Multiplexed{}},
		},
		{
			name: "user and password",
			url:  "redis://user:pw@h",
			want: redisx.Options{Addrs: []string{"h:6379"}, Username: "user", Password: "pw", Strategy: strategy.Multiplexed{}},
		},
		{
			name: "lone user info is the password",
			url:  "redis://pw@h",
			want: redisx.Options{Addrs: []string{"h:6379"}, Password: "pw", Strategy: strategy.Multiplexed{}},
		},
		{
			name: "percent-encoded password",
			url:  "redis://u:p%40ss%2Fw%3Ard@h",
			want: redisx.Options{Addrs: []string{"h:6379"}, Username: "u", Password: "p@ss/w:rd", Strategy: strategy.Multiplexed{}},
		},
		{
			name: "rediss sets TLS",
			url:  "rediss://user:pw@h:6390/2",
			want: redisx.Options{Addrs: []string{"h:6390"}, Username: "user", Password: "pw", DB: 2, Strategy: strategy.Multiplexed{}},
			tls:  true,
		},
		{
			name: "pool",
			url:  "redis://h?strategy=pool&size=32&min_idle=2&max_idle_time=5m&max_lifetime=1h",
			want: redisx.Options{
				Addrs:    []string{"h:6379"},
				Strategy: strategy.Pool{Size: 32, MinIdle: 2, MaxIdleTime: 5 * time.Minute, MaxLifetime: time.Hour},
			},
		},
		{
			name: "pool without parameters",
			url:  "redis://h?strategy=pool",
			want: redisx.Options{Addrs: []string{"h:6379"}, Strategy: strategy.Pool{}},
		},
		{
			name: "multiplexed",
			url:  "redis://h?strategy=multiplexed&conns=4",
			want: redisx.Options{Addrs: []string{"h:6379"}, Strategy: strategy.Multiplexed{Conns: 4}},
		},
		{
			name: "adaptive lanes",
			url:  "redis://h?strategy=multiplexed&lanes=8",
			want: redisx.Options{Addrs: []string{"h:6379"}, Strategy: strategy.Multiplexed{Lanes: 8}},
		},
		{
			name: "multiplexed by default",
			url:  "redis://h?conns=2&max_pending=100",
			want: redisx.Options{Addrs: []string{"h:6379"}, Strategy: strategy.Multiplexed{Conns: 2, MaxPending: 100}},
		},
		{
			name: "timeouts",
			url:  "redis://h?dial_timeout=250ms&read_timeout=2s&write_timeout=-1s",
			want: redisx.Options{
				Addrs:        []string{"h:6379"},
				Strategy:     strategy.Multiplexed{},
				DialTimeout:  250 * time.Millisecond,
				ReadTimeout:  2 * time.Second,
				WriteTimeout: -time.Second,
			},
		},
		{
			name: "repeated addr",
			url:  "redis://a:7000?addr=b:7001&addr=c:7002",
			want: redisx.Options{Addrs: []string{"a:7000", "b:7001", "c:7002"}, Strategy: strategy.Multiplexed{}},
		},
		{
			name: "client name",
			url:  "redis://h?client_name=orders-api",
			want: redisx.Options{Addrs: []string{"h:6379"}, ClientName: "orders-api", Strategy: strategy.Multiplexed{}},
		},
		{
			name: "every plain field",
			url:  "redis://h?ttl_jitter=0.25&stale_while_revalidate=30s&conns=2&blocking=3&strategy=multiplexed",
			want: redisx.Options{
				Addrs:                []string{"h:6379"},
				Strategy:             strategy.Multiplexed{Conns: 2, Blocking: 3},
				TTLJitter:            0.25,
				StaleWhileRevalidate: 30 * time.Second,
			},
		},
		{
			name: "pool health check",
			url:  "redis://h?strategy=pool&health_check_period=10s",
			want: redisx.Options{Addrs: []string{"h:6379"}, Strategy: strategy.Pool{HealthCheckPeriod: 10 * time.Second}},
		},
		{
			name: "slotgrouped over multiplexed by default",
			url:  "redis://h?strategy=slotgrouped",
			want: redisx.Options{Addrs: []string{"h:6379"}, Strategy: strategy.SlotGrouped{Transport: strategy.Multiplexed{}}},
		},
		{
			name: "slotgrouped over multiplexed",
			url:  "redis://h?strategy=slotgrouped&max_batch=200&conns=2&max_pending=64",
			want: redisx.Options{
				Addrs:    []string{"h:6379"},
				Strategy: strategy.SlotGrouped{Transport: strategy.Multiplexed{Conns: 2, MaxPending: 64}, MaxBatch: 200},
			},
		},
		{
			name: "slotgrouped over pool",
			url:  "redis://h?strategy=slotgrouped&transport=pool&size=16&min_idle=1&max_idle_time=1m&max_lifetime=1h",
			want: redisx.Options{
				Addrs: []string{"h:6379"},
				Strategy: strategy.SlotGrouped{Transport: strategy.Pool{
					Size: 16, MinIdle: 1, MaxIdleTime: time.Minute, MaxLifetime: time.Hour,
				}},
			},
		},
		{
			name: "near over multiplexed by default",
			url:  "redis://h?near=64MiB",
			want: redisx.Options{Addrs: []string{"h:6379"}, Strategy: localcache.Near{Inner: strategy.Multiplexed{}, MaxBytes: 64 << 20}},
		},
		{
			name: "near with every parameter",
			url: "redis://h?near=512KiB&near_ttl=10s&near_negative_ttl=1s&near_jitter=0.1" +
				"&near_prefix=user:&near_prefix=sess%3A&near_ping_interval=250ms&near_tracking=broadcast&conns=2",
			want: redisx.Options{Addrs: []string{"h:6379"}, Strategy: localcache.Near{
				Inner:        strategy.Multiplexed{Conns: 2},
				MaxBytes:     512 << 10,
				TTL:          10 * time.Second,
				NegativeTTL:  time.Second,
				Jitter:       0.1,
				Prefixes:     []string{"user:", "sess:"},
				PingInterval: 250 * time.Millisecond,
				Tracking:     localcache.TrackBroadcast,
			}},
		},
		{
			name: "near without tracking",
			url:  "redis://h?near=1MiB&near_ttl=300ms&near_tracking=none",
			want: redisx.Options{Addrs: []string{"h:6379"}, Strategy: localcache.Near{Inner: strategy.Multiplexed{}, MaxBytes: 1 << 20, TTL: 300 * time.Millisecond, Tracking: localcache.TrackNone}},
		},
		{
			name: "near with per-key tracking named",
			url:  "redis://h?near=1MiB&near_tracking=keys",
			want: redisx.Options{Addrs: []string{"h:6379"}, Strategy: localcache.Near{Inner: strategy.Multiplexed{}, MaxBytes: 1 << 20}},
		},
		{
			name: "near over pool, plain bytes",
			url:  "redis://h?strategy=pool&size=8&near=1000000",
			want: redisx.Options{Addrs: []string{"h:6379"}, Strategy: localcache.Near{Inner: strategy.Pool{Size: 8}, MaxBytes: 1e6}},
		},
		{
			name: "near over slotgrouped, lower-case unit",
			url:  "redis://h?strategy=slotgrouped&transport=pool&near=1gib",
			want: redisx.Options{Addrs: []string{"h:6379"}, Strategy: localcache.Near{
				Inner:    strategy.SlotGrouped{Transport: strategy.Pool{}},
				MaxBytes: 1 << 30,
			}},
		},
		{
			name: "near zero is the default size",
			url:  "redis://h?near=0",
			want: redisx.Options{Addrs: []string{"h:6379"}, Strategy: localcache.Near{Inner: strategy.Multiplexed{}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := redisx.ParseURL(tt.url)
			if err != nil {
				t.Fatalf("ParseURL(%q) error: %v", tt.url, err)
			}
			if (got.TLS != nil) != tt.tls {
				t.Errorf("ParseURL(%q).TLS = %v; want set = %v", tt.url, got.TLS, tt.tls)
			}
			got.TLS = nil
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ParseURL(%q) =\n  %#v\nwant\n  %#v", tt.url, got, tt.want)
			}
		})
	}
}

func TestParseURLTLSVerifiesServer(t *testing.T) {
	o, err := redisx.ParseURL("rediss://h")
	if err != nil {
		t.Fatal(err)
	}
	if o.TLS == nil || o.TLS.InsecureSkipVerify {
		t.Fatalf("ParseURL(rediss://h).TLS = %#v; want a verifying config", o.TLS)
	}
}

func TestParseURLErrors(t *testing.T) {
	tests := []struct {
		name string
		url  string
	}{
		{"bad scheme", "http://:" + secret + "@h"},
		{"missing scheme", "u:" + secret + "@h:6379"},
		{"bad db", "redis://:" + secret + "@h/one"},
		{"negative db", "redis://:" + secret + "@h/-1"},
		{"unknown param", "redis://:" + secret + "@h?pool_size=3"},
		{"unknown strategy", "redis://:" + secret + "@h?strategy=cluster"},
		{"size with multiplexed", "redis://:" + secret + "@h?strategy=multiplexed&size=32"},
		{"size without strategy", "redis://:" + secret + "@h?size=32"},
		{"conns with pool", "redis://:" + secret + "@h?strategy=pool&conns=4"},
		{"bad duration", "redis://:" + secret + "@h?dial_timeout=5"},
		{"bad pool duration", "redis://user:" + secret + "@h?strategy=pool&max_idle_time=soon"},
		{"negative count", "redis://:" + secret + "@h?strategy=pool&size=-1"},
		{"non-numeric count", "redis://:" + secret + "@h?conns=four"},
		{"bad addr", "redis://:" + secret + "@h?addr=nohost"},
		{"missing slashes", "redis:user:" + secret + "@h:6380"},
		{"missing slashes host only", "redis:h:6380"},
		{"malformed port", "redis://:" + secret + "@h:port"},
		{"malformed escape", "redis://user:" + secret + "%zz@h"},
		{"control character", "redis://:" + secret + "@h\n"},
		{"malformed host", "redis://:" + secret + "@]"},
		{"repeated param", "redis://:" + secret + "@h?conns=2&conns=4"},
		{"semicolon in query", "redis://:" + secret + "@h?conns=2;size=3"},
		{"unknown transport", "redis://:" + secret + "@h?strategy=slotgrouped&transport=near"},
		{"transport without slotgrouped", "redis://:" + secret + "@h?strategy=pool&transport=pool"},
		{"max_batch without slotgrouped", "redis://:" + secret + "@h?max_batch=10"},
		{"pool param on multiplexed transport", "redis://:" + secret + "@h?strategy=slotgrouped&size=4"},
		{"multiplexed param on pool transport", "redis://:" + secret + "@h?strategy=slotgrouped&transport=pool&conns=4"},
		{"blocking with pool", "redis://:" + secret + "@h?strategy=pool&blocking=2"},
		{"health check with multiplexed", "redis://:" + secret + "@h?health_check_period=1s"},
		{"near param without near", "redis://:" + secret + "@h?near_ttl=1s"},
		{"near prefix without near", "redis://:" + secret + "@h?near_prefix=a"},
		{"near without size", "redis://:" + secret + "@h?near="},
		{"near SI unit", "redis://:" + secret + "@h?near=64MB"},
		{"near unknown unit", "redis://:" + secret + "@h?near=64mebibytes"},
		{"near fraction", "redis://:" + secret + "@h?near=1.5GiB"},
		{"near negative", "redis://:" + secret + "@h?near=-1"},
		{"near overflow", "redis://:" + secret + "@h?near=9000000000GiB"},
		{"near jitter of 1", "redis://:" + secret + "@h?near=1MiB&near_jitter=1"},
		{"near jitter NaN", "redis://:" + secret + "@h?near=1MiB&near_jitter=NaN"},
		{"ttl jitter negative", "redis://:" + secret + "@h?ttl_jitter=-0.1"},
		{"near bad ttl", "redis://:" + secret + "@h?near=1MiB&near_ttl=long"},
		{"near unknown tracking", "redis://:" + secret + "@h?near=1MiB&near_tracking=bcast"},
		{"near empty tracking", "redis://:" + secret + "@h?near=1MiB&near_tracking="},
		{"near tracking without near", "redis://:" + secret + "@h?near_tracking=none"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := redisx.ParseURL(tt.url)
			if !errors.Is(err, redisx.ErrInvalidArgument) {
				t.Fatalf("ParseURL(%q) = %+v, %v; want an error wrapping ErrInvalidArgument", tt.url, o, err)
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("ParseURL(%q) error %q contains the password", tt.url, err)
			}
		})
	}
}

// TestParseURLSaysWhichPortIsWrong: a port that is not a number, out of
// range or empty after its ':' is named in the error, which says what a
// port must be and never repeats the password.
func TestParseURLSaysWhichPortIsWrong(t *testing.T) {
	for _, tt := range []struct {
		url, want string
	}{
		{"redis://host:notaport", `URL port "notaport" is not a number 1..65535`},
		{"redis://:" + secret + "@host:notaport", `URL port "notaport" is not a number 1..65535`},
		{"redis://user:" + secret + "@host:80x/1", `URL port "80x" is not a number 1..65535`},
		{"redis://[::1]:x", `URL port "x" is not a number 1..65535`},
		{"redis://host:-1", `URL port "-1" is not a number 1..65535`},
		{"redis://host:99999", `URL port "99999" is not a number 1..65535`},
		{"redis://:" + secret + "@host:0", `URL port "0" is not a number 1..65535`},
		{"redis://host:", "URL port is empty after ':'"},
		{"redis://:" + secret + "@host:/2", "URL port is empty after ':'"},
		{"redis://[::1]:", "URL port is empty after ':'"},
	} {
		_, err := redisx.ParseURL(tt.url)
		if !errors.Is(err, redisx.ErrInvalidArgument) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseURL(%q) error = %v; want ErrInvalidArgument saying %q", tt.url, err, tt.want)
		}
		if err != nil && strings.Contains(err.Error(), secret) {
			t.Errorf("ParseURL(%q) error %q contains the password", tt.url, err)
		}
	}
}

// TestParseURLNeverQuotesAPasswordCutShort: a password with an unescaped
// '/', '?' or '#' ends the authority early, so that its rest parses as a
// port, a database, a parameter or a fragment; the error quotes none of
// them, and such a URL is never read as one without the password.
func TestParseURLNeverQuotesAPasswordCutShort(t *testing.T) {
	for _, raw := range []string{
		"redis://:pw/" + secret + "@host:6379",
		"redis://:12/" + secret + "@host",
		"redis://:99999/" + secret + "@host",
		"redis://:12?" + secret + "@host",
		"redis://:12?" + secret + "=1@host",
		"redis://user:pw?" + secret + "@host",
		"redis://:12#" + secret + "@host",
		"redis://:" + secret + "#x@host",
	} {
		o, err := redisx.ParseURL(raw)
		if !errors.Is(err, redisx.ErrInvalidArgument) || !strings.Contains(err.Error(), "percent-encoded") {
			t.Errorf("ParseURL(%q) = %v, %v; want ErrInvalidArgument asking for percent-encoding", raw, o.Addrs, err)
		}
		if err != nil && strings.Contains(err.Error(), secret) {
			t.Errorf("ParseURL(%q) error %q contains (part of) the password", raw, err)
		}
	}
}

func TestParseURLRejectsPortOutOfRangeAndUserWithoutPassword(t *testing.T) {
	for _, raw := range []string{"redis://h:0", "redis://h:65536", "redis://:s3cr3t-PW@h:99999"} {
		_, err := redisx.ParseURL(raw)
		if !errors.Is(err, redisx.ErrInvalidArgument) || err != nil && strings.Contains(err.Error(), secret) {
			t.Errorf("ParseURL(%q) error = %v, want ErrInvalidArgument without the password", raw, err)
		}
	}
	// "user:" with an empty password is a user, not the password
	// shorthand: a user without a password, which New refuses (no AUTH
	// would name it).
	o, err := redisx.ParseURL("redis://app:@h:6380")
	if !errors.Is(err, redisx.ErrInvalidArgument) || !strings.Contains(err.Error(), "Username without Password") {
		t.Fatalf("ParseURL(user with empty password) = user %q, password %q, %v; want ErrInvalidArgument: Username without Password", o.Username, o.Password, err)
	}
}

// TestParseURLPasswordWithDelimiters: a password holding '@', '/', '?',
// '#' or ':' written into a URL either parses as that password (on the
// host after it) or is refused with an error that quotes no fragment of
// it, in each scheme; percent-encoded, it always parses.
func TestParseURLPasswordWithDelimiters(t *testing.T) {
	const delims = "@/?#:"
	for _, d1 := range delims {
		for _, d2 := range delims {
			pw := "Xy7" + string(d1) + "Qz5" + string(d2) + "Kp3"
			for _, form := range []struct{ scheme, tail, addr string }{
				{"redis", "", "10.0.0.5:6379"},
				{"rediss", "/1", "10.0.0.5:6379"},
				{"redis", "?strategy=pool", "10.0.0.5:6379"},
				{"redis-sentinel", "/mymaster", "10.0.0.5:26379"},
			} {
				for _, info := range []struct{ text, user, password string }{
					{":" + pw, "", pw},
					{"app:" + pw, "app", pw},
					{url.UserPassword("app", pw).String(), "app", pw},
					// The lone user info is the password, unless it has a ':'.
					{pw, "", pw},
				} {
					if i := strings.IndexByte(info.text, ':'); i > 0 && info.user == "" {
						info.user, info.password = info.text[:i], info.text[i+1:]
					}
					raw := form.scheme + "://" + info.text + "@" + form.addr + form.tail
					o, err := redisx.ParseURL(raw)
					if err == nil {
						addrs := o.Addrs
						if o.Sentinel != nil {
							addrs = o.Sentinel.Addrs
						}
						if o.Username != info.user || o.Password != info.password || len(addrs) != 1 || addrs[0] != form.addr {
							t.Errorf("ParseURL(%q) = user %q, password %q, addresses %q; want %q, %q on %s or an error",
								raw, o.Username, o.Password, addrs, info.user, info.password, form.addr)
						}
						continue
					}
					if strings.Contains(info.text, "%") {
						t.Errorf("ParseURL(%q): %v; want the percent-encoded password read", raw, err)
					}
					if !errors.Is(err, redisx.ErrInvalidArgument) {
						t.Errorf("ParseURL(%q): %v; want ErrInvalidArgument", raw, err)
					}
					for i := 0; i+3 <= len(pw); i++ {
						if strings.Contains(err.Error(), pw[i:i+3]) {
							t.Errorf("ParseURL(%q): the error %q quotes %q of the password", raw, err, pw[i:i+3])
							break
						}
					}
				}
			}
		}
	}
}
