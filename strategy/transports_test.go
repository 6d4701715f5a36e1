package strategy_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redisx-go/kit/internal/launcher"
	"github.com/redisx-go/kit/redisx"
	"github.com/redisx-go/kit/strategy"
)

// What both transports must show alike: error texts, Stats, allocations.

// TestConnectionErrorHasOnePrefix checks the wording of the failure of a
// call in flight: ErrConnection, one "redisx:" — on the shared connection (Do and
// Get) and on the pool.
func TestConnectionErrorHasOnePrefix(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	for _, tc := range edgeTransports() {
		t.Run(tc.name, func(t *testing.T) {
			p := startProxy(t, srv.Addr())
			c := edgeNew(t, redisx.Options{Addrs: []string{p.addr()}, Strategy: tc.s, ReadTimeout: -1})
			release := p.holdReplies()
			defer release()
			bg := context.Background()
			calls := []func() error{func() error { _, err := c.Do(bg, "ECHO", "x"); return err }}
			if tc.name == "multiplexed" {
				calls = append(calls, func() error { _, err := c.Get(bg, "edge:k"); return err })
			} // a pool of one connection serves one call at a time
			results := make(chan error, len(calls))
			for _, call := range calls {
				go func() { results <- call() }()
			}
			inFlight := func() int { st := c.Stats(); return int(st.Pending) + st.InUse }
			for deadline := time.Now().Add(5 * time.Second); inFlight() < len(calls); time.Sleep(time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("%d of %d calls in flight after 5s", inFlight(), len(calls))
				}
			}
			p.drop()
			for range calls {
				err := <-results
				if !errors.Is(err, redisx.ErrConnection) {
					t.Fatalf("call on a cut connection: error = %v; want ErrConnection", err)
				}
				if n := strings.Count(err.Error(), "redisx:"); n != 1 {
					t.Errorf("error %q has %d \"redisx:\" prefixes, want 1", err, n)
				}
			}
		})
	}
}

// TestStatsFreshAndClosed checks Stats on a new client and after Close.
func TestStatsFreshAndClosed(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	for _, tc := range []struct {
		name, want string
		s          strategy.Strategy
	}{
		{"multiplexed", "multiplexed", strategy.Multiplexed{Conns: 2}},
		{"pool", "pool", strategy.Pool{Size: 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := redisx.New(edgeCtx(t, 10*time.Second), redisx.Options{Addrs: []string{srv.Addr()}, Strategy: tc.s})
			if err != nil {
				t.Fatal(err)
			}
			st := c.Stats()
			if st.Strategy != tc.want || st.Conns < 1 || st.Pending != 0 || st.InUse != 0 || st.BrokenConns != 0 || st.Dials < 1 || st.DialErrors != 0 {
				t.Errorf("Stats of a new client = %+v; want Strategy %q, Conns ≥ 1, Dials ≥ 1, nothing pending, in use or broken", st.Stats, tc.want)
			}
			if tc.name == "pool" && (st.MaxConns != 4 || st.Idle+st.InUse != st.Conns) {
				t.Errorf("Stats of a new pool = %+v; want MaxConns 4, Idle+InUse = Conns", st.Stats)
			}
			if _, err := c.Do(edgeCtx(t, 5*time.Second), "BLPOP", "edge:stats", "0.01"); err != nil {
				t.Fatal(err)
			}
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			st = c.Stats()
			if st.Strategy != tc.want || st.Conns != 0 || st.Pending != 0 || st.InUse != 0 || st.Idle != 0 {
				t.Errorf("Stats after Close = %+v; want Strategy %q and no connection", st.Stats, tc.want)
			}
		})
	}
}

// TestAllocationsPerCallOnTheTransports holds the transports to their
// measured allocation counts below the facade's bar (P7): a GET
// allocates its value only, a SET nothing.
func TestAllocationsPerCallOnTheTransports(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are distorted by the race detector; run without -race (make allocs)")
	}
	srv := launcher.Standalone(t, launcher.Options{})
	for _, tc := range edgeTransports() {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			b, err := tc.s.Open(ctx, strategy.Config{Addrs: []string{srv.Addr()}, DialTimeout: 5 * time.Second, ReadTimeout: 3 * time.Second, WriteTimeout: 3 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			v := make([]byte, 64)
			if err := b.Set(ctx, "edge:allocs", v, 0); err != nil {
				t.Fatal(err)
			}
			get := testing.AllocsPerRun(2000, func() {
				if _, err := b.Get(ctx, "edge:allocs"); err != nil {
					t.Fatal(err)
				}
			})
			set := testing.AllocsPerRun(2000, func() {
				if err := b.Set(ctx, "edge:allocs", v, time.Minute); err != nil {
					t.Fatal(err)
				}
			})
			if get > 1 || set > 0 {
				t.Errorf("Get allocates %.2f, Set %.2f times per call; want ≤ 1 and 0", get, set)
			}
		})
	}
}
