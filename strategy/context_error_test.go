package strategy_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redisx-go/kit/internal/faultproxy"
	"github.com/redisx-go/kit/internal/launcher"
	"github.com/redisx-go/kit/redisx"
	"github.com/redisx-go/kit/strategy"
)

// TestContextEndIsTheSameErrorOnEveryTransport: a call whose context ends
// while the server does not answer gets the same error from Multiplexed
// and Pool — one that errors.Is finds context.DeadlineExceeded in, that
// names the server, and that says whether the request was sent: before a
// connection could be opened (the dial hangs), or after (the reply does
// not come).
func TestContextEndIsTheSameErrorOnEveryTransport(t *testing.T) {
	srv := launcher.Private(t, launcher.Options{})
	scenarios := []struct {
		name  string
		fault func(t *testing.T, p *faultproxy.Proxy, c *redisx.Client, transport string)
		want  string
	}{
		{"reply never comes", func(_ *testing.T, p *faultproxy.Proxy, _ *redisx.Client, _ string) { p.Blackhole(true) }, "waiting for the reply"},
		{"dial hangs", func(t *testing.T, p *faultproxy.Proxy, c *redisx.Client, transport string) {
			before := c.Stats().BrokenConns
			p.Reset()
			p.Blackhole(true)
			// The idle connection's reset is noticed, so that the call
			// dials: by the pool when it lends a connection idle that
			// long, by Multiplexed's watchdog on its own.
			if transport == "pool" {
				time.Sleep(50 * time.Millisecond)
				return
			}
			for deadline := time.Now().Add(5 * time.Second); c.Stats().BrokenConns == before; time.Sleep(time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("%s: the reset connection is not noticed after 5s", transport)
				}
			}
		}, "before the request was sent"},
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			msgs := map[string]string{}
			for _, s := range []struct {
				name string
				s    strategy.Strategy
			}{{"multiplexed", strategy.Multiplexed{}}, {"pool", strategy.Pool{Size: 2}}} {
				p, err := faultproxy.Start(context.Background(), srv.Addr())
				if err != nil {
					t.Fatal(err)
				}
				defer p.Close()
				c := edgeNew(t, redisx.Options{Addrs: []string{p.Addr()}, Strategy: s.s, DialTimeout: 5 * time.Second})
				sc.fault(t, p, c, s.name)
				ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
				_, err = c.Get(ctx, "k")
				cancel()
				if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, redisx.ErrConnection) {
					t.Fatalf("%s: Get with a 200ms deadline = %v; want an error wrapping context.DeadlineExceeded, not ErrConnection", s.name, err)
				}
				msg := err.Error()
				if !strings.HasPrefix(msg, "redisx: "+p.Addr()+": ") || !strings.Contains(msg, sc.want) {
					t.Errorf("%s: Get with a 200ms deadline = %q; want it to start with %q and say %q", s.name, msg, "redisx: "+p.Addr()+": ", sc.want)
				}
				msgs[s.name] = strings.ReplaceAll(msg, p.Addr(), "ADDR")
				p.Heal()
			}
			if msgs["multiplexed"] != msgs["pool"] {
				t.Errorf("the same situation, two errors: Multiplexed %q, Pool %q", msgs["multiplexed"], msgs["pool"])
			}
		})
	}
}

// TestDialTimeoutIsAConnectionFailure: a dial that times out on its own
// DialTimeout (a server that accepts and never answers) is a connection
// failure another attempt may not meet, not a context's end: it must not
// stop the Client's retries nor the cluster's map refresh, as a caller's
// context.DeadlineExceeded does.
func TestDialTimeoutIsAConnectionFailure(t *testing.T) {
	hole := blackHole(t)
	for _, s := range []strategy.Strategy{strategy.Multiplexed{}, strategy.Pool{Size: 1}} {
		_, err := s.Open(edgeCtx(t, 10*time.Second), strategy.Config{Addrs: []string{hole}, DialTimeout: 200 * time.Millisecond})
		if !errors.Is(err, redisx.ErrConnection) || errors.Is(err, context.DeadlineExceeded) || !strategy.Temporary(err) || !strategy.Unsent(err) {
			t.Errorf("%T.Open of a server that never answers = %v; want a temporary, unsent ErrConnection that is not context.DeadlineExceeded", s, err)
		}
		if err != nil && !strings.Contains(err.Error(), "DialTimeout") {
			t.Errorf("%T.Open of a server that never answers = %q; want it to name DialTimeout", s, err)
		}
	}
}
