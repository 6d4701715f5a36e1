package redisx_test

import (
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	goredislib "github.com/redis/go-redis/v9"

	"github.com/redisx-go/kit/localcache"
	"github.com/redisx-go/kit/redisx"
	"github.com/redisx-go/kit/strategy"
	"github.com/redisx-go/kit/strategy/goredis"
)

// stalledPeer listens on a free loopback port, accepts every connection
// and never answers nor closes it until the test ends: a server that
// stalled (SIGSTOP'd, or stuck in a long command) as a client sees it.
func stalledPeer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return ln.Addr().String()
}

// openCase is a strategy, its addresses and its Sentinel options.
type openCase struct {
	name     string
	s        strategy.Strategy
	addrs    []string
	sentinel *redisx.SentinelOptions
}

// openCases lists every strategy against the stalled servers a and b:
// standalone, a cluster's seeds, sentinels, and Near around each.
func openCases(a, b string) []openCase {
	sentinel := func(addrs ...string) *redisx.SentinelOptions {
		return &redisx.SentinelOptions{Master: "mymaster", Addrs: addrs}
	}
	return []openCase{
		{"Multiplexed", strategy.Multiplexed{}, []string{a}, nil},
		{"Multiplexed/Conns=4", strategy.Multiplexed{Conns: 4}, []string{a}, nil},
		{"Pool", strategy.Pool{Size: 4}, []string{a}, nil},
		{"SlotGrouped", strategy.SlotGrouped{}, []string{a}, nil},
		{"cluster/Multiplexed", strategy.Multiplexed{}, []string{a, b}, nil},
		{"cluster/Pool", strategy.Pool{}, []string{a, b}, nil},
		{"cluster/SlotGrouped", strategy.SlotGrouped{}, []string{a, b}, nil},
		{"Sentinel/Multiplexed", strategy.Multiplexed{}, nil, sentinel(a, b)},
		{"Sentinel/Pool", strategy.Pool{}, nil, sentinel(a, b)},
		{"Near/Multiplexed", localcache.Near{}, []string{a}, nil},
		{"Near/Pool", localcache.Near{Inner: strategy.Pool{}}, []string{a}, nil},
		{"Near/SlotGrouped", localcache.Near{Inner: strategy.SlotGrouped{}}, []string{a, b}, nil},
		{"Near/Sentinel", localcache.Near{}, nil, sentinel(a)},
	}
}

// TestNewReturnsAtContextDeadlineAgainstStalledServer opens a client of
// every strategy against a server that accepts connections and never
// answers, under a context whose deadline comes long before DialTimeout.
// New must return at the context's deadline — the median of a few tries
// within openSlack after it, generous for a shared machine (a median of
// 25 ms was seen at a load average of 10 on 2 cores; a Near that made its
// 64 MiB store first, then closed it, came 80–110 ms late) — with
// an error that wraps ErrConnection and context.DeadlineExceeded, names
// the address and blames the context's deadline, not DialTimeout.
func TestNewReturnsAtContextDeadlineAgainstStalledServer(t *testing.T) {
	const (
		deadline  = 100 * time.Millisecond
		openSlack = 40 * time.Millisecond
		tries     = 5
	)
	a, b := stalledPeer(t), stalledPeer(t)
	// go-redis applies a context's deadline to a read only with
	// ContextTimeoutEnabled; its dial has its own DialTimeout.
	rdb := goredislib.NewClient(&goredislib.Options{Addr: a, ContextTimeoutEnabled: true})
	t.Cleanup(func() { rdb.Close() })
	cases := append(openCases(a, b), openCase{"goredis", goredis.Strategy{Client: rdb}, nil, nil})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var late []time.Duration
			var errs []error
			for range tries {
				ctx, cancel := context.WithTimeout(t.Context(), deadline)
				end, _ := ctx.Deadline()
				c, err := redisx.New(ctx, redisx.Options{Addrs: tc.addrs, Sentinel: tc.sentinel, Strategy: tc.s, DialTimeout: 5 * time.Second})
				late = append(late, time.Since(end))
				cancel()
				if err == nil {
					c.Close()
					t.Fatal("New against a stalled server succeeded")
				}
				errs = append(errs, err)
			}
			for _, err := range errs {
				msg := err.Error()
				switch {
				case !errors.Is(err, redisx.ErrConnection) || !errors.Is(err, context.DeadlineExceeded):
					t.Errorf("New = %v; want an error wrapping ErrConnection and context.DeadlineExceeded", err)
				case !strings.Contains(msg, a) && !strings.Contains(msg, b):
					t.Errorf("New = %q; want the stalled address named", msg)
				case strings.Contains(msg, "DialTimeout") || !strings.Contains(msg, "context's deadline"):
					t.Errorf("New = %q; want the context's deadline blamed, not DialTimeout", msg)
				default:
					continue
				}
				break
			}
			slices.Sort(late)
			if med := late[len(late)/2]; med > openSlack {
				t.Errorf("New returned a median %v after its context's deadline (tries: %v); want within %v", med, late, openSlack)
			}
		})
	}
}

// TestNewBlamesDialTimeoutAgainstStalledServer: against the same stalled
// server, with DialTimeout far shorter than the context's deadline, New
// fails with an error that blames DialTimeout and names the address. It
// wraps ErrConnection but no context error: a dial that timed out is a
// failure another attempt may not meet, and the context has not ended.
func TestNewBlamesDialTimeoutAgainstStalledServer(t *testing.T) {
	const dialTimeout = 100 * time.Millisecond
	a, b := stalledPeer(t), stalledPeer(t)
	for _, tc := range openCases(a, b) {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			c, err := redisx.New(ctx, redisx.Options{Addrs: tc.addrs, Sentinel: tc.sentinel, Strategy: tc.s, DialTimeout: dialTimeout})
			if err == nil {
				c.Close()
				t.Fatal("New against a stalled server succeeded")
			}
			msg := err.Error()
			switch {
			case !errors.Is(err, redisx.ErrConnection) || errors.Is(err, context.DeadlineExceeded):
				t.Errorf("New = %v; want an error wrapping ErrConnection and no context error", err)
			case !strings.Contains(msg, a) && !strings.Contains(msg, b):
				t.Errorf("New = %q; want the stalled address named", msg)
			case !strings.Contains(msg, "DialTimeout 100ms") || strings.Contains(msg, "context"):
				t.Errorf("New = %q; want DialTimeout blamed, not a context", msg)
			}
		})
	}
}
