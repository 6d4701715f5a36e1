package redisx_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

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

func TestParseURLRejectsPortOutOfRangeAndKeepsEmptyPassword(t *testing.T) {
	for _, raw := range []string{"redis://h:0", "redis://h:65536", "redis://:s3cr3t-PW@h:99999"} {
		_, err := redisx.ParseURL(raw)
		if !errors.Is(err, redisx.ErrInvalidArgument) || err != nil && strings.Contains(err.Error(), secret) {
			t.Errorf("ParseURL(%q) error = %v, want ErrInvalidArgument without the password", raw, err)
		}
	}
	// "user:" with an empty password is a user, not the password shorthand.
	o, err := redisx.ParseURL("redis://app:@h:6380")
	if err != nil || o.Username != "app" || o.Password != "" {
		t.Fatalf("ParseURL(user with empty password) = user %q, password %q, %v; want app, empty", o.Username, o.Password, err)
	}
}
