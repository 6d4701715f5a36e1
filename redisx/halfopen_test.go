package redisx_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redisx-go/kit/internal/faultproxy"
	"github.com/redisx-go/kit/internal/launcher"
	"github.com/redisx-go/kit/localcache"
	"github.com/redisx-go/kit/redisx"
	"github.com/redisx-go/kit/strategy"
)

// TestHalfOpenConnectionsCostOneReadTimeout: every connection a client
// holds goes half-open at once (a NAT or balancer on the way forgot them;
// the server and new connections are fine) after 8 callers had it open
// several. Callers without a deadline then get their replies, by the
// retry of the call that met the silence, about one read timeout later:
// not a failure after two, the retry having waited on another connection
// as silent as the first.
func TestHalfOpenConnectionsCostOneReadTimeout(t *testing.T) {
	const (
		readTimeout = 500 * time.Millisecond
		callers     = 8
		bound       = 2*readTimeout + 200*time.Millisecond // the watchdog notices within 1.5 read timeouts
	)
	srv := launcher.Standalone(t, launcher.Options{})
	for _, tc := range []struct {
		name string
		s    strategy.Strategy
	}{{"multiplexed", strategy.Multiplexed{}}, {"near", localcache.Near{}}, {"pool", strategy.Pool{Size: callers}}} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := faultproxy.Start(context.Background(), srv.Addr())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { p.Close() })
			ctx := context.Background()
			c, err := redisx.New(ctx, redisx.Options{Addrs: []string{p.Addr()}, Strategy: tc.s, ReadTimeout: readTimeout})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			key := func(g int) string { return fmt.Sprintf("halfopen:%s:%d", tc.name, g) }
			// cold(g) is read only once the connections are half-open: a
			// near-cache must read it from the server.
			cold := func(g int) string { return key(g) + ":cold" }
			var wg sync.WaitGroup
			for g := range callers {
				if err := c.MSet(ctx, map[string][]byte{key(g): []byte("v"), cold(g): []byte("v")}, time.Minute); err != nil {
					t.Fatal(err)
				}
				wg.Go(func() {
					// Writes: a near-cache sends them all to the server.
					for start := time.Now(); time.Since(start) < 300*time.Millisecond; {
						c.Set(ctx, key(g), []byte("v"), time.Minute)
					}
				})
			}
			wg.Wait()

			stranded := p.Strand()
			took := make([]time.Duration, callers)
			errs := make([]error, callers)
			start := time.Now()
			for g := range callers {
				wg.Go(func() {
					_, errs[g] = c.Get(ctx, cold(g))
					took[g] = time.Since(start)
				})
			}
			wg.Wait()
			t.Logf("%d connections stranded; the Gets returned after %v", stranded, took)
			for g := range callers {
				if errs[g] != nil || took[g] > bound {
					t.Errorf("Get %d without a deadline = %v after %v; want its value within %v (read timeout %v)",
						g, errs[g], took[g].Round(time.Millisecond), bound, readTimeout)
				}
			}
		})
	}
}
