package pool_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redisx-go/kit/internal/launcher"
	"github.com/redisx-go/kit/strategy"
)

// Pool: connections idle in the pool, and the pool at its open.

// TestPoolIdleConnectionsClosedByServer: connections the server closed
// while they sat idle in the pool (a restart, an idle timeout, CLIENT
// KILL) are never lent to a call: the next write succeeds on its one
// attempt, on a new connection, rather than failing after its request
// was sent.
func TestPoolIdleConnectionsClosedByServer(t *testing.T) {
	srv := launcher.Private(t, launcher.Options{})
	c := open(t, strategy.Pool{Size: 4, MinIdle: 4}, srv.Addr(), strategy.Config{})
	ctx := timeout(t, 10*time.Second)
	for c.Stats().Idle < 4 {
		if ctx.Err() != nil {
			t.Fatalf("the pool never had its 4 idle connections: %+v", c.Stats())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if _, err := srv.CLI(ctx, "CLIENT", "KILL", "TYPE", "normal"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // the connections are idle, and closed
	for i := range 3 {
		if err := c.Set(ctx, "idle", []byte("v"), 0); err != nil {
			t.Fatalf("Set %d after the server closed the idle connections: %v", i, err)
		}
	}
	if got := c.Stats().BrokenConns; got < 1 {
		t.Errorf("BrokenConns = %d, want the closed idle connections counted", got)
	}
}

// TestPoolIdleLongerThanReadTimeoutIsReused: a connection idle for longer
// than its last call's read deadline is healthy; the check before lending
// it must not mistake the expired deadline for a dead peer, destroy it
// and dial again.
func TestPoolIdleLongerThanReadTimeoutIsReused(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	c := open(t, strategy.Pool{Size: 2}, srv.Addr(), strategy.Config{ReadTimeout: 100 * time.Millisecond})
	before := c.Stats()
	for i := range 3 {
		time.Sleep(250 * time.Millisecond) // idle for 2.5 read timeouts
		// No deadline: ReadTimeout bounds the read, and leaves its
		// deadline on the socket.
		if _, err := c.Get(context.Background(), "idle"); err != nil && !errors.Is(err, strategy.ErrNotFound) {
			t.Fatalf("Get %d: %v", i, err)
		}
	}
	if st := c.Stats(); st.BrokenConns != before.BrokenConns || st.Dials != before.Dials {
		t.Errorf("after 3 calls, each after an idle spell longer than ReadTimeout: BrokenConns %d -> %d, Dials %d -> %d; want both unchanged",
			before.BrokenConns, st.BrokenConns, before.Dials, st.Dials)
	}
}

// TestPoolOpenWithMinIdleEqualToSize: with MinIdle = Size the health
// check's first top-up can fill the pool before Open dials its own
// connection; Open must then wait for one of those, not fail with
// puddle's "resource not available" (a suite run met it).
func TestPoolOpenWithMinIdleEqualToSize(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	for i := range 200 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		b, err := strategy.Pool{Size: 1, MinIdle: 1}.Open(ctx, strategy.Config{Addrs: []string{srv.Addr()}})
		cancel()
		if err != nil {
			t.Fatalf("Open %d of Pool{Size: 1, MinIdle: 1}: %v", i, err)
		}
		b.Close()
	}
}

// TestPoolLifetimeAtHealthCheck: an idle pooled connection past its age
// is closed by the health check, with nothing borrowed; the shorter of
// Pool.MaxLifetime and Config.MaxConnAge applies.
func TestPoolLifetimeAtHealthCheck(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	for _, tc := range []struct {
		name       string
		maxConnAge time.Duration
		p          strategy.Pool
	}{
		{"MaxConnAge", 100 * time.Millisecond,
			strategy.Pool{Size: 2, HealthCheckPeriod: 50 * time.Millisecond}},
		{"MaxLifetime shorter", time.Hour,
			strategy.Pool{Size: 2, HealthCheckPeriod: 50 * time.Millisecond, MaxLifetime: 100 * time.Millisecond}},
		{"MaxConnAge shorter", 100 * time.Millisecond,
			strategy.Pool{Size: 2, HealthCheckPeriod: 50 * time.Millisecond, MaxLifetime: time.Hour}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := open(t, tc.p, srv.Addr(), strategy.Config{MaxConnAge: tc.maxConnAge})
			if c.Stats().Conns == 0 {
				t.Fatal("no connection after Open")
			}
			for deadline := time.Now().Add(3 * time.Second); c.Stats().Conns > 0; time.Sleep(10 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("Stats().Conns = %d 3 s after the connections' age; want 0", c.Stats().Conns)
				}
			}
			if _, err := c.Get(timeout(t, 5*time.Second), "age:idle"); !errors.Is(err, strategy.ErrNotFound) {
				t.Errorf("Get after the idle connections expired = %v; want ErrNotFound", err)
			}
		})
	}
}
