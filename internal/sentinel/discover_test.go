package sentinel_test

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redisx-go/kit/internal/launcher"
	"github.com/redisx-go/kit/localcache"
	"github.com/redisx-go/kit/strategy"
	"github.com/redisx-go/kit/strategy/strategytest"
)

// TestOpenOverSentinel checks what a strategy's Open does with
// Config.Sentinel: the sentinels' own password and the data nodes' are
// told apart, a sentinel that accepts connections and never answers does
// not keep the others from being heard, the master of the newest epoch is
// followed, and what cannot work is refused clearly.
func TestOpenOverSentinel(t *testing.T) {
	g := launcher.SentinelForTest(t, launcher.SentinelOptions{
		Replicas: 1, Sentinels: 2, Password: "data-secret", SentinelPassword: "sentinel-secret",
	})
	ctx := t.Context()
	options := func() strategy.Config {
		cfg := config(g)
		cfg.Sentinel.Password = "sentinel-secret"
		cfg.Password = "data-secret"
		cfg.DialTimeout = 500 * time.Millisecond
		return cfg
	}
	newBackend := func(cfg strategy.Config) (strategy.Backend, error) {
		return strategy.Multiplexed{}.Open(ctx, cfg)
	}

	t.Run("Passwords", func(t *testing.T) {
		c, err := newBackend(options())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if err := c.Set(ctx, "k", []byte("v"), 0); err != nil {
			t.Fatal(err)
		}
		o := options()
		o.Sentinel.Password = "wrong"
		if c, err := newBackend(o); err == nil || !errors.Is(err, strategy.ErrAuth) || strings.Contains(err.Error(), "wrong") {
			if c != nil {
				c.Close()
			}
			t.Errorf("New with a wrong sentinel password: %v; want ErrAuth, without the password", err)
		}
		o = options()
		o.Password = "wrong"
		if c, err := newBackend(o); err == nil || !errors.Is(err, strategy.ErrAuth) {
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
		c, err := newBackend(o)
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
		other := launcher.SentinelForTest(t, launcher.SentinelOptions{
			Replicas: 1, Sentinels: 1, Password: "data-secret", SentinelPassword: "sentinel-secret",
		})
		m, err := g.Failover(ctx) // configuration epoch 1
		if err != nil {
			t.Fatal(err)
		}
		o := options()
		o.Sentinel.Addrs = append(other.SentinelAddrs(), o.Sentinel.Addrs...)
		c, err := newBackend(o)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if got := c.(interface{ Master() string }).Master(); got != m.Addr() {
			t.Errorf("the client follows %s, want %s, the master of the newest epoch", got, m.Addr())
		}
	})

	t.Run("Refused", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			s    strategy.Strategy
			edit func(*strategy.Config)
			want error
		}{
			{"unknown master", strategy.Multiplexed{}, func(o *strategy.Config) { o.Sentinel.Master = "nosuch" }, strategy.ErrConnection},
			{"no sentinel answers", strategy.Multiplexed{}, func(o *strategy.Config) { o.Sentinel.Addrs = []string{"127.0.0.1:1"} }, strategy.ErrConnection},
			{"no master name", strategy.Multiplexed{}, func(o *strategy.Config) { o.Sentinel.Master = "" }, strategy.ErrInvalidArgument},
			{"no sentinel", strategy.Multiplexed{}, func(o *strategy.Config) { o.Sentinel.Addrs = nil }, strategy.ErrInvalidArgument},
			{"bad sentinel address", strategy.Multiplexed{}, func(o *strategy.Config) { o.Sentinel.Addrs = []string{"nope"} }, strategy.ErrInvalidArgument},
			{"SlotGrouped", strategy.SlotGrouped{}, func(*strategy.Config) {}, strategy.ErrInvalidArgument},
			{"Near over SlotGrouped", localcache.Near{Inner: strategy.SlotGrouped{}}, func(*strategy.Config) {}, strategy.ErrInvalidArgument},
		} {
			o := options()
			tc.edit(&o)
			c, err := tc.s.Open(ctx, o)
			if err == nil {
				c.Close()
			}
			if !errors.Is(err, tc.want) || strings.Contains(err.Error(), "secret") {
				t.Errorf("%s: Open = %v; want %v, without a password", tc.name, err, tc.want)
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
