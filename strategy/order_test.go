package strategy_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redisx-go/kit/internal/faultproxy"
	"github.com/redisx-go/kit/internal/launcher"
	"github.com/redisx-go/kit/redisx"
	"github.com/redisx-go/kit/strategy"
)

// orderSetup is a Multiplexed client through a proxy whose upstream is
// capped at rate bytes a second on each connection: a big value takes a
// while to reach the server, a small one does not.
func orderSetup(t *testing.T, rate int) (*redisx.Client, *faultproxy.Proxy) {
	t.Helper()
	srv := startPrivateServer(t, launcher.Options{})
	p, err := faultproxy.Start(context.Background(), srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	c := edgeNew(t, redisx.Options{Addrs: []string{p.Addr()}, Strategy: strategy.Multiplexed{}, ReadTimeout: 10 * time.Second})
	if err := c.Set(edgeCtx(t, 5*time.Second), "order:warm", []byte("v"), time.Minute); err != nil {
		t.Fatal(err)
	}
	p.Bandwidth(faultproxy.Upstream, rate)
	return c, p
}

// settle lifts the cap and gives the server time to apply whatever is
// still on its way.
func settle(t *testing.T, p *faultproxy.Proxy) {
	t.Helper()
	p.Bandwidth(faultproxy.Upstream, 0)
	time.Sleep(500 * time.Millisecond)
}

// TestBigSetAbandonedStaysBeforeNextCommand: a SET of a big value whose
// context ends while the value is still on its way may yet be applied;
// the caller's next SET of the key, a small value on the shared
// connection, must be applied after it, not overwritten by it.
func TestBigSetAbandonedStaysBeforeNextCommand(t *testing.T) {
	const rate = 256 << 10
	c, p := orderSetup(t, rate)
	big := bytes.Repeat([]byte("B"), 2*rate) // 2 s on the wire

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	err := c.Set(ctx, "order:k", big, time.Minute)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Set of %d bytes at %d B/s with a 100ms deadline = %v; want context.DeadlineExceeded", len(big), rate, err)
	}
	if err := c.Set(edgeCtx(t, 10*time.Second), "order:k", []byte("small"), time.Minute); err != nil {
		t.Fatalf("Set of a small value after the abandoned big one: %v", err)
	}
	settle(t, p)
	if v, err := c.Get(edgeCtx(t, 5*time.Second), "order:k"); err != nil || string(v) != "small" {
		t.Fatalf("Get after an abandoned big SET then a small SET = %d bytes %.10q, %v; want %q: the abandoned SET was applied last", len(v), v, err, "small")
	}
}

// TestSmallSetAbandonedStaysBeforeNextBigSet is the other way round: a
// small SET whose context ends while it waits behind a slow command on
// the shared connection, then a SET of a big value of the same key, which
// must not overtake it on a connection of its own.
func TestSmallSetAbandonedStaysBeforeNextBigSet(t *testing.T) {
	const rate = 256 << 10
	c, p := orderSetup(t, rate)
	// A slow command on the shared connection: MSET of a big value.
	slow := make(chan error, 1)
	go func() {
		slow <- c.MSet(edgeCtx(t, 10*time.Second), map[string][]byte{"order:slow": bytes.Repeat([]byte("S"), 2*rate)}, time.Minute)
	}()
	time.Sleep(50 * time.Millisecond)

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	err := c.Set(ctx, "order:k", []byte("small"), time.Minute)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Set behind a slow MSET with a 100ms deadline = %v; want context.DeadlineExceeded", err)
	}
	big := bytes.Repeat([]byte("B"), 32<<10)
	if err := c.Set(edgeCtx(t, 10*time.Second), "order:k", big, time.Minute); err != nil {
		t.Fatalf("Set of a big value after the abandoned small one: %v", err)
	}
	if err := <-slow; err != nil {
		t.Fatalf("the slow MSET: %v", err)
	}
	settle(t, p)
	if v, err := c.Get(edgeCtx(t, 5*time.Second), "order:k"); err != nil || !bytes.Equal(v, big) {
		t.Fatalf("Get after an abandoned small SET then a big SET = %d bytes %.10q, %v; want the %d big bytes: the abandoned SET was applied last", len(v), v, err, len(big))
	}
}
