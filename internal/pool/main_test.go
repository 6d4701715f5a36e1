package pool_test

import (
	"context"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/redisx-go/kit/strategy"
)

// The package's tests open the Pool transport as the facade does,
// strategy.Pool's Open, and call the Backend directly: what they see is
// one attempt on the pool, with no retry in front. Servers come from
// launcher.

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// timeout returns a context that ends after d or with the test.
func timeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// pooled is a Pool backend with the optional interfaces its tests call.
type pooled interface {
	strategy.Backend
	strategy.Doer
	strategy.Statser
}

// open opens p on addr with cfg, whose zero timeouts are the facade's
// defaults (DialTimeout 5 s, ReadTimeout and WriteTimeout 3 s), and
// closes it when the test ends.
func open(t *testing.T, p strategy.Pool, addr string, cfg strategy.Config) pooled {
	t.Helper()
	cfg.Addrs = []string{addr}
	if cfg.DialTimeout == 0 {
		cfg.DialTimeout = 5 * time.Second
	}
	if cfg.ReadTimeout == 0 {
		cfg.ReadTimeout = 3 * time.Second
	}
	if cfg.WriteTimeout == 0 {
		cfg.WriteTimeout = 3 * time.Second
	}
	b, err := p.Open(timeout(t, 10*time.Second), cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { b.Close() })
	pb, ok := b.(pooled)
	if !ok {
		t.Fatalf("Pool's Backend %T has no Do or Stats", b)
	}
	return pb
}
