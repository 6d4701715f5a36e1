package redisx_test

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redisx-go/kit/internal/launcher"
	"github.com/redisx-go/kit/localcache"
	"github.com/redisx-go/kit/redisx"
	"github.com/redisx-go/kit/strategy"
	"github.com/redisx-go/kit/strategy/strategytest"
)

// TestOpenOverSentinel checks what New does with Options.Sentinel: the
// sentinels' own password and the data nodes' are told apart, a sentinel
// that accepts connections and never answers does not keep the others
// from being heard, and what cannot work is refused clearly.
func TestOpenOverSentinel(t *testing.T) {
	if err := launcher.Available(); err != nil {
		t.Skip(err)
	}
	g, err := launcher.StartSentinel(t.Context(), launcher.SentinelOptions{
		Replicas: 1, Sentinels: 2, Password: "data-secret", SentinelPassword: "sentinel-secret",
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Stop() })
	ctx := t.Context()
	options := func() redisx.Options {
		return redisx.Options{
			Sentinel:    &redisx.SentinelOptions{Master: g.Name(), Addrs: g.SentinelAddrs(), Password: "sentinel-secret"},
			Password:    "data-secret",
			DialTimeout: 500 * time.Millisecond,
		}
	}

	t.Run("Passwords", func(t *testing.T) {
		c, err := redisx.New(ctx, options())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if err := c.Set(ctx, "k", []byte("v"), 0); err != nil {
			t.Fatal(err)
		}
		o := options()
		o.Sentinel.Password = "wrong"
		if c, err := redisx.New(ctx, o); err == nil || !errors.Is(err, redisx.ErrAuth) || strings.Contains(err.Error(), "wrong") {
			if c != nil {
				c.Close()
			}
			t.Errorf("New with a wrong sentinel password: %v; want ErrAuth, without the password", err)
		}
		o = options()
		o.Password = "wrong"
		if c, err := redisx.New(ctx, o); err == nil || !errors.Is(err, redisx.ErrAuth) {
			if c != nil {
				c.Close()
			}
			t.Errorf("New with a wrong data password: %v; want ErrAuth", err)
		}
	})

	t.Run("SilentSentinel", func(t *testing.T) {
		// go-redis#3652: a sentinel that times out must not keep the
		// client from asking the others.
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				defer c.Close() // accepted, never answered
			}
		}()
		o := options()
		o.Sentinel.Addrs = append([]string{l.Addr().String()}, o.Sentinel.Addrs...)
		start := time.Now()
		c, err := redisx.New(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if d := time.Since(start); d > 3*o.DialTimeout {
			t.Errorf("New took %v with a silent sentinel, DialTimeout %v", d, o.DialTimeout)
		}
		if err := c.Set(ctx, "k", []byte("v"), 0); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("StaleSentinel", func(t *testing.T) {
		// Lettuce#661: a sentinel cut off from the others names a master
		// they failed over long ago — here, one of another group under
		// the same name, still at configuration epoch 0, which is a
		// master and takes the same password. The newest epoch wins,
		// whichever sentinel answers first.
		other, err := launcher.StartSentinel(ctx, launcher.SentinelOptions{
			Replicas: 1, Sentinels: 1, Password: "data-secret", SentinelPassword: "sentinel-secret",
		})
		if err != nil {
			t.Fatal(err)
		}
		defer other.Stop()
		m, err := g.Failover(ctx) // configuration epoch 1
		if err != nil {
			t.Fatal(err)
		}
		o := options()
		o.Sentinel.Addrs = append(other.SentinelAddrs(), o.Sentinel.Addrs...)
		c, err := redisx.New(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if got := c.Backend().(interface{ Master() string }).Master(); got != m.Addr() {
			t.Errorf("the client follows %s, want %s, the master of the newest epoch", got, m.Addr())
		}
	})

	t.Run("Refused", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			edit func(*redisx.Options)
			want error
		}{
			{"unknown master", func(o *redisx.Options) { o.Sentinel.Master = "nosuch" }, redisx.ErrConnection},
			{"no sentinel answers", func(o *redisx.Options) { o.Sentinel.Addrs = []string{"127.0.0.1:1"} }, redisx.ErrConnection},
			{"no master name", func(o *redisx.Options) { o.Sentinel.Master = "" }, redisx.ErrInvalidArgument},
			{"no sentinel", func(o *redisx.Options) { o.Sentinel.Addrs = nil }, redisx.ErrInvalidArgument},
			{"bad sentinel address", func(o *redisx.Options) { o.Sentinel.Addrs = []string{"nope"} }, redisx.ErrInvalidArgument},
			{"SlotGrouped", func(o *redisx.Options) { o.Strategy = strategy.SlotGrouped{} }, redisx.ErrInvalidArgument},
			{"Near over SlotGrouped", func(o *redisx.Options) { o.Strategy = localcache.Near{Inner: strategy.SlotGrouped{}} }, redisx.ErrInvalidArgument},
		} {
			o := options()
			tc.edit(&o)
			c, err := redisx.New(ctx, o)
			if err == nil {
				c.Close()
			}
			if !errors.Is(err, tc.want) || strings.Contains(err.Error(), "secret") {
				t.Errorf("%s: New = %v; want %v, without a password", tc.name, err, tc.want)
			}
		}
	})

	// The Backend contract (strategytest), on each strategy's Backend
	// opened over the sentinels, without the facade's checks in front.
	for _, st := range []strategy.Strategy{strategy.Multiplexed{}, strategy.Pool{Size: 4}, localcache.Near{Inner: strategy.Multiplexed{}, MaxBytes: 1 << 20}} {
		t.Run(fmt.Sprintf("Backend/%T", st), func(t *testing.T) {
			strategytest.RunContractOn(t, st.Open, strategy.Config{
				Sentinel:    &strategy.SentinelConfig{Master: g.Name(), Addrs: g.SentinelAddrs(), Password: "sentinel-secret"},
				Password:    "data-secret",
				DialTimeout: 500 * time.Millisecond,
				ReadTimeout: 3 * time.Second,
			})
		})
	}
}
