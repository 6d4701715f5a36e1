package mux

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redisx-go/kit/backend"
	"github.com/redisx-go/kit/internal/faultproxy"
	"github.com/redisx-go/kit/internal/launcher"
	"github.com/redisx-go/kit/internal/wire"
)

// The read side of a multiplexed connection moves between callers, the
// drainer and nobody (see muxConn). These tests mix every way a call can
// be made and left — a lone caller leading, a hand-off to a caller, a
// pipeline that cannot lead (send, awaited later), contexts that never
// end, that are cancelled at a random moment, or that have a deadline —
// and check every reply against the key it was asked for.

func openMuxNode(t testing.TB, addr string, m Options) *Node {
	t.Helper()
	cfg := backend.Config{Addrs: []string{addr}, DialTimeout: 2 * time.Second, ReadTimeout: 3 * time.Second, WriteTimeout: 3 * time.Second}
	n, err := Open(context.Background(), cfg, addr, m)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

func leadValue(k string) string { return "value-of-" + k }

// leadWorkload runs goroutines × ops calls of every kind on n and returns
// the successes; a reply to the wrong caller fails t.
func leadWorkload(t *testing.T, n *Node, keys []string, goroutines, ops int, allowConnErrors bool) int64 {
	t.Helper()
	var ok atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 99))
			for i := range ops {
				ctx, cancel := context.Background(), context.CancelFunc(func() {})
				switch rng.IntN(6) {
				case 0:
					ctx, cancel = context.WithTimeout(context.Background(), time.Duration(rng.IntN(400))*time.Microsecond)
				case 1:
					ctx, cancel = context.WithCancel(context.Background())
					if rng.IntN(2) == 0 {
						time.AfterFunc(time.Duration(rng.IntN(300))*time.Microsecond, cancel)
					}
				case 2:
					ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
				}
				k := keys[rng.IntN(len(keys))]
				var err error
				switch op := rng.IntN(10); {
				case op < 5:
					var v []byte
					v, err = n.Get(ctx, k)
					if err == nil && string(v) != leadValue(k) {
						errs <- fmt.Errorf("Get(%q) = %q", k, v)
						cancel()
						return
					}
				case op < 7:
					err = n.Set(ctx, k, []byte(leadValue(k)), time.Minute)
				case op < 8:
					k2 := keys[rng.IntN(len(keys))]
					var vs [][]byte
					vs, err = n.MGet(ctx, []string{k, k2})
					if err == nil && (string(vs[0]) != leadValue(k) || string(vs[1]) != leadValue(k2)) {
						errs <- fmt.Errorf("MGet(%q, %q) = %q", k, k2, vs)
						cancel()
						return
					}
				default:
					// A pipeline that cannot lead, awaited after a pause.
					var buf []byte
					buf = wire.AppendGet(buf, k)
					buf = wire.AppendKeys(buf, "wire.PTTL", []string{k})
					rps := []wire.Reply{{Kind: wire.ReplyBulk}, {Kind: wire.ReplyInt}}
					var cl *call
					cl, err = n.send(ctx, []string{k}, buf, rps)
					if err == nil {
						if rng.IntN(2) == 0 {
							time.Sleep(time.Duration(rng.IntN(50)) * time.Microsecond)
						}
						err = n.await(ctx, cl)
					}
					if err == nil && string(rps[0].Val) != leadValue(k) {
						errs <- fmt.Errorf("pipelined GET %q = %q", k, rps[0].Val)
						cancel()
						return
					}
				}
				cancel()
				switch {
				case err == nil:
					ok.Add(1)
				case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
				case allowConnErrors && errors.Is(err, backend.ErrConnection):
				default:
					errs <- fmt.Errorf("op %d: %v", i, err)
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
	return ok.Load()
}

func leadKeys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("lead:%d", i)
	}
	return keys
}

func seedLeadKeys(t *testing.T, n *Node, keys []string) {
	t.Helper()
	for _, k := range keys {
		if err := n.Set(context.Background(), k, []byte(leadValue(k)), time.Minute); err != nil {
			t.Fatal(err)
		}
	}
}

func TestMuxReadSideMovesBetweenCallers(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	keys := leadKeys(200)
	for _, tc := range []struct {
		name       string
		m          Options
		goroutines int
	}{
		{"lone", Options{Conns: 1}, 1},
		{"few", Options{Conns: 1}, 4},
		{"many", Options{Conns: 1}, 300},
		{"conns=3", Options{Conns: 3}, 50},
		{"maxpending=8", Options{Conns: 1, MaxPending: 8}, 40},
		{"lanes/lone", Options{}, 1},
		{"lanes/few", Options{}, 4},
		{"lanes/many", Options{}, 300},
		{"lanes=2", Options{Lanes: 2}, 50},
		{"lanes/maxpending=8", Options{MaxPending: 8}, 40},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := openMuxNode(t, srv.Addr(), tc.m)
			seedLeadKeys(t, n, keys)
			ops := 3000 / tc.goroutines
			if ops < 30 {
				ops = 30
			}
			if got := leadWorkload(t, n, keys, tc.goroutines, ops, false); got == 0 {
				t.Fatal("no call succeeded")
			}
			// Afterwards the connection serves every caller correctly, and
			// no call is left pending.
			seedLeadKeys(t, n, keys[:20])
			if p := n.Stats().Pending; p != 0 {
				t.Errorf("Stats().Pending = %d after the storm, want 0", p)
			}
			if b := n.Stats().BrokenConns; b != 0 {
				t.Errorf("Stats().BrokenConns = %d: a cancelled call cost a connection", b)
			}
		})
	}
}

// TestMuxReadSideSurvivesCuts cuts the connection under the same mix of
// calls: every call returns (an error or the right value), and the node
// redials.
func TestMuxReadSideSurvivesCuts(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	p, err := faultproxy.Start(context.Background(), srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	keys := leadKeys(100)
	n := openMuxNode(t, p.Addr(), Options{})
	seedLeadKeys(t, n, keys)
	stop := make(chan struct{})
	go func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(15 * time.Millisecond):
			}
			p.CutAfter(faultproxy.Direction(1+i%2), 200+i*37%900)
		}
	}()
	done := make(chan int64)
	go func() { done <- leadWorkload(t, n, keys, 50, 600, true) }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("calls still running 60 s after the cuts began: one hangs")
	}
	close(stop)
	p.Heal()
	if b := n.Stats().BrokenConns; b < 3 {
		t.Errorf("only %d connections were cut during the calls: the test did not test", b)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := n.Get(ctx, keys[0])
		cancel()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no recovery after the cuts: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestMuxIdleConnectionClosedByServer: a connection the server closes
// while nobody uses it is noticed and replaced before the next call, so
// that call succeeds.
func TestMuxIdleConnectionClosedByServer(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	cfg := backend.Config{Addrs: []string{srv.Addr()}, DialTimeout: 2 * time.Second, ReadTimeout: 200 * time.Millisecond, WriteTimeout: time.Second}
	n, err := Open(context.Background(), cfg, srv.Addr(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	ctx := context.Background()
	if err := n.Set(ctx, "idle", []byte("v"), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.CLI(ctx, "CLIENT", "KILL", "TYPE", "normal"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for n.Stats().BrokenConns == 0 {
		if time.Now().After(deadline) {
			t.Fatal("a connection the server closed is not noticed while idle")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if v, err := n.Get(ctx, "idle"); err != nil || string(v) != "v" {
		t.Fatalf("Get after the server closed the idle connection = %q, %v", v, err)
	}
}

// The read side's hand-off must keep the allocation count of a call: a
// lone GET allocates its value only.
func TestMuxLoneCallAllocations(t *testing.T) {
	if raceOn {
		t.Skip("allocation counts are distorted by the race detector")
	}
	srv := launcher.Standalone(t, launcher.Options{})
	n := openMuxNode(t, srv.Addr(), Options{})
	ctx := context.Background()
	if err := n.Set(ctx, "a", make([]byte, 64), 0); err != nil {
		t.Fatal(err)
	}
	if got := testing.AllocsPerRun(1000, func() { n.Get(ctx, "a") }); got > 1 {
		t.Errorf("lone Get allocates %.2f times, want 1", got)
	}
}

func TestMuxBigSetAllocations(t *testing.T) {
	if raceOn {
		t.Skip("allocation counts are distorted by the race detector")
	}
	srv := launcher.Standalone(t, launcher.Options{})
	n := openMuxNode(t, srv.Addr(), Options{})
	ctx := context.Background()
	v := make([]byte, 32<<10)
	for range 10 {
		n.Set(ctx, "big", v, 0)
	}
	if got := testing.AllocsPerRun(500, func() { n.Set(ctx, "big", v, 0) }); got > 0 {
		t.Errorf("lone Set of 32 KiB allocates %.2f times, want 0", got)
	}
}

// TestMuxHeapAfterBurstOfBigValues is part of bar P9: a burst of 32 KiB
// writes from 100 goroutines leaves no buffer behind once the connection
// is idle: the heap returns to within 2x of what it was before.
func TestMuxHeapAfterBurstOfBigValues(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	cfg := backend.Config{Addrs: []string{srv.Addr()}, DialTimeout: 2 * time.Second, ReadTimeout: 400 * time.Millisecond, WriteTimeout: 3 * time.Second}
	n, err := Open(context.Background(), cfg, srv.Addr(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	ctx := context.Background()
	v := make([]byte, 32<<10)
	// Open every connection (the shared one and those of big values) first.
	for i := range 20 {
		if err := n.Set(ctx, fmt.Sprint("warm", i), v, 0); err != nil {
			t.Fatal(err)
		}
	}
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	time.Sleep(time.Second) // idle: two watchdog ticks at least
	before := heap()
	var wg sync.WaitGroup
	var peak atomic.Uint64
	for g := range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 30 {
				if err := n.Set(ctx, fmt.Sprintf("burst:%d:%d", g, i%3), v, time.Minute); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	go func() {
		for {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			if ms.HeapAlloc > peak.Load() {
				peak.Store(ms.HeapAlloc)
			}
			select {
			case <-time.After(5 * time.Millisecond):
			case <-ctx.Done():
			}
			if peak.Load() == ^uint64(0) {
				return
			}
		}
	}()
	wg.Wait()
	time.Sleep(time.Second) // idle again
	after := heap()
	t.Logf("heap: %d KiB idle before the burst, %d KiB at its peak, %d KiB idle after", before>>10, peak.Load()>>10, after>>10)
	if after > 2*before {
		t.Errorf("idle heap after a burst of 32 KiB writes is %d KiB, over twice the %d KiB before", after>>10, before>>10)
	}
	peak.Store(^uint64(0))
}

// TestMuxPassingTheReadSideNeverParsesAPartialPipeline: a reader that
// has its own reply passes the read side on; when the next call is a
// pipeline whose first reply is whole in the buffer but whose later
// ones are not (a BLPOP the server holds), the reader must hand it to
// the drainer, not parse it itself: it would block, past its own
// context, on replies that are not its own.
func TestMuxPassingTheReadSideNeverParsesAPartialPipeline(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	n := openMuxNode(t, srv.Addr(), Options{})
	c, err := n.conn(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	// Hold the read side, as a reader would, so that the calls below
	// queue behind it.
	c.mu.Lock()
	c.reading = true
	c.mu.Unlock()

	first := make(chan error, 1)
	go func() {
		_, err := n.Get(context.Background(), "pass:a")
		first <- err
	}()
	time.Sleep(50 * time.Millisecond)
	var buf []byte
	buf = wire.AppendGet(buf, "pass:b")
	buf, _ = wire.AppendArgs(buf, []any{"BLPOP", "pass:nothing", 2})
	rps := []wire.Reply{{Kind: wire.ReplyBulk}, {Kind: wire.ReplyAny}}
	cl, err := n.send(context.Background(), []string{"pass:b"}, buf, rps)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)    // both GETs' replies are in the socket; the BLPOP's is 2 s away
	if err := c.rs.r.Wait(); err != nil { // into the read buffer
		t.Fatal(err)
	}

	start := time.Now()
	c.pass() // delivers the first GET, then must leave the pipeline to the drainer
	if took := time.Since(start); took > time.Second {
		t.Errorf("pass took %v: it parsed a pipeline whose last reply was not whole", took.Round(time.Millisecond))
	}
	if err := <-first; !errors.Is(err, backend.ErrNotFound) {
		t.Errorf("Get(pass:a) = %v; want ErrNotFound, read by the passer", err)
	}
	if err := cl.Await(context.Background()); err != nil {
		t.Errorf("the pipeline behind it = %v; want its replies, read by the drainer", err)
	}
}
