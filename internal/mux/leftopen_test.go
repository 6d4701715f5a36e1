package mux

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redisx-go/kit/backend"
	"github.com/redisx-go/kit/internal/launcher"
	"github.com/redisx-go/kit/internal/wire"
	"go.uber.org/goleak"
)

// A connection left to its read side after an error reply reading "ERR
// Protocol error" (see failOpen): what the callers of the calls already
// on it get, whatever they do meanwhile.

// TestMuxLeftOpenConnectionServesEveryKindOfCaller: behind a script's
// error reading "ERR Protocol error", which the server goes on after, a
// caller that leaves (its context cancelled) returns at once, and its
// INCR, which the server runs, is still read off the connection; a
// pipeline sent before and awaited only afterwards (a caller that cannot
// lead) and a GET behind them get their replies; then Close leaves no
// goroutine behind.
func TestMuxLeftOpenConnectionServesEveryKindOfCaller(t *testing.T) {
	srv := launcher.Private(t, launcher.Options{})
	before := goleak.IgnoreCurrent()
	n := muxReviewNode(t, srv.Addr(), nil, Options{Conns: 1}, 10*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	const key = "leftopen:n"
	if _, err := n.Do(ctx, "DEL", key); err != nil {
		t.Fatal(err)
	}
	c := conn0(t, n)
	queue := func(f func() (any, error)) <-chan outcome { return queued(t, c, f) }
	// As in TestMuxScriptErrorNamedProtocolErrorKeepsCallsInFlight: the
	// pipeline is held until the calls behind it are queued, and its last
	// command holds those until the test lets them go.
	admin := pauseWrites(t, srv.Addr())
	first := queue(func() (any, error) {
		res := n.DoMulti(ctx, []any{"EVAL", "return redis.error_reply('ERR Protocol error: raised by a script')", "0"}, []any{"CLIENT", "PAUSE", 60000, "WRITE"})
		return nil, res[0].Err
	})
	leaving, leave := context.WithCancel(ctx)
	defer leave()
	left := queue(func() (any, error) { return n.Do(leaving, "INCR", key) })
	queued := pushes(c)
	cmds := [][]any{{"INCR", key}, {"GET", key}}
	rps := wire.MultiReplies(len(cmds))
	sent, err := n.Send(ctx, []string{key}, wire.AppendMulti(nil, cmds), rps)
	if err != nil {
		t.Fatal(err)
	}
	if pushes(c) == queued {
		t.Fatal("the pipeline was not queued on the connection")
	}
	get := queue(func() (any, error) { return n.Do(ctx, "GET", key) })
	if c.broken.Load() {
		t.Fatal("the connection failed before the server was let go")
	}
	admin.unpause()
	if r := <-first; r.err == nil {
		t.Fatal("the script's error is missing")
	}
	if !c.broken.Load() {
		t.Fatal("the connection takes new calls after an error reading \"ERR Protocol error\"")
	}
	leave()
	select {
	case r := <-left:
		if !errors.Is(r.err, context.Canceled) {
			t.Errorf("INCR whose caller left = %v, %v; want context.Canceled", r.v, r.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a caller that left, its call on a connection left to its reader, has not returned 10 s later")
	}
	admin.unpause()
	if err := sent.Await(ctx); err != nil {
		t.Errorf("pipeline sent before the error, awaited after it = %v; want its replies", err)
	} else if rps[0].Err != nil || rps[1].Err != nil || rps[0].Any != int64(2) {
		t.Errorf("pipeline sent before the error = %v, %v / %v, %v; want 2 (the left INCR ran first), then its value", rps[0].Any, rps[0].Err, rps[1].Any, rps[1].Err)
	}
	if r := <-get; r.err != nil || string(asBytes(r.v)) != "2" {
		t.Errorf("GET behind them = %v, %v; want 2", r.v, r.err)
	}
	waitFor(t, "the connection left to its reader is closed once its calls are answered", func() bool { return socketClosed(c) })
	if b := n.Stats().BrokenConns; b != 1 {
		t.Errorf("BrokenConns = %d; want 1: the connection left to its reader, counted once", b)
	}
	n.Close()
	goleak.VerifyNone(t, before)
}

func asBytes(v any) []byte {
	b, _ := v.([]byte)
	return b
}

// TestMuxLeftOpenConnectionFailsAnOverdueReply: a connection left to its
// read side after an error reply reading "ERR Protocol error" is no
// longer its slot's, which the watchdog looks at, yet the ReadTimeout rule
// still holds on it: a call behind the error whose reply never comes (a
// server that neither answers nor closes) fails with a connection error
// after about ReadTimeout, not never, and the socket is closed.
func TestMuxLeftOpenConnectionFailsAnOverdueReply(t *testing.T) {
	srv := startRefuser(t)
	n := muxReviewNode(t, srv.addr(), nil, Options{Conns: 1}, 300*time.Millisecond)
	peer := srv.next(t)
	c := conn0(t, n)
	first := goGet(context.Background(), n, "a")
	awaitRequest(t, peer)
	waitFor(t, "the first Get leads", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.reading && len(c.queue) == 0
	})
	queued := pushes(c)
	second := goGet(context.Background(), n, "b")
	waitFor(t, "the second Get is queued", func() bool { return pushes(c) > queued })
	if _, err := peer.Write([]byte("-" + refusal + "\r\n")); err != nil {
		t.Fatal(err)
	}
	if r := <-first; !isRefusal(r.err) {
		t.Fatalf("Get refused = %q, %v; want the refusal", r.v, r.err)
	}
	select {
	case r := <-second:
		if !errors.Is(r.err, backend.ErrConnection) {
			t.Errorf("Get whose reply never comes, behind the error = %q, %v; want a connection failure", r.v, r.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Get whose reply never comes, on a connection left to its reader, has not failed 10 s later (ReadTimeout 300 ms)")
	}
	if !socketClosed(c) {
		t.Error("the connection whose reply was overdue is open")
	}
}
