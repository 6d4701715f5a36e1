package redisx_test

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log"
	"strings"
	"testing"
	"time"

	"github.com/redisx-go/kit/localcache"
	"github.com/redisx-go/kit/redisx"
	"github.com/redisx-go/kit/strategy"
)

func TestSentinelURLRoundTrip(t *testing.T) {
	tests := []struct {
		name     string
		in       redisx.Options
		url      string // FormatURL(in), exactly
		redacted string // RedactedURL(in), exactly
	}{
		{
			name:     "defaults",
			in:       redisx.Options{Sentinel: &redisx.SentinelOptions{Master: "mymaster", Addrs: []string{"10.0.0.1:26379"}}, Strategy: strategy.Multiplexed{}},
			url:      "redis-sentinel://10.0.0.1:26379/mymaster?strategy=multiplexed",
			redacted: "redis-sentinel://10.0.0.1:26379/mymaster?strategy=multiplexed",
		},
		{
			name: "every sentinel field, credentials of both, a database, a near-cache (which reads from the master)",
			in: redisx.Options{
				Sentinel: &redisx.SentinelOptions{
					Master: "cache one", Addrs: []string{"s1:26379", "10.0.0.2:26380", "s3:1"},
					Username: "watcher", Password: "s&p#w",
				},
				Username:   "app",
				Password:   "d@ta/pw",
				DB:         3,
				ClientName: "svc",
				Strategy:   localcache.Near{Inner: strategy.Pool{Size: 8}, MaxBytes: 1 << 20},
				Retry:      redisx.Retry{MaxAttempts: 5},
			},
			url: "redis-sentinel://app:d%40ta%2Fpw@s1:26379,10.0.0.2:26380,s3:1/cache%20one?strategy=pool&size=8&near=1MiB" +
				"&client_name=svc&retry_max_attempts=5&db=3&sentinel_username=watcher&sentinel_password=s%26p%23w",
			redacted: "redis-sentinel://s1:26379,10.0.0.2:26380,s3:1/cache%20one?strategy=pool&size=8&near=1MiB" +
				"&client_name=svc&retry_max_attempts=5&db=3",
		},
		{
			name:     "an '@' in the master's name", // escaped: a bare one may end a password
			in:       redisx.Options{Sentinel: &redisx.SentinelOptions{Master: "team@cache", Addrs: []string{"h:1"}}, Strategy: strategy.Pool{}},
			url:      "redis-sentinel://h:1/team%40cache?strategy=pool",
			redacted: "redis-sentinel://h:1/team%40cache?strategy=pool",
		},
		{
			name:     "IPv6 sentinels",
			in:       redisx.Options{Sentinel: &redisx.SentinelOptions{Master: "m", Addrs: []string{"[::1]:26379", "h:1", "[fe80::1]:2"}}, Strategy: strategy.Pool{}, ReadFrom: redisx.ReadNearest},
			url:      "redis-sentinel://[::1]:26379,h:1,[fe80::1]:2/m?strategy=pool&read_from=nearest",
			redacted: "redis-sentinel://[::1]:26379,h:1,[fe80::1]:2/m?strategy=pool&read_from=nearest",
		},
	}
	for _, tc := range tests {
		u, err := redisx.FormatURL(tc.in)
		if err != nil || u != tc.url {
			t.Errorf("%s: FormatURL = %q, %v; want %q", tc.name, u, err, tc.url)
			continue
		}
		back, err := redisx.ParseURL(u)
		if err != nil || !sameOptions(back, tc.in) {
			t.Errorf("%s: ParseURL(%q) = %#v, %v; want %#v", tc.name, u, back, err, tc.in)
		}
		if r, err := redisx.RedactedURL(tc.in); err != nil || r != tc.redacted {
			t.Errorf("%s: RedactedURL = %q, %v; want %q", tc.name, r, err, tc.redacted)
		}
	}
}

func TestParseSentinelURL(t *testing.T) {
	o, err := redisx.ParseURL("REDIS-SENTINEL://:pw@h1,[::1],h2:26380,[::1]:1/mymaster?db=1&sentinel_password=sp&dial_timeout=2s&read_from=primary")
	if err != nil {
		t.Fatal(err)
	}
	want := redisx.Options{
		Sentinel:    &redisx.SentinelOptions{Master: "mymaster", Addrs: []string{"h1:26379", "[::1]:26379", "h2:26380", "[::1]:1"}, Password: "sp"},
		Password:    "pw",
		DB:          1,
		DialTimeout: 2 * time.Second,
		Strategy:    strategy.Multiplexed{},
	}
	if !sameOptions(o, want) {
		t.Errorf("ParseURL = %#v\nwant %#v", o, want)
	}
}

func TestSentinelURLRefused(t *testing.T) {
	for _, raw := range []string{
		"redis-sentinel:///mymaster",               // no sentinel
		"redis-sentinel://h1,,h2/mymaster",         // an empty one
		"redis-sentinel://h1:/mymaster",            // an empty port
		"redis-sentinel://h1:0/mymaster",           // port out of range
		"redis-sentinel://h1:x/mymaster",           // not a port
		"redis-sentinel://h1",                      // no master
		"redis-sentinel://h1/",                     // an empty master
		"redis-sentinel://h1/a/b",                  // two segments
		"redis-sentinel://h1/m?addr=h2:6379",       // seeds: the sentinels name the master
		"redis-sentinel://h1/m?db=-1",              // a negative database
		"redis-sentinel://h1/m?db=01",              // not written as FormatURL would
		"redis-sentinel://h1/m?db=1&db=2",          // twice
		"redis-sentinel://h1/m?read_from=replicas", // not a ReadFrom
		"redis://h1/?read_from=replicas",           // not a ReadFrom either
		"redis-sentinel://h1/m?sentinel_password=a&sentinel_password=b",
		"redis-sentinel://h1/m?strategy=nosuch",       // what redis:// refuses
		"redis-sentinel://h1/m?conns=2&strategy=pool", // likewise
		"redis-sentinel://h1/m?%zz",                   // malformed query
		"redis-sentinel://:s3cr#t@h1/m",               // an unescaped '#': the rest is in the fragment
		"redis-sentinel://:s3cr/t@h1/m",               // an unescaped '/'
	} {
		o, err := redisx.ParseURL(raw)
		if err == nil {
			t.Errorf("ParseURL(%q) = %#v; want an error", raw, o)
			continue
		}
		if !errors.Is(err, redisx.ErrInvalidArgument) {
			t.Errorf("ParseURL(%q): %v; want ErrInvalidArgument", raw, err)
		}
		for _, secret := range []string{"s3cr", "t@h1"} {
			if strings.Contains(err.Error(), secret) {
				t.Errorf("ParseURL(%q): the error %q quotes the password", raw, err)
			}
		}
	}
	for _, o := range []redisx.Options{
		{Sentinel: &redisx.SentinelOptions{Addrs: []string{"h:1"}}},
		{Sentinel: &redisx.SentinelOptions{Master: "m"}},
		{Sentinel: &redisx.SentinelOptions{Master: "m", Addrs: []string{"h:1"}}, TLS: &tls.Config{MinVersion: tls.VersionTLS12}},
		{Sentinel: &redisx.SentinelOptions{Master: "m", Addrs: []string{"h:1,h:2"}}},
		{Sentinel: &redisx.SentinelOptions{Master: "m", Addrs: []string{"h"}}},
		{Sentinel: &redisx.SentinelOptions{Master: "m", Addrs: []string{"h:1"}, Username: "u"}},
		{Sentinel: &redisx.SentinelOptions{Master: "m", Addrs: []string{"h:1"}}, DB: -1},
		{Addrs: []string{"h:1"}, ReadFrom: redisx.ReadNearest + 1},
		{Sentinel: &redisx.SentinelOptions{Master: "m", Addrs: []string{"h:1"}}, ReadFrom: redisx.ReadNearest + 1},
	} {
		if u, err := redisx.FormatURL(o); err == nil || !errors.Is(err, redisx.ErrInvalidArgument) {
			t.Errorf("FormatURL(%#v) = %q, %v; want ErrInvalidArgument", o.Sentinel, u, err)
		}
	}
}

// FuzzSentinelURLRoundTrip is FuzzURLRoundTrip for redis-sentinel URLs.
func FuzzSentinelURLRoundTrip(f *testing.F) {
	for _, s := range []string{
		"redis-sentinel://h1/m",
		"redis-sentinel://u:p@h1:26379,h2:1/my%20master?db=2&strategy=pool&size=3&sentinel_password=x",
		"redis-sentinel://[::1]/m?sentinel_username=a&sentinel_password=b&near=1KiB",
		"redis-sentinel://h/m?read_from=nearest&strategy=pool",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		o, err := redisx.ParseURL(raw)
		if err != nil || o.Sentinel == nil {
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

func ExampleParseURL_sentinel() {
	o, err := redisx.ParseURL("redis-sentinel://:data-pw@10.0.0.1:26379,10.0.0.2/cache?db=1&strategy=pool&size=16&sentinel_password=s-pw")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s %v db %d %T\n", o.Sentinel.Master, o.Sentinel.Addrs, o.DB, o.Strategy)
	r, err := redisx.RedactedURL(o)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(r)
	// Output:
	// cache [10.0.0.1:26379 10.0.0.2:26379] db 1 strategy.Pool
	// redis-sentinel://10.0.0.1:26379,10.0.0.2:26379/cache?strategy=pool&size=16&db=1
}
