package subscribe_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"go.uber.org/goleak"

	"github.com/redisx-go/kit/backend"
	"github.com/redisx-go/kit/internal/faultproxy"
	"github.com/redisx-go/kit/internal/launcher"
	"github.com/redisx-go/kit/internal/subscribe"
)

// The tests run the engine against servers of their own
// (launcher.Private), with a Protocol that subscribes to channels and
// reports what it sees on channels of its own.

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// serverWaiter is the launcher's goroutine that waits for a server
// process, which lives as long as the test's server.
var serverWaiter = goleak.IgnoreAnyFunction("github.com/redisx-go/kit/internal/launcher.(*Server).launch.func1")

// channels is a Protocol subscribed to names: it reports each connection
// that comes up (again or not), each message's payload and each loss,
// and ends the run on a NOPERM refusal.
type channels struct {
	names []string
	ups   chan bool
	msgs  chan string
	downs chan struct{}
	mu    sync.Mutex // the pinger's and the test's writes
}

func newChannels(names ...string) *channels {
	return &channels{names: names, ups: make(chan bool, 256), msgs: make(chan string, 256), downs: make(chan struct{}, 256)}
}

func (p *channels) Hello(c *subscribe.Conn) error {
	for _, n := range p.names {
		c.Send("SUBSCRIBE", n)
	}
	if err := c.Flush(); err != nil {
		return err
	}
	for range p.names {
		v, err := c.Receive()
		if err != nil {
			return err
		}
		if msg, _ := redis.Values(v, nil); len(msg) == 0 || string(msg[0].([]byte)) != "subscribe" {
			c.Early = append(c.Early, v)
		}
	}
	return nil
}

func (p *channels) Up(_ *subscribe.Conn, again bool) error {
	report(p.ups, again)
	return nil
}

func (p *channels) Push(_ *subscribe.Conn, v any) bool {
	msg, ok := v.([]any)
	if ok && len(msg) == 3 && string(msg[0].([]byte)) == "message" {
		report(p.msgs, string(msg[2].([]byte)))
	}
	return true
}

func (p *channels) Down(*subscribe.Conn) { report(p.downs, struct{}{}) }

func (p *channels) Failed(err error) error {
	var re redis.Error
	if errors.As(err, &re) && strings.HasPrefix(string(re), "NOPERM") {
		return err
	}
	return nil
}

// report sends v on ch, unless ch is full: the engine is never held up
// by a test that stopped listening.
func report[T any](ch chan T, v T) {
	select {
	case ch <- v:
	default:
	}
}

// options are the engine's, fast: pinged every 100 ms.
func options(cfg *backend.Config, addr string, lock sync.Locker) subscribe.Options {
	return subscribe.Options{
		Dial:    subscribe.Node(cfg, addr),
		Timeout: 2 * time.Second, Ping: 100 * time.Millisecond, PingLock: lock,
		MinBackoff: 10 * time.Millisecond, MaxBackoff: 100 * time.Millisecond,
	}
}

// start runs the engine on a goroutine of its own until the test ends;
// the channel it returns delivers Run's error.
func start(t *testing.T, o subscribe.Options, p subscribe.Protocol) (stop func(), done <-chan error) {
	ctx, cancel := context.WithCancel(context.Background())
	ch, finished := make(chan error, 1), make(chan struct{})
	go func() {
		defer close(finished)
		ch <- subscribe.Run(ctx, o, p)
	}()
	t.Cleanup(func() {
		cancel()
		<-finished
	})
	return cancel, ch
}

// wait returns what ch delivers within 10 s, or fails the test.
func wait[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("no %s within 10 s", what)
	}
	var zero T
	return zero
}

// publisher is a connection to srv, closed when the test ends.
func publisher(t *testing.T, srv *launcher.Server) redis.Conn {
	t.Helper()
	c, err := redis.Dial("tcp", srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// publishUntil publishes payload on channel every 20 ms until p reports
// it received, or 10 s have passed.
func publishUntil(t *testing.T, srv *launcher.Server, p *channels, channel, payload string) {
	t.Helper()
	c := publisher(t, srv)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := c.Do("PUBLISH", channel, payload); err != nil {
			t.Fatalf("PUBLISH: %v", err)
		}
		select {
		case got := <-p.msgs:
			if got == payload {
				return
			}
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("%q on %s not received within 10 s", payload, channel)
}

func TestKilledConnectionIsRestoredAndResubscribed(t *testing.T) {
	srv := launcher.Private(t, launcher.Options{})
	p := newChannels("a", "b")
	start(t, options(&backend.Config{}, srv.Addr(), &p.mu), p)
	if again := wait(t, p.ups, "first connection"); again {
		t.Fatalf("Up(again) = true on the first connection")
	}
	publishUntil(t, srv, p, "b", "before")

	if out, err := srv.CLI(t.Context(), "CLIENT", "KILL", "TYPE", "pubsub"); err != nil || out == "0" {
		t.Fatalf("CLIENT KILL TYPE pubsub = %q, %v", out, err)
	}
	wait(t, p.downs, "loss")
	if again := wait(t, p.ups, "second connection"); !again {
		t.Fatalf("Up(again) = false after a loss")
	}
	publishUntil(t, srv, p, "a", "after-a")
	publishUntil(t, srv, p, "b", "after-b")
}

func TestSilentConnectionIsReplaced(t *testing.T) {
	srv := launcher.Private(t, launcher.Options{})
	px, err := faultproxy.Start(t.Context(), srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer px.Close()
	p := newChannels("a")
	start(t, options(&backend.Config{}, px.Addr(), nil), p)
	wait(t, p.ups, "first connection")

	// The connection is open but nothing comes back any more: only the
	// pings' missing pongs tell.
	px.Strand()
	lost := time.Now()
	wait(t, p.downs, "loss of the half-open connection")
	if d := time.Since(lost); d > 3*time.Second {
		t.Errorf("half-open connection noticed after %v; want about 3 ping periods (300 ms)", d)
	}
	if again := wait(t, p.ups, "second connection"); !again {
		t.Fatalf("Up(again) = false after a loss")
	}
	publishUntil(t, srv, p, "a", "after")
}

func TestRefusedResubscribeEndsTheRun(t *testing.T) {
	srv := launcher.Private(t, launcher.Options{})
	if _, err := srv.CLI(t.Context(), "ACL", "SETUSER", "sub", "on", ">pw", "resetchannels", "&a", "+@all", "~*"); err != nil {
		t.Fatal(err)
	}
	p := newChannels("a")
	_, done := start(t, options(&backend.Config{Username: "sub", Password: "pw"}, srv.Addr(), nil), p)
	wait(t, p.ups, "first connection")

	// Redis 7 disconnects a client subscribed to a channel its user may
	// no longer use; the next connection's SUBSCRIBE is refused.
	if _, err := srv.CLI(t.Context(), "ACL", "SETUSER", "sub", "resetchannels"); err != nil {
		t.Fatal(err)
	}
	err := wait(t, done, "end of the run")
	var re redis.Error
	if !errors.As(err, &re) || !strings.HasPrefix(string(re), "NOPERM") {
		t.Fatalf("Run = %v; want the NOPERM refusal", err)
	}
	select {
	case again := <-p.ups:
		t.Fatalf("Up(%v) after the refusal", again)
	default:
	}
}

func TestCancelLeavesNoGoroutine(t *testing.T) {
	srv := launcher.Private(t, launcher.Options{})
	p := newChannels("a")
	stop, done := start(t, options(&backend.Config{}, srv.Addr(), &p.mu), p)
	wait(t, p.ups, "first connection")
	stop()
	if err := wait(t, done, "end of the run"); err != nil {
		t.Fatalf("Run = %v after its context ended; want nil", err)
	}
	goleak.VerifyNone(t, serverWaiter)
}

func TestCancelDuringBackoffReturns(t *testing.T) {
	srv := launcher.Private(t, launcher.Options{})
	addr := srv.Addr()
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	p := newChannels("a")
	o := options(&backend.Config{}, addr, nil)
	o.MaxBackoff = time.Hour
	stop, done := start(t, o, p)
	time.Sleep(200 * time.Millisecond) // a few dials refused
	stop()
	if err := wait(t, done, "end of the run"); err != nil {
		t.Fatalf("Run = %v after its context ended; want nil", err)
	}
	goleak.VerifyNone(t, serverWaiter)
}
