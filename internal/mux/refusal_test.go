package mux

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/redisx-go/kit/backend"
	"github.com/redisx-go/kit/internal/failure"
	"github.com/redisx-go/kit/internal/launcher"
	"go.uber.org/goleak"
)

// A server's refusal of a request, followed by its close: what a caller
// gets when the connection's end comes right after the refusal.

// refuser is a server of the test's own on loopback that refuses: it
// answers the handshake's PING, then hands each connection to the test,
// which refuses a request on it as Redis refuses one it cannot read (a
// bulk over proto-max-bulk-len): an error reply, then a close with the
// rest of the request unread, a reset.
type refuser struct {
	ln    net.Listener
	conns chan *net.TCPConn
	wg    sync.WaitGroup
}

const handshakePing = "*1\r\n$4\r\nPING\r\n"

func startRefuser(t *testing.T) *refuser {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &refuser{ln: ln, conns: make(chan *net.TCPConn, 16)}
	r.wg.Go(func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			b := make([]byte, len(handshakePing))
			if _, err := io.ReadFull(nc, b); err != nil || string(b) != handshakePing {
				nc.Close()
				continue
			}
			if _, err := nc.Write([]byte("+PONG\r\n")); err != nil {
				nc.Close()
				continue
			}
			r.conns <- nc.(*net.TCPConn)
		}
	})
	t.Cleanup(func() {
		ln.Close()
		r.wg.Wait()
		close(r.conns)
		for nc := range r.conns {
			nc.Close()
		}
	})
	return r
}

func (r *refuser) addr() string { return r.ln.Addr().String() }

// next returns the next connection the client opened.
func (r *refuser) next(t *testing.T) *net.TCPConn {
	t.Helper()
	select {
	case nc := <-r.conns:
		t.Cleanup(func() { nc.Close() })
		return nc
	case <-time.After(10 * time.Second):
		t.Fatal("the client opened no connection")
		return nil
	}
}

// awaitRequest waits for the first bytes of a request on nc.
func awaitRequest(t *testing.T, nc net.Conn) {
	t.Helper()
	nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := nc.Read(make([]byte, 1)); err != nil {
		t.Fatalf("no request reached the server: %v", err)
	}
}

// refuse sends the refusal and resets the connection.
func refuse(t *testing.T, nc *net.TCPConn) {
	t.Helper()
	if _, err := nc.Write([]byte("-" + refusal + "\r\n")); err != nil {
		t.Fatal(err)
	}
	nc.SetLinger(0) // close sends an RST
	nc.Close()
}

const refusal = "ERR Protocol error: invalid bulk length"

// isRefusal reports whether err is the server's refusal, as a server
// error: a redis.Error, not a connection failure.
func isRefusal(err error) bool {
	var re redis.Error
	return errors.As(err, &re) && strings.Contains(err.Error(), refusal) && !errors.Is(err, backend.ErrConnection)
}

// TestMuxWriteResetLeavesTheRefusalToItsCaller: the write side meeting
// the peer's reset must not take from the read side a refusal the server
// sent before it: the connection fails (no call is queued on it any
// more), but the caller whose request the server refused gets the
// refusal, as the server's error, not the reset. The writer's failure is
// played here before the refusal arrives; on the wire the refusal comes
// first, and sits unread in the socket while the writer fails.
func TestMuxWriteResetLeavesTheRefusalToItsCaller(t *testing.T) {
	srv := startRefuser(t)
	n := muxReviewNode(t, srv.addr(), nil, Options{Conns: 1}, 10*time.Second)
	// The refusal comes after the write's failure here, not before it as
	// on the wire: the connection must stay open for it however late this
	// goroutine sends it (refusalWait is tested on its own).
	n.refusalWait = time.Minute
	peer := srv.next(t)
	c := conn0(t, n)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got := goGet(ctx, n, "k")
	awaitRequest(t, peer)
	waitFor(t, "the caller waits for its reply", func() bool { return awaitingBytes(c) })
	c.failWrite(&net.OpError{Op: "write", Net: "tcp", Err: os.NewSyscallError("write", syscall.ECONNRESET)})
	if !c.broken.Load() {
		t.Error("the connection whose write met a reset is not broken: calls may still be queued on it")
	}
	refuse(t, peer)
	r := <-got
	if !isRefusal(r.err) {
		t.Errorf("Get refused by the server, its write side reset = %q, %v (%T); want the refusal %q as a redis.Error", r.v, r.err, r.err, refusal)
	}
}

// TestMuxWriteResetClosesWithinRefusalWait: a connection whose write met
// the peer's reset is left to its read side for refusalWait at most: when
// nothing arrives (a peer that never ends the stream), the caller
// awaiting its reply fails with a connection error then, not after
// ReadTimeout, and the socket is closed.
func TestMuxWriteResetClosesWithinRefusalWait(t *testing.T) {
	srv := startRefuser(t)
	n := muxReviewNode(t, srv.addr(), nil, Options{Conns: 1}, time.Minute)
	n.refusalWait = 50 * time.Millisecond
	peer := srv.next(t)
	c := conn0(t, n)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got := goGet(ctx, n, "k")
	awaitRequest(t, peer)
	waitFor(t, "the caller waits for its reply", func() bool { return awaitingBytes(c) })
	c.failWrite(&net.OpError{Op: "write", Net: "tcp", Err: os.NewSyscallError("write", syscall.ECONNRESET)})
	select {
	case r := <-got:
		if !errors.Is(r.err, backend.ErrConnection) {
			t.Errorf("Get on a connection whose write met a reset, the peer silent = %q, %v; want a connection failure", r.v, r.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Get on a connection whose write met a reset, the peer silent, has not returned 10 s later: refusalWait does not bound it")
	}
	if !socketClosed(c) {
		t.Error("the connection whose write met a reset is open after its caller returned")
	}
}

// TestMuxRefusalEndsACallOfSeveralReplies: a call awaiting several
// replies (a pipeline, a TTL read, a run of SETs) whose stream ends right
// after an error reply of its own — the server refused the command and
// closed — gets the refusal, as the server's error, not the connection's
// end; the commands of a pipeline after the refused one get the
// connection's failure.
func TestMuxRefusalEndsACallOfSeveralReplies(t *testing.T) {
	srv := startRefuser(t)
	n := muxReviewNode(t, srv.addr(), nil, Options{Conns: 1}, 10*time.Second)
	for _, tc := range []struct {
		name string
		call func(ctx context.Context) error // the refused command's error
	}{
		{"DoMulti", func(ctx context.Context) error {
			res := n.DoMulti(ctx, []any{"GET", "a"}, []any{"GET", "b"})
			if !errors.Is(res[1].Err, backend.ErrConnection) {
				t.Errorf("DoMulti: the command after the refused one = %v, %v; want a connection failure", res[1].Value, res[1].Err)
			}
			return res[0].Err
		}},
		{"GetWithTTL", func(ctx context.Context) error {
			_, _, err := n.GetWithTTL(ctx, "k")
			return err
		}},
		{"MSet with a TTL", func(ctx context.Context) error {
			return n.MSet(ctx, map[string][]byte{"a": []byte("1"), "b": []byte("2")}, time.Minute)
		}},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		errc := make(chan error, 1)
		go func() { errc <- tc.call(ctx) }()
		peer := srv.next(t) // the first call's connection, then each one's replacement
		awaitRequest(t, peer)
		refuse(t, peer)
		if err := <-errc; !isRefusal(err) || strings.Count(err.Error(), "redisx:") != 1 {
			t.Errorf("%s refused by the server, which then closed = %v (%T); want the refusal %q as a redis.Error, with one \"redisx:\" prefix", tc.name, err, err, refusal)
		}
		cancel()
	}
}

// TestMuxProtocolErrorRetiresTheConnection: a server closes the
// connection after every "ERR Protocol error" reply (Redis: networking.c,
// setProtocolError), so the connection that carried one takes no other
// call, even while the close has not reached the client: it is broken
// before the refused caller returns, and the next call goes to a new
// connection. The server here has not closed yet.
func TestMuxProtocolErrorRetiresTheConnection(t *testing.T) {
	srv := startRefuser(t)
	n := muxReviewNode(t, srv.addr(), nil, Options{Conns: 1}, 10*time.Second)
	first := srv.next(t)
	c := conn0(t, n)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got := goGet(ctx, n, "a")
	awaitRequest(t, first)
	if _, err := first.Write([]byte("-" + refusal + "\r\n")); err != nil {
		t.Fatal(err)
	}
	if r := <-got; !isRefusal(r.err) {
		t.Errorf("Get refused by the server = %q, %v; want the refusal %q", r.v, r.err, refusal)
	}
	if !c.broken.Load() {
		t.Fatal("the connection the server closes after a protocol error is not broken when its caller returns: the next call may take it")
	}
	got = goGet(ctx, n, "b")
	second := srv.next(t)
	awaitRequest(t, second)
	refuse(t, second)
	if r := <-got; !isRefusal(r.err) {
		t.Errorf("Get after a protocol error = %q, %v; want its own answer, the refusal %q", r.v, r.err, refusal)
	}
}

// TestMuxScriptErrorNamedProtocolErrorKeepsCallsInFlight: an error reply
// that merely reads "ERR Protocol error: …" — a script's own
// redis.error_reply, which the server does not close after — must not
// cost the callers whose commands are in flight behind it on the same
// connection: the server runs them and answers, so they get their
// replies, not a connection failure (which, not Unsent, tells a caller
// its INCR may or may not have run). The connection takes no new call
// (the server may close it: see wire.Closes), and the next call, a GET,
// goes to another.
func TestMuxScriptErrorNamedProtocolErrorKeepsCallsInFlight(t *testing.T) {
	srv := launcher.Private(t, launcher.Options{})
	n := muxReviewNode(t, srv.Addr(), nil, Options{Conns: 1}, 10*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := n.Do(ctx, "DEL", "review:incr"); err != nil {
		t.Fatal(err)
	}
	c := conn0(t, n)
	// Each call queued behind the previous one, in order, on the one
	// connection.
	do := func(args ...any) <-chan outcome {
		return queued(t, c, func() (any, error) { return n.Do(ctx, args...) })
	}
	// The server holds the pipeline (its EVAL, a write command, is
	// postponed by a pause from another connection) until the calls behind
	// it are queued on the connection too, so that they are sent before
	// the script's error is read, however slow this client. Let go, it
	// answers the pipeline, whose last command pauses writes again: the
	// INCR behind it, and the GET behind that, wait until the test lets
	// them go, well after the connection stopped taking new calls.
	admin := pauseWrites(t, srv.Addr())
	before := pushes(c)
	first := make(chan []any, 1)
	go func() {
		res := n.DoMulti(ctx, []any{"EVAL", "return redis.error_reply('ERR Protocol error: raised by a script')", "0"}, []any{"CLIENT", "PAUSE", 60000, "WRITE"})
		first <- []any{res[0].Err, res[1].Err}
	}()
	waitFor(t, "the pipeline is queued", func() bool { return pushes(c) > before })
	incr := do("INCR", "review:incr")
	get := do("GET", "review:incr")
	if c.broken.Load() {
		t.Fatal("the connection failed before the server was let go")
	}
	admin.unpause()
	if r := <-first; r[0] == nil || !strings.Contains(r[0].(error).Error(), "raised by a script") || r[1] != nil {
		t.Fatalf("DoMulti = %v; want the script's error, then OK", r)
	}
	if !c.broken.Load() {
		t.Error("the connection is not broken after an error reading \"ERR Protocol error\": new calls may take it, which the server may close")
	}
	// Answered only now: longer than any short timer of the read side's
	// would have kept the connection open.
	time.Sleep(300 * time.Millisecond)
	admin.unpause()
	for _, tc := range []struct {
		name string
		ch   <-chan outcome
		want any
	}{{"INCR", incr, int64(1)}, {"GET", get, "1"}} {
		r := <-tc.ch
		if b, ok := r.v.([]byte); ok {
			r.v = string(b)
		}
		if r.err != nil || r.v != tc.want {
			t.Errorf("%s behind the script's error = %q, %v (unsent: %v); want %q: the server ran it and answered", tc.name, r.v, r.err, failure.Unsent(r.err), tc.want)
		}
	}
	v, err := n.Do(ctx, "GET", "review:incr")
	if b, _ := v.([]byte); err != nil || string(b) != "1" {
		t.Errorf("GET after the INCR = %v, %v", v, err)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		t.Fatal(err)
	}
}

// outcome is what a call started by queued returned.
type outcome struct {
	v   any
	err error
}

// queued starts f, a call on c, on a goroutine of its own, and returns
// once the call is queued on c behind those queued before; the channel
// delivers its outcome.
func queued(t *testing.T, c *muxConn, f func() (any, error)) <-chan outcome {
	t.Helper()
	before := pushes(c)
	ch := make(chan outcome, 1)
	go func() {
		v, err := f()
		ch <- outcome{v, err}
	}()
	waitFor(t, fmt.Sprintf("call %d is queued", before), func() bool { return pushes(c) > before })
	return ch
}

// pushes returns how many calls were queued on c.
func pushes(c *muxConn) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pushes
}

// socketClosed reports whether c's socket has been closed.
func socketClosed(c *muxConn) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// TestMuxCloseClosesAConnectionLeftToItsReader: a connection that takes no
// call any more but whose socket is left to its read side — after a write
// the peer reset, for what the server sent before it; after an error
// reply reading "ERR Protocol error", for the replies of the calls behind
// it — and that its slot's new connection has replaced, is closed before
// Close returns, however long it would be left open otherwise: the call
// still awaiting a reply on it fails, and no goroutine is left.
func TestMuxCloseClosesAConnectionLeftToItsReader(t *testing.T) {
	for _, tc := range []struct {
		name  string
		leave func(t *testing.T, c *muxConn, peer *net.TCPConn) // with a Get awaiting its reply on c, a second one behind it
		reply string                                            // the peer's reply to the first Get
	}{
		{"write reset", func(t *testing.T, c *muxConn, peer *net.TCPConn) {
			c.failWrite(&net.OpError{Op: "write", Net: "tcp", Err: os.NewSyscallError("write", syscall.ECONNRESET)})
		}, "$-1\r\n"},
		{"protocol error reply", func(t *testing.T, c *muxConn, peer *net.TCPConn) {}, "-" + refusal + "\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := startRefuser(t)
			before := goleak.IgnoreCurrent()
			n := muxReviewNode(t, srv.addr(), nil, Options{Conns: 1}, 10*time.Second)
			n.refusalWait = time.Hour // the connection stays open unless something closes it
			peer := srv.next(t)
			c := conn0(t, n)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			first := goGet(ctx, n, "a")
			awaitRequest(t, peer)
			waitFor(t, "the first Get waits for its reply", func() bool { return awaitingBytes(c) })
			queued := pushes(c)
			second := goGet(ctx, n, "b")
			waitFor(t, "the second Get is queued", func() bool { return pushes(c) > queued })
			tc.leave(t, c, peer)
			if _, err := peer.Write([]byte(tc.reply)); err != nil {
				t.Fatal(err)
			}
			<-first
			// The next call dials the slot's new connection.
			third := goGet(ctx, n, "c")
			next := srv.next(t)
			awaitRequest(t, next)
			if _, err := next.Write([]byte("$-1\r\n")); err != nil {
				t.Fatal(err)
			}
			if r := <-third; !errors.Is(r.err, backend.ErrNotFound) {
				t.Fatalf("Get on the slot's new connection = %q, %v; want ErrNotFound", r.v, r.err)
			}
			if conn0(t, n) == c {
				t.Fatal("the connection left to its reader is still its slot's")
			}
			closed := make(chan struct{})
			go func() {
				n.Close()
				close(closed)
			}()
			select {
			case <-closed:
			case <-time.After(10 * time.Second):
				t.Fatal("Close has not returned 10 s after it was called: it waits for a connection left to its reader")
			}
			if !socketClosed(c) {
				t.Error("the connection left to its reader is open after Close returned")
			}
			select {
			case r := <-second:
				if r.err == nil {
					t.Errorf("Get awaiting its reply on a connection Close closed = %q, nil; want an error", r.v)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the Get awaiting its reply on the connection left to its reader has not returned 10 s after Close")
			}
			peer.SetReadDeadline(time.Now().Add(10 * time.Second))
			if _, err := io.Copy(io.Discard, peer); err != nil {
				t.Errorf("the server's end of the connection left to its reader, after Close: %v; want the end of the stream", err)
			}
			goleak.VerifyNone(t, before)
		})
	}
}

// TestMuxCallsAroundARefusalGetTheirOwnOutcome: on one connection, calls
// queued before a request the server refuses (a bulk over
// proto-max-bulk-len) are answered; the refused one gets the refusal;
// those queued behind it, which the server never reads since it closes
// the connection, fail with a connection error — never with the refusal,
// another caller's — and did not run. The server holds the first of
// them (CLIENT PAUSE WRITE, from another connection: it parses nothing
// after a write command it postponed) until all of them are queued, so
// that no delay of the client's lets it answer before then.
func TestMuxCallsAroundARefusalGetTheirOwnOutcome(t *testing.T) {
	srv := launcher.Private(t, launcher.Options{Args: []string{"--proto-max-bulk-len", "1mb"}})
	n := muxReviewNode(t, srv.Addr(), nil, Options{Conns: 1}, 10*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	const counter = "refused:around"
	if _, err := n.Do(ctx, "DEL", counter); err != nil {
		t.Fatal(err)
	}
	c := conn0(t, n)
	queue := func(f func() (any, error)) <-chan outcome { return queued(t, c, f) }
	do := func(args ...any) <-chan outcome {
		return queue(func() (any, error) { return n.Do(ctx, args...) })
	}
	admin := pauseWrites(t, srv.Addr())
	big := bytes.Repeat([]byte("r"), 32<<20)
	first := do("INCR", counter) // postponed by the pause: the server parses nothing after it
	refused := do("SET", "refused:big", big)
	behind := do("INCR", counter)
	pipeline := queue(func() (any, error) {
		res := n.DoMulti(ctx, []any{"INCR", counter}, []any{"GET", counter})
		return nil, errors.Join(res[0].Err, res[1].Err)
	})
	if c.broken.Load() {
		t.Fatal("the connection failed before the server was let go")
	}
	admin.unpause()
	if r := <-first; r.err != nil || r.v != int64(1) {
		t.Errorf("INCR queued before the refused SET = %v, %v; want 1", r.v, r.err)
	}
	if r := <-refused; !strings.Contains(fmt.Sprint(r.err), "invalid bulk length") || errors.Is(r.err, backend.ErrConnection) {
		t.Errorf("SET over proto-max-bulk-len = %v, %v; want the server's refusal (invalid bulk length)", r.v, r.err)
	}
	for _, tc := range []struct {
		name string
		ch   <-chan outcome
	}{{"INCR", behind}, {"DoMulti", pipeline}} {
		r := <-tc.ch
		if !errors.Is(r.err, backend.ErrConnection) || strings.Contains(r.err.Error(), "Protocol error") || strings.Contains(r.err.Error(), "invalid bulk length") {
			t.Errorf("%s queued behind the refused SET = %v, %v; want a connection failure, not the refusal", tc.name, r.v, r.err)
		}
	}
	v, err := n.Do(ctx, "GET", counter)
	if b, _ := v.([]byte); err != nil || string(b) != "1" {
		t.Errorf("GET %s = %q, %v; want 1: the INCRs behind the refused SET never ran", counter, v, err)
	}
}

// pauser pauses a server's writes from a connection of its own.
type pauser struct {
	t  *testing.T
	rc redis.Conn
}

// pauseWrites has the server at addr postpone every write command, from
// another connection (CLIENT PAUSE WRITE), until unpause (or the test's
// end) lets it go: a connection whose write command is postponed has
// nothing after it parsed meanwhile, so the calls queued behind it are
// all sent before any of them is answered, however slow the client.
func pauseWrites(t *testing.T, addr string) *pauser {
	t.Helper()
	rc, err := redis.Dial("tcp", addr, redis.DialReadTimeout(10*time.Second), redis.DialWriteTimeout(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	p := &pauser{t: t, rc: rc}
	t.Cleanup(func() {
		rc.Do("CLIENT", "UNPAUSE")
		rc.Close()
	})
	if _, err := rc.Do("CLIENT", "PAUSE", 60000, "WRITE"); err != nil {
		t.Fatal(err)
	}
	return p
}

// unpause ends the server's pause, whoever set it.
func (p *pauser) unpause() {
	p.t.Helper()
	if _, err := p.rc.Do("CLIENT", "UNPAUSE"); err != nil {
		p.t.Fatalf("CLIENT UNPAUSE: %v", err)
	}
}
