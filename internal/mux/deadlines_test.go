package mux

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redisx-go/kit/backend"
	"github.com/redisx-go/kit/internal/faultproxy"
	"github.com/redisx-go/kit/internal/launcher"
	"github.com/redisx-go/kit/internal/wire"
)

// An adversarial second reading of the multiplexed connection (see
// muxConn): each test drives the read side or the write side into one of
// the interleavings its design must survive and checks that every reply
// reaches its own caller, that errors are the caller's own, that nothing
// hangs, and that Close leaves no goroutine behind.

// muxReviewNode opens a node with cfg's timeouts (and TLS), addr as its
// only address.
func muxReviewNode(t *testing.T, addr string, tlsCfg *tls.Config, m Options, readTimeout time.Duration) *Node {
	t.Helper()
	cfg := backend.Config{Addrs: []string{addr}, TLS: tlsCfg, DialTimeout: 5 * time.Second, ReadTimeout: readTimeout, WriteTimeout: 30 * time.Second}
	n, err := Open(context.Background(), cfg, addr, m)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

// muxReviewServers returns a plain server and a TLS one, with a client
// configuration for the latter, so each test can run on both.
type muxReviewTarget struct {
	name string
	addr string
	tls  *tls.Config
}

func muxReviewTargets(t *testing.T) (plain, secure muxReviewTarget, srv *launcher.Server) {
	t.Helper()
	tl, err := launcher.NewTLS(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	srv = launcher.Standalone(t, launcher.Options{TLS: tl})
	if srv.TLSAddr() == "" {
		t.Skip("external server without TLS")
	}
	return muxReviewTarget{"plain", srv.Addr(), nil}, muxReviewTarget{"tls", srv.TLSAddr(), tl.ClientConfig()}, srv
}

// conn0 returns the node's first shared connection.
func conn0(t *testing.T, n *Node) *muxConn {
	t.Helper()
	c := n.slots[0].cur.Load()
	if c == nil {
		t.Fatal("no connection")
	}
	return c
}

// awaitingBytes reports whether a leading caller of c waits for its reply
// with a context that can end.
func awaitingBytes(c *muxConn) bool { return c.rs.wait.waiting() }

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

type getResult struct {
	v   []byte
	err error
	dur time.Duration
}

func goGet(ctx context.Context, n *Node, key string) <-chan getResult {
	ch := make(chan getResult, 1)
	go func() {
		start := time.Now()
		v, err := n.Get(ctx, key)
		ch <- getResult{v, err, time.Since(start)}
	}()
	return ch
}

// TestMuxLoneCallerLeavesWhileAwaitingBytes: a lone caller leading
// on an idle connection, whose context ends exactly while it waits for the
// first byte of its reply (the reply held back by a proxy), returns its
// context's error at once; the connection is kept (no BrokenConns, no
// dial), its late reply is dropped, and the next call gets its own reply.
// Over TLS the reply is also trickled so that the wait is interrupted in
// the middle of a TLS record: a read timeout must leave the TLS stream
// usable.
func TestMuxLoneCallerLeavesWhileAwaitingBytes(t *testing.T) {
	plain, secure, _ := muxReviewTargets(t)
	for _, tg := range []muxReviewTarget{plain, secure} {
		for _, how := range []string{"cancel", "deadline", "trickle"} {
			if how == "trickle" && tg.tls == nil {
				continue // on plain TCP the first byte comes at once: nothing to interrupt
			}
			t.Run(tg.name+"/"+how, func(t *testing.T) {
				p, err := faultproxy.Start(context.Background(), tg.addr)
				if err != nil {
					t.Fatal(err)
				}
				defer p.Close()
				n := muxReviewNode(t, p.Addr(), tg.tls, Options{Conns: 1}, 30*time.Second)
				ctx := context.Background()
				big := bytes.Repeat([]byte("x"), 1500)
				for i := range 4 {
					if err := n.Set(ctx, "lone:"+strconv.Itoa(i), append([]byte(strconv.Itoa(i)+":"), big...), time.Minute); err != nil {
						t.Fatal(err)
					}
				}
				c := conn0(t, n)
				stats := n.Stats()
				for round := range 6 {
					key, next := "lone:"+strconv.Itoa(round%4), "lone:"+strconv.Itoa((round+1)%4)
					switch how {
					case "trickle":
						p.Bandwidth(faultproxy.Downstream, 3000) // the 1.5 kB reply takes 0.5 s
					default:
						p.Delay(faultproxy.Downstream, 300*time.Millisecond)
					}
					var cctx context.Context
					var cancel context.CancelFunc
					if how == "deadline" {
						cctx, cancel = context.WithTimeout(ctx, 60*time.Millisecond)
					} else {
						cctx, cancel = context.WithCancel(ctx)
					}
					res := goGet(cctx, n, key)
					if how != "deadline" {
						waitFor(t, "the lone caller waits for bytes", func() bool { return awaitingBytes(c) })
						if how == "trickle" {
							time.Sleep(50 * time.Millisecond) // part of the TLS record is in
						}
						cancel()
					}
					var r getResult
					select {
					case r = <-res:
					case <-time.After(3 * time.Second):
						t.Fatal("the caller whose context ended is still waiting")
					}
					cancel()
					if !errors.Is(r.err, context.Canceled) && !errors.Is(r.err, context.DeadlineExceeded) {
						t.Fatalf("round %d: Get = %q, %v; want the context's error", round, r.v, r.err)
					}
					p.Heal()
					// The next call, on the same connection, gets its own value,
					// not the one left behind.
					v, err := n.Get(ctx, next)
					want := append([]byte(strconv.Itoa((round+1)%4)+":"), big...)
					if err != nil || !bytes.Equal(v, want) {
						t.Fatalf("round %d: Get(%s) after the abandoned call = %.20q…, %v", round, next, v, err)
					}
				}
				after := n.Stats()
				if after.BrokenConns != stats.BrokenConns || after.Dials != stats.Dials || conn0(t, n) != c {
					t.Errorf("the connection was replaced: BrokenConns %d→%d, Dials %d→%d", stats.BrokenConns, after.BrokenConns, stats.Dials, after.Dials)
				}
				// The drainer releases a slot just after its delivery.
				waitFor(t, "nothing is pending", func() bool { return n.Stats().Pending == 0 })
			})
		}
	}
}

// TestMuxLeaderNotHeldByOthersReplies: a leading caller whose reply
// has come returns, even when the reply behind its own — another caller's
// big value — has begun to arrive in the same read and takes long to
// come whole. (The caller must not read others' replies past its own
// deadline: on main the reader goroutine did that.)
func TestMuxLeaderNotHeldByOthersReplies(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	p, err := faultproxy.Start(context.Background(), srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	n := muxReviewNode(t, p.Addr(), nil, Options{Conns: 1}, 30*time.Second)
	ctx := context.Background()
	if err := n.Set(ctx, "small", []byte("s"), time.Minute); err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte("b"), 1<<20)
	if err := n.Set(ctx, "big", big, time.Minute); err != nil {
		t.Fatal(err)
	}
	c := conn0(t, n)
	// Hold both commands at the server, so that their replies leave it
	// together; then trickle the replies: the big one takes ~100 s.
	if _, err := srv.CLI(ctx, "CLIENT", "PAUSE", "400", "ALL"); err != nil {
		t.Fatal(err)
	}
	p.Bandwidth(faultproxy.Downstream, 10<<10)
	actx, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
	defer cancel()
	small := goGet(actx, n, "small") // leads: the connection is idle
	waitFor(t, "the small Get leads", func() bool { return awaitingBytes(c) })
	bigRes := goGet(ctx, n, "big")
	waitFor(t, "the big Get is queued", func() bool { return c.pending.Load() == 2 })
	var r getResult
	select {
	case r = <-small:
	case <-time.After(3 * time.Second):
		t.Error("the small Get, whose reply came long ago, is still busy 1.5 s past its deadline (reading the big reply of another caller)")
		p.Heal()
		r = <-small
	}
	if r.err != nil || string(r.v) != "s" {
		t.Errorf("small Get = %q, %v", r.v, r.err)
	}
	p.Heal()
	if r := <-bigRes; r.err != nil || !bytes.Equal(r.v, big) {
		t.Errorf("big Get = %d bytes, %v", len(r.v), r.err)
	}
}

// TestMuxLeaderOwnSlowReply: a lone caller whose reply has begun to
// arrive but comes slowly returns when its context ends (as on main, where
// the reader goroutine read on and the caller left), not when the last
// byte comes.
func TestMuxLeaderOwnSlowReply(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	p, err := faultproxy.Start(context.Background(), srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	n := muxReviewNode(t, p.Addr(), nil, Options{Conns: 1}, 30*time.Second)
	ctx := context.Background()
	big := bytes.Repeat([]byte("b"), 1<<20)
	if err := n.Set(ctx, "big", big, time.Minute); err != nil {
		t.Fatal(err)
	}
	p.Bandwidth(faultproxy.Downstream, 10<<10) // ~100 s for the value
	actx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	res := goGet(actx, n, "big")
	var r getResult
	select {
	case r = <-res:
	case <-time.After(3 * time.Second):
		t.Error("a lone Get is still reading its slow reply 2.5 s past its deadline")
		p.Heal()
		r = <-res
	}
	if !errors.Is(r.err, context.DeadlineExceeded) {
		t.Errorf("Get = %d bytes, %v; want DeadlineExceeded", len(r.v), r.err)
	}
	// The connection survives the abandoned slow reply.
	p.Heal()
	if v, err := n.Get(ctx, "big"); err != nil || !bytes.Equal(v, big) {
		t.Errorf("Get after the abandoned slow reply = %d bytes, %v", len(v), err)
	}
}

// TestMuxWriterNotHeldPastDeadline: a caller whose command is big
// (more than a chunk) returns when its context ends even though the write
// cannot finish (the peer reads slowly), as it did on main, where the
// writer goroutine wrote and the caller left; the write would only end
// with WriteTimeout (30 s in this test). (A caller writing a small command
// on a socket whose send buffer is full is still held, until the buffer
// drains or WriteTimeout.)
func TestMuxWriterNotHeldPastDeadline(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	p, err := faultproxy.Start(context.Background(), srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	n := muxReviewNode(t, p.Addr(), nil, Options{Conns: 1}, 30*time.Second)
	p.Bandwidth(faultproxy.Upstream, 64<<10)
	actx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	res := make(chan error, 1)
	go func() { res <- n.Set(actx, "huge", bytes.Repeat([]byte("h"), 32<<20), time.Minute) }()
	select {
	case err := <-res:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Set = %v; want DeadlineExceeded", err)
		}
	case <-time.After(3 * time.Second):
		t.Error("a Set is still writing 2.5 s past its deadline")
		n.Close()
		<-res
	}
}

// bigValue is key's value of n bytes: a pattern that names the key, so a
// value written or read out of place (a chunk reused while a write was
// still using it, a reply to another caller) shows.
func reviewBigValue(key string, n int) []byte {
	b := make([]byte, n)
	pat := []byte("<" + key + ">")
	for i := range b {
		b[i] = pat[i%len(pat)]
	}
	return b
}

// TestMuxBigValuesAcrossChunks writes values from a few bytes to
// several chunks (sealed chunks written with writev; over TLS one record
// per chunk), from many goroutines, each one's key its own, with
// contexts that sometimes end, and reads each back — through a lone
// call, a pipeline exec (GET + PTTL) and send/await: every value comes
// back whole and its own, whatever chunks were reused meanwhile.
func TestMuxBigValuesAcrossChunks(t *testing.T) {
	plain, secure, _ := muxReviewTargets(t)
	for _, tg := range []muxReviewTarget{plain, secure} {
		t.Run(tg.name, func(t *testing.T) {
			n := muxReviewNode(t, tg.addr, tg.tls, Options{Conns: 1}, 30*time.Second)
			var wg sync.WaitGroup
			var ok atomic.Int64
			for g := range 24 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					rng := rand.New(rand.NewPCG(uint64(g), 11))
					for i := range 30 {
						k := fmt.Sprintf("big:%d:%d", g, i%3)
						size := []int{10, 5000, chunkSize - 40, chunkSize + 7, 3*chunkSize + 123, keepChunk + 99}[rng.IntN(6)]
						want := reviewBigValue(k, size)
						ctx, cancel := context.Background(), context.CancelFunc(func() {})
						if rng.IntN(4) == 0 {
							ctx, cancel = context.WithTimeout(ctx, time.Duration(rng.IntN(3000))*time.Microsecond)
						}
						err := n.Set(ctx, k, want, time.Minute)
						if err == nil {
							var got []byte
							switch rng.IntN(3) {
							case 0:
								got, err = n.Get(ctx, k)
							case 1:
								buf, rps := wire.TTLPipeline([]string{k}, true)
								if err = n.Exec(ctx, []string{k}, buf, rps); err == nil {
									got = rps[0].Val
									if rps[1].Num <= 0 {
										t.Errorf("wire.PTTL %s = %d after SET … PX", k, rps[1].Num)
									}
								}
							default:
								rps := []wire.Reply{{Kind: wire.ReplyBulk}}
								var cl *call
								if cl, err = n.send(ctx, []string{k}, wire.AppendGet(nil, k), rps); err == nil {
									if err = n.await(ctx, cl); err == nil {
										got = rps[0].Val
									}
								}
							}
							if err == nil && !bytes.Equal(got, want) {
								t.Errorf("%s: read back %d bytes %.40q…, want %d bytes %.40q…", k, len(got), got, len(want), want)
								cancel()
								return
							}
						}
						cancel()
						switch {
						case err == nil:
							ok.Add(1)
						case errors.Is(err, context.DeadlineExceeded):
							// A Set whose context ended may still be applied:
							// the next round writes the key anew.
						default:
							t.Errorf("%s: %v", k, err)
							return
						}
					}
				}()
			}
			wg.Wait()
			if ok.Load() == 0 {
				t.Fatal("no call succeeded")
			}
			if b := n.Stats().BrokenConns; b != 0 {
				t.Errorf("BrokenConns = %d", b)
			}
		})
	}
}

// TestMuxIdleWatchToggles: with a short ReadTimeout the watchdog
// ticks every 25 ms, so a connection used by a few callers with pauses
// keeps going from idle (the drainer watching the socket) to a caller
// leading, to a hand-off and back; contexts end at every moment
// meanwhile. Every reply is its caller's. Then the server closes the idle
// connection: it is noticed and replaced before the next call.
func TestMuxIdleWatchToggles(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	n := muxReviewNode(t, srv.Addr(), nil, Options{Conns: 1}, 100*time.Millisecond)
	keys := leadKeys(16)
	seedLeadKeys(t, n, keys)
	var wg sync.WaitGroup
	var ok atomic.Int64
	for g := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 5))
			for range 60 {
				time.Sleep(time.Duration(rng.IntN(60)) * time.Millisecond)
				k := keys[rng.IntN(len(keys))]
				ctx, cancel := context.Background(), context.CancelFunc(func() {})
				if rng.IntN(3) == 0 {
					ctx, cancel = context.WithTimeout(ctx, time.Duration(rng.IntN(500))*time.Microsecond)
				}
				var v []byte
				var err error
				if rng.IntN(2) == 0 {
					v, err = n.Get(ctx, k)
				} else {
					rps := []wire.Reply{{Kind: wire.ReplyBulk}}
					var cl *call
					if cl, err = n.send(ctx, []string{k}, wire.AppendGet(nil, k), rps); err == nil {
						err = n.await(ctx, cl)
					}
					if err == nil { // an abandoned pipeline's replies are still written
						v = rps[0].Val
					}
				}
				cancel()
				switch {
				case err == nil:
					if string(v) != leadValue(k) {
						t.Errorf("Get(%q) = %q", k, v)
						return
					}
					ok.Add(1)
				case errors.Is(err, context.DeadlineExceeded):
				case errors.Is(err, backend.ErrConnection):
					// The watchdog may fail a connection on a busy machine
					// (a 100 ms ReadTimeout); it must not misdeliver.
				default:
					t.Errorf("Get(%q): %v", k, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if ok.Load() == 0 {
		t.Fatal("no call succeeded")
	}
	broken := n.Stats().BrokenConns
	c := conn0(t, n)
	waitFor(t, "the drainer watches the idle connection", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.reading && len(c.queue) == 0 && len(c.rs.batch) == c.rs.i
	})
	if _, err := srv.CLI(context.Background(), "CLIENT", "KILL", "TYPE", "normal"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the closed idle connection is noticed", func() bool { return n.Stats().BrokenConns > broken })
	if v, err := n.Get(context.Background(), keys[0]); err != nil || string(v) != leadValue(keys[0]) {
		t.Fatalf("Get after the server closed the idle connection = %q, %v", v, err)
	}
}

// TestMuxWatchdogFailsHeldReadSide: the watchdog fails a connection
// whose replies are overdue while the read side is held — by a leading
// caller without a deadline, waiting for bytes, with callers handed off
// and pipelines queued behind it. Every one of them gets backend.ErrConnection
// (no hang, no other error), and the next call, on a new connection, gets
// its own value.
func TestMuxWatchdogFailsHeldReadSide(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	p, err := faultproxy.Start(context.Background(), srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	n := muxReviewNode(t, p.Addr(), nil, Options{Conns: 1}, 300*time.Millisecond)
	keys := leadKeys(8)
	seedLeadKeys(t, n, keys)
	for round := range 3 {
		c := conn0(t, n)
		p.Blackhole(true)
		errs := make(chan error, 20)
		lead := goGet(context.Background(), n, keys[0])
		waitFor(t, "the first Get is queued", func() bool { return c.pending.Load() == 1 })
		for i := range 19 {
			go func() {
				k := keys[i%len(keys)]
				if i%3 == 0 {
					rps := []wire.Reply{{Kind: wire.ReplyBulk}}
					cl, err := n.send(context.Background(), []string{k}, wire.AppendGet(nil, k), rps)
					if err == nil {
						err = n.await(context.Background(), cl)
					}
					errs <- err
					return
				}
				_, err := n.Get(context.Background(), k)
				errs <- err
			}()
		}
		r := <-lead
		errs <- r.err
		for range 20 {
			select {
			case err := <-errs:
				if !errors.Is(err, backend.ErrConnection) {
					t.Fatalf("round %d: a call on the overdue connection returned %v, want backend.ErrConnection", round, err)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("round %d: a call on the overdue connection hangs", round)
			}
		}
		p.Heal()
		p.Reset() // the blackholed connection's held bytes are not wanted
		waitFor(t, "the connection is replaced", func() bool {
			v, err := n.Get(context.Background(), keys[1])
			return err == nil && string(v) == leadValue(keys[1])
		})
	}
}

// TestMuxTinyMaxPending: with room for one or two calls, nearly
// every call is a lone leader and the others wait for room (waitRoom)
// with contexts that end: no slot is lost (Pending returns to 0 and calls
// still go through), none is misdelivered.
func TestMuxTinyMaxPending(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	for _, mp := range []int{1, 2} {
		t.Run(strconv.Itoa(mp), func(t *testing.T) {
			n := muxReviewNode(t, srv.Addr(), nil, Options{Conns: 1, MaxPending: mp}, 30*time.Second)
			if got := storm(t, n, 50, 60); got == 0 {
				t.Fatal("no call succeeded")
			}
			waitFor(t, "nothing is pending", func() bool { return n.Stats().Pending == 0 })
			for range 3 {
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				v, err := n.Get(ctx, "lead:1")
				cancel()
				if err != nil || string(v) != leadValue("lead:1") {
					t.Fatalf("Get after the storm = %q, %v (a pending slot lost?)", v, err)
				}
			}
		})
	}
}
