package strategy_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redisx-go/kit/internal/faultproxy"
	"github.com/redisx-go/kit/internal/launcher"
	"github.com/redisx-go/kit/redisx"
	"github.com/redisx-go/kit/strategy"
)

// namedConns counts the server's client connections named name.
func namedConns(t *testing.T, srv *launcher.Server, name string) int {
	t.Helper()
	list, err := srv.CLI(edgeCtx(t, 5*time.Second), "CLIENT", "LIST")
	if err != nil {
		t.Fatalf("CLIENT LIST: %v", err)
	}
	n := 0
	for line := range strings.Lines(list) {
		if strings.Contains(" "+strings.TrimSpace(line)+" ", " name="+name+" ") {
			n++
		}
	}
	return n
}

// TestMaxConnAgeReplacesWithoutFailing runs 32 goroutines of Set and Get,
// without retries, on each transport with MaxConnAge 100 ms for over a
// second: no call fails, connections are dialled again and again, and the
// old ones are closed — the server never sees many more connections than
// the strategy keeps.
func TestMaxConnAgeReplacesWithoutFailing(t *testing.T) {
	const age = 100 * time.Millisecond
	srv := launcher.Standalone(t, launcher.Options{})
	for _, tc := range []struct {
		name  string
		s     strategy.Strategy
		conns int // the most the strategy keeps
	}{
		{"multiplexed", strategy.Multiplexed{Conns: 2}, 2},
		{"pool", strategy.Pool{Size: 4}, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := fmt.Sprintf("age-%s-%d", tc.name, time.Now().UnixNano())
			c := edgeNew(t, redisx.Options{Addrs: []string{srv.Addr()}, Strategy: tc.s, MaxConnAge: age, ClientName: name})
			dials := c.Stats().Dials
			var (
				calls, failed atomic.Int64
				first         atomic.Value
				stop          = make(chan struct{})
				wg            sync.WaitGroup
			)
			for g := range 32 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					key := fmt.Sprintf("age:%s:%d", tc.name, g)
					for i := 0; ; i++ {
						select {
						case <-stop:
							return
						default:
						}
						ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
						want := relValue(key, i)
						err := c.Set(ctx, key, []byte(want), time.Minute)
						var v []byte
						if err == nil {
							v, err = c.Get(ctx, key)
							if err == nil && string(v) != want {
								err = fmt.Errorf("got %q, want %q", v, want)
							}
						}
						cancel()
						calls.Add(2)
						if err != nil {
							failed.Add(1)
							first.CompareAndSwap(nil, err)
						}
					}
				}()
			}
			most := 0
			for end := time.Now().Add(12 * age); time.Now().Before(end); time.Sleep(age / 2) {
				most = max(most, namedConns(t, srv, name))
			}
			close(stop)
			wg.Wait()
			st := c.Stats()
			t.Logf("%d calls, %d failed; %d dials; at most %d connections seen", calls.Load(), failed.Load(), st.Dials-dials, most)
			if n := failed.Load(); n > 0 {
				t.Errorf("%d of %d calls failed while connections were replaced; first: %v", n, calls.Load(), first.Load())
			}
			if st.Dials-dials < 4 {
				t.Errorf("%d dials in %v with MaxConnAge %v; want connections replaced", st.Dials-dials, 12*age, age)
			}
			if st.DialErrors != 0 || st.BrokenConns != 0 {
				t.Errorf("Stats: %d dial errors, %d broken connections; want none", st.DialErrors, st.BrokenConns)
			}
			// A retired connection may linger while its last calls finish:
			// one per slot at most, beside the current ones.
			if most > 2*tc.conns {
				t.Errorf("the server saw %d connections at once; want at most %d: old connections are not closed", most, 2*tc.conns)
			}
		})
	}
}

// TestMaxConnAgeNeverCutsACall: a call in flight when its connection
// passes its age — its reply held 400 ms by a proxy, the age 100 ms —
// gets its reply. Multiplexed replaces the connection meanwhile (new
// calls go to a new one) and closes the old one after the reply; Pool
// replaces it at release. Either way the old connection is closed.
func TestMaxConnAgeNeverCutsACall(t *testing.T) {
	const (
		age   = 100 * time.Millisecond
		delay = 400 * time.Millisecond
	)
	srv := launcher.Standalone(t, launcher.Options{})
	for _, tc := range edgeTransports() {
		t.Run(tc.name, func(t *testing.T) {
			p, err := faultproxy.Start(context.Background(), srv.Addr())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { p.Close() })
			c := edgeNew(t, redisx.Options{Addrs: []string{p.Addr()}, Strategy: tc.s, MaxConnAge: age, ReadTimeout: 5 * time.Second})
			key := "age:slow:" + tc.name
			if err := c.Set(edgeCtx(t, 5*time.Second), key, []byte("v"), time.Minute); err != nil {
				t.Fatal(err)
			}
			// Only the reply to this Get is held: the delay is cleared once
			// the proxy holds it, so that a replacement dials at once.
			p.Delay(faultproxy.Downstream, delay)
			type result struct {
				v        []byte
				err      error
				accepted int64 // connections the proxy had accepted when the reply came
			}
			done := make(chan result, 1)
			accepted := p.Stats().Accepted
			start := time.Now()
			go func() {
				v, err := c.Get(edgeCtx(t, 5*time.Second), key)
				done <- result{v, err, p.Stats().Accepted}
			}()
			time.Sleep(50 * time.Millisecond)
			p.Delay(faultproxy.Downstream, 0)
			r := <-done
			took := time.Since(start)
			if r.err != nil || string(r.v) != "v" {
				t.Fatalf("Get whose connection passed its age during the call = %q, %v after %v; want %q", r.v, r.err, took, "v")
			}
			if took < delay {
				t.Fatalf("Get took %v; the proxy's delay of %v did not apply", took, delay)
			}
			if tc.name == "multiplexed" && r.accepted == accepted {
				t.Errorf("no replacement was dialled while the call was in flight past its connection's age")
			}
			if _, err := c.Get(edgeCtx(t, 5*time.Second), key); err != nil {
				t.Fatalf("Get after the replacement: %v", err)
			}
			if p.Stats().Accepted == accepted {
				t.Errorf("no new connection reached the proxy after the age passed")
			}
			want := 1 // Pool{Size: 1}, or Multiplexed's one shared connection
			for deadline := time.Now().Add(3 * time.Second); p.Stats().Active > want; time.Sleep(10 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("%d connections open 3 s after the replacement; want %d: the old one is not closed", p.Stats().Active, want)
				}
			}
		})
	}
}
