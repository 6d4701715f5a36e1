package mux

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redisx-go/kit/backend"
	"github.com/redisx-go/kit/internal/faultproxy"
	"github.com/redisx-go/kit/internal/launcher"
	"github.com/redisx-go/kit/internal/wire"
	"go.uber.org/goleak"
)

// The adversarial reading of muxConn (see deadlines_test.go)
// under storms: deadlines, Close and a killed server, mid-flight.

// storm runs goroutines × ops calls with contexts that end at every
// moment (deadlines of 0–1.5 ms, cancellations, none), on keys whose
// values name them, and checks every reply. It returns the successes.
func storm(t *testing.T, n *Node, goroutines, ops int) int64 {
	t.Helper()
	keys := leadKeys(64)
	seedLeadKeys(t, n, keys)
	var ok atomic.Int64
	var wg sync.WaitGroup
	var bad atomic.Int32
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 7))
			for range ops {
				if bad.Load() > 0 {
					return
				}
				ctx, cancel := context.Background(), context.CancelFunc(func() {})
				switch rng.IntN(4) {
				case 0, 1:
					ctx, cancel = context.WithTimeout(ctx, time.Duration(rng.IntN(1500))*time.Microsecond)
				case 2:
					ctx, cancel = context.WithCancel(ctx)
					time.AfterFunc(time.Duration(rng.IntN(1000))*time.Microsecond, cancel)
				}
				k := keys[rng.IntN(len(keys))]
				var err error
				switch rng.IntN(4) {
				case 0, 1:
					var v []byte
					if v, err = n.Get(ctx, k); err == nil && string(v) != leadValue(k) {
						t.Errorf("Get(%q) = %q", k, v)
						bad.Add(1)
					}
				case 2:
					k2 := keys[rng.IntN(len(keys))]
					var vs [][]byte
					if vs, err = n.MGet(ctx, []string{k2, k}); err == nil && (string(vs[0]) != leadValue(k2) || string(vs[1]) != leadValue(k)) {
						t.Errorf("MGet(%q, %q) = %q", k2, k, vs)
						bad.Add(1)
					}
				default:
					buf := wire.AppendGet(nil, k)
					rps := []wire.Reply{{Kind: wire.ReplyBulk}}
					var cl *call
					if cl, err = n.send(ctx, []string{k}, buf, rps); err == nil {
						err = n.await(ctx, cl)
					}
					if err == nil && string(rps[0].Val) != leadValue(k) {
						t.Errorf("pipelined GET %q = %q", k, rps[0].Val)
						bad.Add(1)
					}
				}
				cancel()
				switch {
				case err == nil:
					ok.Add(1)
				case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
				default:
					t.Errorf("unexpected error: %v", err)
					bad.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	return ok.Load()
}

// TestMuxDeadlineStorm: at 1 and at 500 goroutines, plain and TLS,
// contexts ending at every point of a call never cost the connection and
// never misdeliver; afterwards nothing is pending and Close leaves no
// goroutine.
func TestMuxDeadlineStorm(t *testing.T) {
	plain, secure, _ := muxReviewTargets(t)
	for _, tg := range []muxReviewTarget{plain, secure} {
		for _, g := range []int{1, 500} {
			t.Run(fmt.Sprintf("%s/%d", tg.name, g), func(t *testing.T) {
				before := goleak.IgnoreCurrent()
				n := muxReviewNode(t, tg.addr, tg.tls, Options{}, 30*time.Second)
				ops := max(4000/g, 20)
				if got := storm(t, n, g, ops); got == 0 {
					t.Fatal("no call succeeded: the storm tested nothing")
				}
				st := n.Stats()
				if st.BrokenConns != 0 {
					t.Errorf("BrokenConns = %d: a context ending cost the connection", st.BrokenConns)
				}
				// Abandoned replies are still read: wait for Pending to settle.
				waitFor(t, "nothing is pending", func() bool { return n.Stats().Pending == 0 })
				if v, err := n.Get(context.Background(), "lead:3"); err != nil || string(v) != leadValue("lead:3") {
					t.Errorf("Get after the storm = %q, %v", v, err)
				}
				done := make(chan struct{})
				go func() { n.Close(); close(done) }()
				select {
				case <-done:
				case <-time.After(3 * time.Second):
					t.Fatal("Close hangs after the storm")
				}
				goleak.VerifyNone(t, before)
			})
		}
	}
}

// TestMuxCloseMidFlight closes the node while 200 callers are in
// every phase of a call (leading, waiting for a hand-off, pipelines sent
// and not yet awaited, replies held back by a delay): each returns a
// success or backend.ErrClosed — never another error — promptly, and no goroutine
// is left.
func TestMuxCloseMidFlight(t *testing.T) {
	plain, secure, _ := muxReviewTargets(t)
	for _, tg := range []muxReviewTarget{plain, secure} {
		for _, delayed := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/delayed=%v", tg.name, delayed), func(t *testing.T) {
				for round := range 3 {
					closeMidFlight(t, tg, delayed, round)
				}
			})
		}
	}
}

func closeMidFlight(t *testing.T, tg muxReviewTarget, delayed bool, round int) {
	before := goleak.IgnoreCurrent()
	p, err := faultproxy.Start(context.Background(), tg.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	cfg := backend.Config{Addrs: []string{p.Addr()}, TLS: tg.tls, DialTimeout: 5 * time.Second, ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second}
	n, err := Open(context.Background(), cfg, p.Addr(), Options{Conns: 2})
	if err != nil {
		t.Fatal(err)
	}
	keys := leadKeys(32)
	seedLeadKeys(t, n, keys)
	if delayed {
		p.Delay(faultproxy.Downstream, 5*time.Millisecond)
	}
	var started, calls atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 200)
	for g := range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), uint64(round)))
			started.Add(1)
			for {
				k := keys[rng.IntN(len(keys))]
				var err error
				switch rng.IntN(3) {
				case 0:
					var v []byte
					if v, err = n.Get(context.Background(), k); err == nil && string(v) != leadValue(k) {
						errs <- fmt.Errorf("Get(%q) = %q", k, v)
						return
					}
				case 1:
					err = n.Set(context.Background(), k, []byte(leadValue(k)), time.Minute)
				default:
					rps := []wire.Reply{{Kind: wire.ReplyBulk}}
					var cl *call
					if cl, err = n.send(context.Background(), []string{k}, wire.AppendGet(nil, k), rps); err == nil {
						runtime.Gosched()
						err = n.await(context.Background(), cl)
					}
					if err == nil && string(rps[0].Val) != leadValue(k) {
						errs <- fmt.Errorf("pipelined GET %q = %q", k, rps[0].Val)
						return
					}
				}
				if err != nil {
					if !errors.Is(err, backend.ErrClosed) {
						errs <- fmt.Errorf("a call in flight at Close failed with %v, want backend.ErrClosed", err)
					}
					return
				}
				calls.Add(1)
			}
		}()
	}
	waitFor(t, "every caller runs", func() bool { return started.Load() == 200 })
	start := calls.Load()
	waitFor(t, "calls are under way", func() bool { return calls.Load() > start+400 })
	closed := make(chan struct{})
	go func() { n.Close(); close(closed) }()
	allDone := make(chan struct{})
	go func() { wg.Wait(); close(allDone) }()
	for _, ch := range []chan struct{}{closed, allDone} {
		select {
		case <-ch:
		case <-time.After(5 * time.Second):
			t.Fatal("Close or a call in flight hangs")
		}
	}
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	p.Close()
	goleak.VerifyNone(t, before)
}

// TestMuxServerKilledMidStorm kills the server under 100 callers
// and restarts it: every call returns (a success with its own value, a
// connection error, or its context's error), and calls succeed again on
// a new connection after the restart.
func TestMuxServerKilledMidStorm(t *testing.T) {
	if launcher.External() {
		t.Skip("kills the server")
	}
	srv := launcher.Standalone(t, launcher.Options{})
	n := muxReviewNode(t, srv.Addr(), nil, Options{}, time.Second)
	var calls, connErrs atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for g := range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 3))
			k := "kill:" + strconv.Itoa(g)
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), time.Duration(50+rng.IntN(500))*time.Millisecond)
				val := strconv.Itoa(g) + ":" + strconv.Itoa(i)
				err := n.Set(ctx, k, []byte(val), time.Minute)
				if err == nil {
					var v []byte
					v, err = n.Get(ctx, k)
					// A Get may only miss when the server lost the key
					// (restarted between the Set and the Get).
					if err == nil && string(v) != val {
						errs <- fmt.Errorf("Get(%q) = %q, want %q", k, v, val)
						cancel()
						return
					}
				}
				cancel()
				switch {
				case err == nil:
					calls.Add(1)
				case errors.Is(err, backend.ErrConnection):
					connErrs.Add(1)
					time.Sleep(time.Millisecond)
				case errors.Is(err, context.DeadlineExceeded), errors.Is(err, backend.ErrNotFound):
				default:
					errs <- fmt.Errorf("unexpected error: %v", err)
					return
				}
			}
		}()
	}
	waitFor(t, "calls are under way", func() bool { return calls.Load() > 500 })
	if err := srv.Kill(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "callers see the connection fail", func() bool { return connErrs.Load() > 0 })
	if err := srv.Restart(context.Background()); err != nil {
		t.Fatal(err)
	}
	restarted := calls.Load()
	waitFor(t, "calls succeed after the restart", func() bool { return calls.Load() > restarted+500 })
	close(stop)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("a caller hangs after the restart")
	}
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n.Stats().BrokenConns == 0 {
		t.Error("no connection broke: the kill was not seen")
	}
}
