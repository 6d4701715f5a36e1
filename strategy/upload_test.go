package strategy_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redisx-go/kit/internal/faultproxy"
	"github.com/redisx-go/kit/internal/launcher"
	"github.com/redisx-go/kit/redisx"
	"github.com/redisx-go/kit/strategy"
)

// TestBigUploadOutlastsReadTimeout: requests that take longer to send
// than ReadTimeout — values of 1 MiB over an upstream link of 256 KiB/s,
// no write bound, no context deadline, a healthy server — are answered,
// and so are the calls behind them on their connections: ReadTimeout
// times the wait for a reply from when its request has been sent, not
// the upload. The link is the fault proxy's: most of each upload sits in
// the client's own socket buffer, so that its write ends long before the
// server has the request.
func TestBigUploadOutlastsReadTimeout(t *testing.T) {
	const (
		rate = 256 << 10 // bytes a second, per connection
		rt   = 1500 * time.Millisecond
		size = 1 << 20 // 4 s at rate
	)
	for _, tc := range []struct {
		name string
		s    strategy.Strategy
	}{
		{"multiplexed", strategy.Multiplexed{}},
		{"multiplexed-one-lane", strategy.Multiplexed{Conns: 1}},
		{"pool", strategy.Pool{Size: 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := launcher.Private(t, launcher.Options{})
			p, err := faultproxy.Start(context.Background(), srv.Addr())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { p.Close() })
			c := edgeNew(t, redisx.Options{Addrs: []string{p.Addr()}, Strategy: tc.s, ReadTimeout: rt, WriteTimeout: -1})
			// Open the connections for big values before the link thins.
			if err := c.Set(edgeCtx(t, 5*time.Second), "up:warm", bytes.Repeat([]byte("w"), 20<<10), time.Minute); err != nil {
				t.Fatalf("warm-up Set: %v", err)
			}
			p.Bandwidth(faultproxy.Upstream, rate)

			setValue, multiValue := bytes.Repeat([]byte("s"), size), bytes.Repeat([]byte("m"), size)
			ctx := cancelledAfter(t, 30*time.Second) // no deadline; a hang ends in 30 s
			var wg sync.WaitGroup
			errs := make(chan error, 8)
			run := func(what string, f func() error) {
				wg.Add(1)
				go func() {
					defer wg.Done()
					start := time.Now()
					if err := f(); err != nil {
						errs <- fmt.Errorf("%s = %w after %v", what, err, time.Since(start).Round(time.Millisecond))
					}
				}()
			}
			start := time.Now()
			run("Set of 1 MiB", func() error { return c.Set(ctx, "up:set", setValue, time.Minute) })
			run("DoMulti(SET of 1 MiB, GET)", func() error {
				for _, r := range c.DoMulti(ctx, []any{"SET", "up:multi", multiValue}, []any{"GET", "up:warm"}) {
					if r.Err != nil {
						return r.Err
					}
				}
				return nil
			})
			time.Sleep(200 * time.Millisecond) // the uploads are under way
			for i := range 3 {
				run(fmt.Sprintf("Get %d, during the uploads", i), func() error {
					_, err := c.Get(ctx, "up:warm")
					return err
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Errorf("%s at %d B/s upstream, ReadTimeout %v, no write bound: %v", tc.name, rate, rt, err)
			}
			t.Logf("%s: two uploads of %d bytes at %d B/s: %v", tc.name, size, rate, time.Since(start).Round(time.Millisecond))

			p.Heal()
			for key, want := range map[string][]byte{"up:set": setValue, "up:multi": multiValue} {
				if v, err := c.Get(edgeCtx(t, 5*time.Second), key); err != nil || !bytes.Equal(v, want) {
					t.Errorf("Get %s after the uploads = %d bytes, %v; want %d bytes", key, len(v), err, len(want))
				}
			}
		})
	}
}

// TestHalfOpenDuringUploadFails: a peer that stops acknowledging in the
// middle of a big upload (the proxy turns into a half-open peer, no
// write bound, no context deadline) fails the call with ErrConnection
// within about ReadTimeout — an upload under way is waited for only
// while it moves.
func TestHalfOpenDuringUploadFails(t *testing.T) {
	const (
		rate  = 256 << 10
		rt    = 500 * time.Millisecond
		size  = 1 << 20
		bound = 4 * rt // ReadTimeout, and the watchdog's ticks, after the proxy's buffers filled
	)
	for _, tc := range []struct {
		name string
		s    strategy.Strategy
		tx   bool // the SET in a transaction, whose MULTI is answered before the value is sent
	}{
		{"multiplexed", strategy.Multiplexed{}, false},
		{"pool", strategy.Pool{Size: 2}, false},
		{"pool-transaction", strategy.Pool{Size: 2}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := launcher.Private(t, launcher.Options{})
			p, err := faultproxy.Start(context.Background(), srv.Addr())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { p.Close() })
			c := edgeNew(t, redisx.Options{Addrs: []string{p.Addr()}, Strategy: tc.s, ReadTimeout: rt, WriteTimeout: -1})
			if err := c.Set(edgeCtx(t, 5*time.Second), "up:warm", bytes.Repeat([]byte("w"), 20<<10), time.Minute); err != nil {
				t.Fatalf("warm-up Set: %v", err)
			}
			p.Bandwidth(faultproxy.Upstream, rate)
			res := make(chan error, 1)
			go func() {
				ctx, value := cancelledAfter(t, 30*time.Second), bytes.Repeat([]byte("h"), size)
				if !tc.tx {
					res <- c.Set(ctx, "up:half", value, time.Minute)
					return
				}
				res <- c.Watch(ctx, func(tx *redisx.Tx) error {
					_, err := tx.Exec(ctx, []any{"SET", "up:half", value})
					return err
				})
			}()
			time.Sleep(rt) // the upload is under way
			p.Blackhole(true)
			start := time.Now()
			err = <-res
			took := time.Since(start)
			if !errors.Is(err, redisx.ErrConnection) || took > bound {
				t.Errorf("Set of %d bytes whose peer went half-open %v into the upload, ReadTimeout %v, no write bound = %v, %v after the fault; want ErrConnection within %v", size, rt, rt, err, took.Round(time.Millisecond), bound)
			}
			t.Logf("%s: %v after the fault: %v", tc.name, took.Round(time.Millisecond), err)
		})
	}
}

// TestBigPipelineTailOutlastsReadTimeout: a request whose first replies
// come while the rest of it is still being sent — a pipeline of a small
// SET then a value of 1 MiB, a transaction (MULTI is answered at once)
// with that value — over an upstream link of 256 KiB/s, no write bound,
// no context deadline, a healthy server, is answered: the reply awaited
// last is timed from when the request was sent whole, not from when the
// first reply began.
func TestBigPipelineTailOutlastsReadTimeout(t *testing.T) {
	const (
		rate = 256 << 10
		rt   = 1500 * time.Millisecond
		size = 1 << 20 // 4 s at rate
	)
	for _, tc := range []struct {
		name string
		s    strategy.Strategy
	}{
		{"multiplexed", strategy.Multiplexed{}},
		{"pool", strategy.Pool{Size: 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := launcher.Private(t, launcher.Options{})
			p, err := faultproxy.Start(context.Background(), srv.Addr())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { p.Close() })
			c := edgeNew(t, redisx.Options{Addrs: []string{p.Addr()}, Strategy: tc.s, ReadTimeout: rt, WriteTimeout: -1})
			warm := edgeCtx(t, 5*time.Second)
			if err := c.Set(warm, "tail:warm", bytes.Repeat([]byte("w"), 20<<10), time.Minute); err != nil {
				t.Fatalf("warm-up Set: %v", err)
			}
			if err := c.Watch(warm, func(tx *redisx.Tx) error { // the transaction's connection, opened now
				_, err := tx.Exec(warm, []any{"SET", "tail:tx", "w"})
				return err
			}, "tail:tx"); err != nil {
				t.Fatalf("warm-up Watch: %v", err)
			}
			p.Bandwidth(faultproxy.Upstream, rate)

			pipeValue, txValue := bytes.Repeat([]byte("p"), size), bytes.Repeat([]byte("t"), size)
			ctx := cancelledAfter(t, 30*time.Second) // no deadline; a hang ends in 30 s
			var wg sync.WaitGroup
			errs := make(chan error, 4)
			run := func(what string, f func() error) {
				wg.Add(1)
				go func() {
					defer wg.Done()
					start := time.Now()
					if err := f(); err != nil {
						errs <- fmt.Errorf("%s = %w after %v", what, err, time.Since(start).Round(time.Millisecond))
					}
				}()
			}
			run("DoMulti(SET small, SET of 1 MiB)", func() error {
				for _, r := range c.DoMulti(ctx, []any{"SET", "tail:first", "1"}, []any{"SET", "tail:pipe", pipeValue}) {
					if r.Err != nil {
						return r.Err
					}
				}
				return nil
			})
			run("Watch with an Exec of a SET of 1 MiB", func() error {
				return c.Watch(ctx, func(tx *redisx.Tx) error {
					_, err := tx.Exec(ctx, []any{"SET", "tail:tx", txValue})
					return err
				}, "tail:tx")
			})
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Errorf("%s at %d B/s upstream, ReadTimeout %v, no write bound: %v", tc.name, rate, rt, err)
			}
			p.Heal()
			for key, want := range map[string][]byte{"tail:pipe": pipeValue, "tail:tx": txValue} {
				if v, err := c.Get(edgeCtx(t, 5*time.Second), key); err != nil || !bytes.Equal(v, want) {
					t.Errorf("Get %s after the uploads = %d bytes, %v; want %d bytes", key, len(v), err, len(want))
				}
			}
		})
	}
}

// TestRefusedBigRequestFailsAtOnce: a server that refuses a big request
// as it reads it — a value over proto-max-bulk-len: it replies with an
// error and closes the connection — over an upstream link of 256 KiB/s,
// no context deadline, is heard at once: the call returns the server's
// refusal, not a timeout after ReadTimeout spent waiting for the rest of
// the upload, which the server will never read.
func TestRefusedBigRequestFailsAtOnce(t *testing.T) {
	const (
		rt    = 10 * time.Second
		bound = 3 * time.Second
	)
	for _, tc := range []struct {
		name string
		s    strategy.Strategy
	}{
		{"multiplexed", strategy.Multiplexed{}},
		{"pool", strategy.Pool{Size: 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := launcher.Private(t, launcher.Options{})
			p, err := faultproxy.Start(context.Background(), srv.Addr())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { p.Close() })
			c := edgeNew(t, redisx.Options{Addrs: []string{p.Addr()}, Strategy: tc.s, ReadTimeout: rt, WriteTimeout: -1})
			if _, err := c.Do(edgeCtx(t, 5*time.Second), "CONFIG", "SET", "proto-max-bulk-len", "1mb"); err != nil {
				t.Fatal(err)
			}
			p.Bandwidth(faultproxy.Upstream, 256<<10)
			start := time.Now()
			res := c.DoMulti(cancelledAfter(t, 30*time.Second), []any{"SET", "refused:small", "1"}, []any{"SET", "refused:big", bytes.Repeat([]byte("r"), 2<<20)})
			took := time.Since(start)
			if err := res[1].Err; err == nil || !strings.Contains(err.Error(), "bulk length") || took > bound {
				t.Errorf("DoMulti(SET small, SET of 2 MiB over proto-max-bulk-len) = %v after %v; want the server's refusal (invalid bulk length) within %v", res, took.Round(time.Millisecond), bound)
			}
		})
	}
}
