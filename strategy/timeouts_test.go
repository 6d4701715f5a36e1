package strategy_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	redigo "github.com/gomodule/redigo/redis"
	goredis "github.com/redis/go-redis/v9"

	"github.com/redisx-go/kit/internal/launcher"
	"github.com/redisx-go/kit/redisx"
	"github.com/redisx-go/kit/strategy"
)

// The edges of the contract that are about time on the two transports: a
// blocking command extends the read timeout, the ReadTimeout rule, and the
// MaxPending wait for room.

// pushLater pushes v onto list after d (measured from now), from a client
// of its own.
func pushLater(t *testing.T, addr, list, v string, d time.Duration) {
	rdb := goredis.NewClient(&goredis.Options{Addr: addr, Protocol: 2, DisableIdentity: true})
	t.Cleanup(func() { rdb.Close() })
	time.AfterFunc(d, func() { rdb.RPush(context.Background(), list, v) })
}

// TestBlockingCommandExtendsReadTimeout checks that a blocking command's
// own block time extends ReadTimeout, block 0 lifts it, and the
// connection survives for the next call.
func TestBlockingCommandExtendsReadTimeout(t *testing.T) {
	const rt = 300 * time.Millisecond
	for _, tc := range edgeTransports() {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := launcher.Private(t, launcher.Options{})
			c := edgeNew(t, redisx.Options{Addrs: []string{srv.Addr()}, Strategy: tc.s, ReadTimeout: rt})
			bg := context.Background()
			// Open the blocking connection before counting.
			if _, err := c.Do(bg, "BLPOP", "edge:warm", "0.01"); err != nil {
				t.Fatalf("BLPOP warm-up: %v", err)
			}
			before := c.Stats()

			pushLater(t, srv.Addr(), "edge:q4", "late", 2*rt)
			start := time.Now()
			v, err := redigo.Strings(c.Do(bg, "BLPOP", "edge:q4", 4*rt.Seconds()))
			if err != nil || len(v) != 2 || v[1] != "late" {
				t.Fatalf("BLPOP q %v with ReadTimeout %v, pushed after %v = %q, %v (after %v); want [q late]", 4*rt.Seconds(), rt, 2*rt, v, err, time.Since(start))
			}

			start = time.Now()
			got, err := c.Do(bg, "BLPOP", "edge:empty", fmt.Sprint(3*rt.Seconds()))
			if took := time.Since(start); err != nil || got != nil || took < 3*rt-50*time.Millisecond {
				t.Fatalf("BLPOP empty %v with ReadTimeout %v = %v, %v after %v; want nil, nil after the block time", 3*rt.Seconds(), rt, got, err, took)
			}

			pushLater(t, srv.Addr(), "edge:q0", "forever", 3*rt)
			v, err = redigo.Strings(c.Do(bg, "BLPOP", "edge:q0", 0))
			if err != nil || len(v) != 2 || v[1] != "forever" {
				t.Fatalf("BLPOP q 0 with ReadTimeout %v, pushed after %v = %q, %v; want [q forever]", rt, 3*rt, v, err)
			}

			// The millisecond block times: XREAD BLOCK and WAIT (no
			// replica acknowledges, so WAIT 1 waits its full timeout).
			start = time.Now()
			got, err = c.Do(bg, "XREAD", "COUNT", 1, "BLOCK", (3 * rt).Milliseconds(), "STREAMS", "edge:stream", "$")
			if took := time.Since(start); err != nil || got != nil || took < 3*rt-50*time.Millisecond {
				t.Fatalf("XREAD BLOCK %d with ReadTimeout %v = %v, %v after %v; want nil, nil after the block time", (3 * rt).Milliseconds(), rt, got, err, took)
			}
			n, err := redigo.Int64(c.Do(bg, "WAIT", 1, (3 * rt).Milliseconds()))
			if err != nil || n != 0 {
				t.Fatalf("WAIT 1 %d with ReadTimeout %v = %d, %v; want 0, nil", (3 * rt).Milliseconds(), rt, n, err)
			}

			after := c.Stats()
			if after.BrokenConns != before.BrokenConns || after.Dials != before.Dials {
				t.Fatalf("blocking commands within their block time broke or replaced connections: BrokenConns %d → %d, Dials %d → %d",
					before.BrokenConns, after.BrokenConns, before.Dials, after.Dials)
			}
		})
	}
}

// TestReadTimeoutRule checks the ReadTimeout rule on both transports, both
// ways: a call with a context deadline waits until that deadline even past
// ReadTimeout; a call without one fails with ErrConnection once
// ReadTimeout has passed with no reply — not sooner, and not later because
// an earlier caller's deadline was longer — and the next call works.
func TestReadTimeoutRule(t *testing.T) {
	if launcher.External() {
		t.Skip("needs DEBUG SLEEP, which an external server may refuse")
	}
	const rt = 500 * time.Millisecond
	for _, tc := range edgeTransports() {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := debugServer(t)
			c := edgeNew(t, redisx.Options{Addrs: []string{srv.Addr()}, Strategy: tc.s, ReadTimeout: rt})

			// A deadline longer than ReadTimeout is honoured.
			ctx := edgeCtx(t, 10*time.Second)
			start := time.Now()
			if v, err := c.Do(ctx, "DEBUG", "SLEEP", 3*rt.Seconds()); err != nil || v != "OK" {
				t.Fatalf("DEBUG SLEEP %v with a 10s context and ReadTimeout %v = %v, %v (after %v); want OK", 3*rt.Seconds(), rt, v, err, time.Since(start))
			}
			broken := c.Stats().BrokenConns

			// An earlier call's long deadline must not carry over: first a
			// call with a 1h deadline, then one without.
			long, cancel := context.WithTimeout(context.Background(), time.Hour)
			defer cancel()
			if _, err := c.Get(long, "edge:rule"); !errors.Is(err, redisx.ErrNotFound) {
				t.Fatalf("Get with a 1h deadline = %v; want ErrNotFound", err)
			}
			start = time.Now()
			_, err := c.Do(context.Background(), "DEBUG", "SLEEP", 5*rt.Seconds())
			took := time.Since(start)
			if !errors.Is(err, redisx.ErrConnection) {
				t.Fatalf("DEBUG SLEEP %v without deadline, ReadTimeout %v = %v after %v; want ErrConnection", 5*rt.Seconds(), rt, err, took)
			}
			if n := strings.Count(err.Error(), "redisx:"); n != 1 {
				t.Errorf("error %q has %d \"redisx:\" prefixes, want 1", err, n)
			}
			if took < rt || took > 4*rt {
				t.Errorf("DEBUG SLEEP without deadline failed after %v; want between ReadTimeout %v and %v", took, rt, 4*rt)
			}
			t.Logf("no deadline: failed after %v: %v", took.Round(time.Millisecond), err)

			// The next call works (once the server wakes up).
			if err := c.Set(edgeCtx(t, 10*time.Second), "edge:rule", []byte("after"), time.Minute); err != nil {
				t.Fatalf("Set after the timed-out call: %v", err)
			}
			if v, err := c.Get(edgeCtx(t, 5*time.Second), "edge:rule"); err != nil || string(v) != "after" {
				t.Fatalf("Get after the timed-out call = %q, %v; want %q", v, err, "after")
			}
			if c.Stats().BrokenConns == broken {
				t.Errorf("BrokenConns did not count the connection discarded for its overdue reply")
			}
		})
	}
}

// inWaitRoom counts the goroutines waiting for room on a full
// multiplexed connection.
func inWaitRoom() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return bytes.Count(buf[:n], []byte("(*muxConn).waitRoom("))
		}
		buf = make([]byte, 2*len(buf))
	}
}

// TestMaxPendingWaitsForRoom checks that, with MaxPending 4, 200 goroutines
// all get through; a waiter whose context ends leaves at once with the
// context's error; waiters are woken with ErrConnection when the
// connection fails.
func TestMaxPendingWaitsForRoom(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	t.Run("all-succeed", func(t *testing.T) {
		c := edgeNew(t, redisx.Options{Addrs: []string{srv.Addr()}, Strategy: strategy.Multiplexed{MaxPending: 4}})
		ctx := edgeCtx(t, 30*time.Second)
		var wg sync.WaitGroup
		errs := make(chan error, 200)
		for g := 0; g < 200; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				key := fmt.Sprintf("edge:room:%d", g)
				for i := 0; i < 20; i++ {
					want := relValue(key, i)
					if err := c.Set(ctx, key, []byte(want), time.Minute); err != nil {
						errs <- fmt.Errorf("Set(%q): %w", key, err)
						return
					}
					if v, err := c.Get(ctx, key); err != nil || string(v) != want {
						errs <- fmt.Errorf("Get(%q) = %q, %v; want %q", key, v, err, want)
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	})
	t.Run("waiters-leave-and-wake", func(t *testing.T) {
		p := startProxy(t, srv.Addr())
		c := edgeNew(t, redisx.Options{Addrs: []string{p.addr()}, Strategy: strategy.Multiplexed{MaxPending: 4}, ReadTimeout: -1})
		release := p.holdReplies()
		defer release()
		bg := context.Background()
		results := make(chan error, 20)
		for i := 0; i < 4; i++ {
			go func() { _, err := c.Get(bg, "edge:held"); results <- err }()
		}
		for deadline := time.Now().Add(5 * time.Second); c.Stats().Pending < 4; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("4 calls not pending after 5s: %+v", c.Stats().Stats)
			}
		}

		ctx, cancel := context.WithTimeout(bg, 100*time.Millisecond)
		start := time.Now()
		_, err := c.Get(ctx, "edge:held")
		cancel()
		if took := time.Since(start); !errors.Is(err, context.DeadlineExceeded) || took > 2*time.Second {
			t.Fatalf("Get with 100ms deadline on a full connection = %v after %v; want DeadlineExceeded promptly", err, took)
		}

		const waiters = 10
		for i := 0; i < waiters; i++ {
			go func() { _, err := c.Get(bg, "edge:held"); results <- err }()
		}
		for deadline := time.Now().Add(5 * time.Second); inWaitRoom() < waiters; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%d of %d callers waiting for room after 5s", inWaitRoom(), waiters)
			}
		}
		p.drop()
		timeout := time.After(3 * time.Second)
		for i := 0; i < 4+waiters; i++ {
			select {
			case err := <-results:
				if !errors.Is(err, redisx.ErrConnection) {
					t.Errorf("call on a full connection that failed: error = %v; want ErrConnection", err)
				}
			case <-timeout:
				t.Fatalf("%d of %d calls still waiting 3s after their connection failed", 4+waiters-i, 4+waiters)
			}
		}
	})
}

// TestReadTimeoutNeverEarly is the "not sooner" half of the ReadTimeout
// rule when the watchdog runs late. A ticker's value is the time the tick
// was due, which can be well before the goroutine receives it; a
// watchdog that took it for "now" could date a call's quiet period from
// before the call was sent and fail it early (CI saw 499.97 ms for a
// ReadTimeout of 500 ms). Busy goroutines here make ticks late, and every
// call without a deadline, against a server whose replies are held back,
// must fail no sooner than ReadTimeout.
func TestReadTimeoutNeverEarly(t *testing.T) {
	const rt = 20 * time.Millisecond // the watchdog ticks every 10 ms
	srv := launcher.Private(t, launcher.Options{})
	p := startProxy(t, srv.Addr())
	c := edgeNew(t, redisx.Options{Addrs: []string{p.addr()}, Strategy: strategy.Multiplexed{}, ReadTimeout: rt})

	early := 0
	const calls = 60
	for i := range calls {
		if err := c.Set(edgeCtx(t, 10*time.Second), "edge:early", []byte("v"), time.Minute); err != nil {
			t.Fatalf("call %d: Set with replies flowing: %v", i, err)
		}
		release := p.holdReplies()
		stop := spin(2 * runtime.GOMAXPROCS(0))
		time.Sleep(3 * rt) // until the watchdog runs late
		start := time.Now()
		_, err := c.Get(context.Background(), "edge:early")
		took := time.Since(start)
		stop()
		release()
		if !errors.Is(err, redisx.ErrConnection) {
			t.Fatalf("call %d: Get without deadline, replies held, ReadTimeout %v = %v after %v; want ErrConnection", i, rt, err, took)
		}
		if took < rt {
			early++
			t.Errorf("call %d: failed after %v, sooner than ReadTimeout %v: %v", i, took, rt, err)
		}
	}
	t.Logf("%d of %d calls failed sooner than ReadTimeout", early, calls)
}

// spin keeps n goroutines busy until the returned function is called (and
// has waited for them): the other goroutines of the test run late.
func spin(n int) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				for i := 0; i < 1e5; i++ {
				}
			}
		}()
	}
	return func() { close(done); wg.Wait() }
}

// TestReadTimeoutAfterIdle is the "not later" half of the ReadTimeout rule
// on a connection that went idle: an earlier call's long deadline must not
// carry over to a call without one made after a pause, when the drainer
// watches the idle socket and no caller reads.
func TestReadTimeoutAfterIdle(t *testing.T) {
	const rt = 100 * time.Millisecond
	for _, tc := range edgeTransports() {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := launcher.Private(t, launcher.Options{})
			p := startProxy(t, srv.Addr())
			c := edgeNew(t, redisx.Options{Addrs: []string{p.addr()}, Strategy: tc.s, ReadTimeout: rt})

			long, cancel := context.WithTimeout(context.Background(), time.Hour)
			defer cancel()
			if _, err := c.Get(long, "edge:idle"); !errors.Is(err, redisx.ErrNotFound) {
				t.Fatalf("Get with a 1h deadline = %v; want ErrNotFound", err)
			}
			time.Sleep(3 * rt) // a few watchdog ticks with nothing in flight

			release := p.holdReplies()
			defer release()
			ctx := cancelledAfter(t, 10*rt)
			start := time.Now()
			_, err := c.Get(ctx, "edge:idle")
			took := time.Since(start)
			if !errors.Is(err, redisx.ErrConnection) {
				t.Fatalf("Get without deadline after a pause, replies held, ReadTimeout %v = %v after %v; want ErrConnection", rt, err, took)
			}
			if took < rt || took > 4*rt {
				t.Errorf("Get without deadline after a pause failed after %v; want between ReadTimeout %v and %v", took, rt, 4*rt)
			}
		})
	}
}

// TestReadTimeoutAfterAbandonedHead: on a shared connection, a call with
// a long deadline whose caller gives up (a cancel) leaves its reply still
// to come at the head of the stream, and nobody waits for it any more. A
// call without a deadline queued behind it must not wait for that long
// deadline: the connection fails under the ReadTimeout rule, as for a
// head without one. (Pool has nothing queued behind: it discards a
// connection whose call was cancelled mid-flight.)
func TestReadTimeoutAfterAbandonedHead(t *testing.T) {
	const rt = 100 * time.Millisecond
	for _, tc := range []struct {
		name string
		lead bool // the abandoned call's caller reads its own reply
	}{{"leading", true}, {"drainer-reads", false}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := launcher.Private(t, launcher.Options{})
			p := startProxy(t, srv.Addr())
			c := edgeNew(t, redisx.Options{Addrs: []string{p.addr()}, Strategy: strategy.Multiplexed{}, ReadTimeout: rt})
			if err := c.Set(edgeCtx(t, 10*time.Second), "edge:abandon", []byte("v"), time.Minute); err != nil {
				t.Fatalf("Set with replies flowing: %v", err)
			}

			if !tc.lead {
				// Idle for a few watchdog ticks: the drainer watches the
				// socket, and reads the reply of the next call.
				time.Sleep(3 * rt)
			}
			release := p.holdReplies()
			defer release()
			long, cancel := context.WithTimeout(context.Background(), time.Hour)
			time.AfterFunc(rt/2, cancel)
			if _, err := c.Get(long, "edge:abandon"); !errors.Is(err, context.Canceled) {
				t.Fatalf("Get with a 1h deadline, cancelled, replies held = %v; want context.Canceled", err)
			}

			ctx := cancelledAfter(t, 10*rt)
			start := time.Now()
			_, err := c.Get(ctx, "edge:abandon")
			took := time.Since(start)
			if !errors.Is(err, redisx.ErrConnection) || took > 4*rt {
				t.Fatalf("Get without deadline behind an abandoned call with a 1h deadline, replies held, ReadTimeout %v = %v after %v; want ErrConnection within %v", rt, err, took, 4*rt)
			}
		})
	}
}

// cancelledAfter is a context without a deadline that is cancelled after
// d, well past the bound a test checks: a regression then fails in a
// second rather than hanging for as long as an old deadline allows.
func cancelledAfter(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	time.AfterFunc(d, cancel)
	return ctx
}
