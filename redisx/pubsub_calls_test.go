package redisx_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/redisx-go/kit/internal/launcher"
	"github.com/redisx-go/kit/redisx"
	"github.com/redisx-go/kit/strategy"
	"go.uber.org/goleak"
)

// Calls on a live Subscription that fail — a timeout, a channel the
// server refuses — undo what they added, and only that; a subscription
// the server refuses to restore ends, and says why.

// pauseServer makes srv hold every client's commands for d (CLIENT PAUSE
// ALL): they are run, in order, when it ends.
func pauseServer(t *testing.T, srv *launcher.Server, d time.Duration) {
	t.Helper()
	cli(t, srv, "CLIENT", "PAUSE", strconv.FormatInt(d.Milliseconds(), 10), "ALL")
}

// expectData reads sub's next message and checks it is payload on
// channel, within 5 s.
func expectData(t *testing.T, sub *redisx.Subscription, channel, payload string) {
	t.Helper()
	select {
	case m, ok := <-sub.Messages():
		if !ok {
			t.Fatalf("Messages closed; want %q on %q", payload, channel)
		}
		if m.Kind != redisx.Data || m.Channel != channel || string(m.Payload) != payload {
			t.Fatalf("message = %v %q %q; want data %q on %q", m.Kind, m.Channel, m.Payload, payload, channel)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("no message within 5 s; want %q on %q", payload, channel)
	}
}

// publishTo publishes payload on channel and checks that it reached want
// subscribers.
func publishTo(ctx context.Context, t *testing.T, c *redisx.Client, channel, payload string, want int64) {
	t.Helper()
	n, err := c.Publish(ctx, channel, []byte(payload))
	if err != nil || n != want {
		t.Fatalf("Publish(%q) = %d, %v; want %d subscribers", channel, n, err, want)
	}
}

// TestSubscribeTimeoutKeepsEarlierChannels: a Subscribe that times out
// while the server is paused unsubscribes the channels it added, not
// one an earlier Subscribe had.
func TestSubscribeTimeoutKeepsEarlierChannels(t *testing.T) {
	srv := launcher.Private(t, launcher.Options{})
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	c, err := redisx.New(ctx, redisx.Options{Addrs: []string{srv.Addr()}, Strategy: strategy.Multiplexed{}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sub, err := c.Subscribe(ctx, "news")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()

	pauseServer(t, srv, time.Second)
	short, cancelShort := context.WithTimeout(ctx, 100*time.Millisecond)
	err = sub.Subscribe(short, "news", "sports")
	cancelShort()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Subscribe while the server is paused = %v; want context.DeadlineExceeded", err)
	}
	// Confirmed on the same connection, so after what the failed call sent.
	if err := sub.Subscribe(ctx, "barrier"); err != nil {
		t.Fatal(err)
	}
	publishTo(ctx, t, c, "news", "still here", 1)
	publishTo(ctx, t, c, "sports", "undone", 0)
	expectData(t, sub, "news", "still here")
}

// TestSubscribeTimeoutKeepsConcurrentSubscribe: of two Subscribes of one
// channel in flight together, the one that times out leaves the channel
// to the other, which succeeds.
func TestSubscribeTimeoutKeepsConcurrentSubscribe(t *testing.T) {
	srv := launcher.Private(t, launcher.Options{})
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	c, err := redisx.New(ctx, redisx.Options{Addrs: []string{srv.Addr()}, Strategy: strategy.Multiplexed{}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sub, err := c.Subscribe(ctx, "base")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()

	pauseServer(t, srv, time.Second)
	patient := make(chan error, 1)
	go func() { patient <- sub.Subscribe(ctx, "x") }()
	time.Sleep(20 * time.Millisecond) // the patient call's SUBSCRIBE goes first
	short, cancelShort := context.WithTimeout(ctx, 100*time.Millisecond)
	err = sub.Subscribe(short, "x")
	cancelShort()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Subscribe with 100 ms while the server is paused = %v; want context.DeadlineExceeded", err)
	}
	if err := <-patient; err != nil {
		t.Fatalf("concurrent Subscribe with time to wait = %v; want nil", err)
	}
	publishTo(ctx, t, c, "x", "kept", 1)
	expectData(t, sub, "x", "kept")
}

// aclServer starts a server with an ACL user "u" (password "pw-u")
// allowed every key and command, and the channels matching allowed.
func aclServer(t *testing.T, allowed string) *launcher.Server {
	t.Helper()
	srv := launcher.Private(t, launcher.Options{})
	cli(t, srv, "ACL", "SETUSER", "u", "reset", "on", ">pw-u", "~*", "resetchannels", "&"+allowed, "+@all")
	return srv
}

// TestSubscribeRefusedFailsOnlyItsCall: the server's refusal of one
// Subscribe (NOPERM) fails that call, not another one waiting on the
// same connection, and the subscription goes on.
func TestSubscribeRefusedFailsOnlyItsCall(t *testing.T) {
	srv := aclServer(t, "allowed:*")
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	c, err := redisx.New(ctx, redisx.Options{Addrs: []string{srv.Addr()}, Username: "u", Password: "pw-u", Strategy: strategy.Multiplexed{}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sub, err := c.Subscribe(ctx, "allowed:a")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()

	// The server checks permissions before it holds a command: the first
	// SUBSCRIBE is held, and the connection's next commands wait behind
	// it, in order — the refusal is read while the last call waits.
	pauseServer(t, srv, time.Second)
	first, refused := make(chan error, 1), make(chan error, 1)
	go func() { first <- sub.Subscribe(ctx, "allowed:c") }()
	time.Sleep(50 * time.Millisecond)
	go func() { refused <- sub.Subscribe(ctx, "forbidden") }()
	time.Sleep(50 * time.Millisecond)
	if err := sub.Subscribe(ctx, "allowed:b"); err != nil {
		t.Fatalf("Subscribe(allowed:b) behind a refused Subscribe = %v; want nil", err)
	}
	if err := <-first; err != nil {
		t.Fatalf("Subscribe(allowed:c) = %v; want nil", err)
	}
	if err := <-refused; err == nil {
		t.Fatal("Subscribe(forbidden) = nil; want the server's refusal")
	}
	publishTo(ctx, t, c, "allowed:b", "b", 1)
	expectData(t, sub, "allowed:b", "b")
	publishTo(ctx, t, c, "allowed:a", "a", 1)
	expectData(t, sub, "allowed:a", "a")
}

// TestSubscribeRefusedOnNewConnectionFailsTheCall: names the server
// refuses on a connection dialled for them (a new subscription, a new
// shard) fail the call with ErrAuth; the subscription goes on.
func TestSubscribeRefusedOnNewConnectionFailsTheCall(t *testing.T) {
	srv := aclServer(t, "allowed:*")
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	c, err := redisx.New(ctx, redisx.Options{Addrs: []string{srv.Addr()}, Username: "u", Password: "pw-u", Strategy: strategy.Multiplexed{}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if sub, err := c.Subscribe(ctx, "forbidden:1", "forbidden:2"); !errors.Is(err, redisx.ErrAuth) {
		t.Fatalf("Client.Subscribe(forbidden channels) = %v, %v; want ErrAuth", sub, err)
	}
	sub, err := c.Subscribe(ctx, "allowed:a")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if err := sub.SSubscribe(ctx, "forbidden:s1", "forbidden:s2"); !errors.Is(err, redisx.ErrAuth) {
		t.Fatalf("SSubscribe(forbidden channels) = %v; want ErrAuth", err)
	}
	if err := sub.Subscribe(ctx, "allowed:b", "forbidden:3"); !errors.Is(err, redisx.ErrAuth) {
		t.Fatalf("Subscribe(allowed:b, forbidden:3) = %v; want ErrAuth", err)
	}
	// Confirmed on the same connection, so after what the failed call undid.
	if err := sub.Subscribe(ctx, "allowed:barrier"); err != nil {
		t.Fatal(err)
	}
	publishTo(ctx, t, c, "allowed:b", "undone", 0)
	publishTo(ctx, t, c, "allowed:a", "a", 1)
	expectData(t, sub, "allowed:a", "a")
	if err := sub.Err(); err != nil {
		t.Fatalf("Err() = %v; want nil: the subscription goes on", err)
	}
}

// TestSubscriptionEndsWhenResubscribeRefused: when the server refuses to
// subscribe a new connection again — the user lost the channel's
// permission (NOPERM), or its password changed — the subscription ends:
// Messages is closed after the messages received before, Err says why,
// and later calls return the same error.
func TestSubscriptionEndsWhenResubscribeRefused(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change []string // ACL SETUSER u …
		want   string   // in Err
	}{
		{"channel permission removed", []string{"resetchannels"}, "NOPERM"},
		{"password changed", []string{"resetpass", ">pw-other"}, "WRONGPASS"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := goleak.IgnoreCurrent()
			srv := aclServer(t, "news*")
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			c, err := redisx.New(ctx, redisx.Options{Addrs: []string{srv.Addr()}, Username: "u", Password: "pw-u", Strategy: strategy.Multiplexed{}})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			sub, err := c.Subscribe(ctx, "news")
			if err != nil {
				t.Fatal(err)
			}
			defer sub.Close()
			publishTo(ctx, t, c, "news", "before", 1)

			cli(t, srv, append([]string{"ACL", "SETUSER", "u"}, tc.change...)...)
			cli(t, srv, "CLIENT", "KILL", "USER", "u")
			deadline := time.After(5 * time.Second)
			var got []redisx.Message
		read:
			for {
				select {
				case m, ok := <-sub.Messages():
					if !ok {
						break read
					}
					got = append(got, m)
				case <-deadline:
					t.Fatalf("Messages still open 5 s after the server refused the subscription (%d messages read): it went dark", len(got))
				}
			}
			if len(got) != 1 || got[0].Kind != redisx.Data || string(got[0].Payload) != "before" {
				t.Errorf("messages before the end = %v; want the one published before", got)
			}
			err = sub.Err()
			if !errors.Is(err, redisx.ErrAuth) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "pw-") {
				t.Errorf("Err() = %v; want ErrAuth with the server's %s, and no password", err, tc.want)
			}
			if strings.Count(err.Error(), "redisx:") != 1 {
				t.Errorf("Err() = %q; want one redisx: prefix", err)
			}
			if err2 := sub.Subscribe(ctx, "news2"); err2 != err {
				t.Errorf("Subscribe after the end = %v; want Err()'s %v", err2, err)
			}
			if err2 := sub.Unsubscribe(ctx, "news"); err2 != err {
				t.Errorf("Unsubscribe after the end = %v; want Err()'s %v", err2, err)
			}
			if err := sub.Close(); err != nil {
				t.Errorf("Close after the end = %v", err)
			}
			c.Close()
			if err := goleak.Find(before, ignoreLauncher); err != nil {
				t.Errorf("goroutines left after Close: %v", err)
			}
		})
	}
}

// numSub returns the number of connections subscribed to channel
// (PUBSUB NUMSUB) on admin's server.
func numSub(t *testing.T, admin redis.Conn, channel string) int {
	t.Helper()
	v, err := redis.Values(admin.Do("PUBSUB", "NUMSUB", channel))
	if err != nil || len(v) != 2 {
		t.Fatalf("PUBSUB NUMSUB %s = %v, %v", channel, v, err)
	}
	n, _ := redis.Int(v[1], nil)
	return n
}

// TestSubscribeAndUnsubscribeRacingReconnects: Subscribe and Unsubscribe
// of one channel, concurrent, while the connection is killed every other
// round, all return; then a Subscribe leaves the server subscribed, and
// an Unsubscribe unsubscribed: the commands went out in the order of the
// changes, whatever the connection did meanwhile.
func TestSubscribeAndUnsubscribeRacingReconnects(t *testing.T) {
	srv := launcher.Private(t, launcher.Options{})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	c, err := redisx.New(ctx, redisx.Options{Addrs: []string{srv.Addr()}, Strategy: strategy.Multiplexed{}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sub, err := c.Subscribe(ctx, "keep")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		for range sub.Messages() {
		}
	}()
	admin, err := redis.Dial("tcp", srv.Addr(), redis.DialReadTimeout(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	for i := range 200 {
		if i%2 == 0 {
			if _, err := admin.Do("CLIENT", "KILL", "TYPE", "pubsub"); err != nil {
				t.Fatal(err)
			}
		}
		call, cancelCall := context.WithTimeout(ctx, 5*time.Second)
		errs := make(chan error, 2)
		go func() { errs <- sub.Subscribe(call, "x") }()
		go func() { errs <- sub.Unsubscribe(call, "x") }()
		for range 2 {
			if err := <-errs; err != nil {
				t.Fatalf("round %d: Subscribe or Unsubscribe racing = %v", i, err)
			}
		}
		err := sub.Subscribe(call, "x")
		cancelCall()
		if err != nil {
			t.Fatalf("round %d: Subscribe = %v", i, err)
		}
		if n := numSub(t, admin, "x"); n != 1 {
			t.Fatalf("round %d: %d connections subscribed to x once Subscribe returned; want 1", i, n)
		}
		if err := sub.Unsubscribe(ctx, "x"); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(2 * time.Second); numSub(t, admin, "x") != 0; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("round %d: x still subscribed 2 s after Unsubscribe", i)
			}
		}
	}
	sub.Close()
	<-drained
}

// TestUnsubscribeAnswersAWaitingSubscribe: an Unsubscribe of channels a
// Subscribe is still waiting for — named, or every channel — answers
// that Subscribe at once, with nil (it took effect first), while the
// server is paused; once it answers, the channels are not subscribed.
func TestUnsubscribeAnswersAWaitingSubscribe(t *testing.T) {
	for _, tc := range []struct {
		name  string
		unsub []string // Unsubscribe's arguments
		gone  []string // not subscribed afterwards
	}{
		{"named", []string{"x", "y"}, []string{"x", "y"}},
		{"every channel", nil, []string{"x", "y", "base"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := launcher.Private(t, launcher.Options{})
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			c, err := redisx.New(ctx, redisx.Options{Addrs: []string{srv.Addr()}, Strategy: strategy.Multiplexed{}})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			sub, err := c.Subscribe(ctx, "base")
			if err != nil {
				t.Fatal(err)
			}
			defer sub.Close()
			admin, err := redis.Dial("tcp", srv.Addr(), redis.DialReadTimeout(5*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			defer admin.Close()

			// Shorter than the silence after which a connection is replaced.
			pauseServer(t, srv, 2*time.Second)
			waiting := make(chan error, 1)
			go func() { waiting <- sub.Subscribe(ctx, "x", "y") }()
			time.Sleep(50 * time.Millisecond) // its SUBSCRIBE is held by the server
			if err := sub.Unsubscribe(ctx, tc.unsub...); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-waiting:
				if err != nil {
					t.Fatalf("Subscribe answered by Unsubscribe = %v; want nil", err)
				}
			case <-time.After(1500 * time.Millisecond):
				t.Fatal("Subscribe still waiting 1.5 s after an Unsubscribe of its channels, the server paused")
			}
			// Confirmed after the pause, behind what the calls sent.
			if err := sub.Subscribe(ctx, "barrier"); err != nil {
				t.Fatal(err)
			}
			for _, ch := range tc.gone {
				if n := numSub(t, admin, ch); n != 0 {
					t.Errorf("%s subscribed by %d connections after Unsubscribe; want none", ch, n)
				}
			}
			publishTo(ctx, t, c, "barrier", "b", 1)
			expectData(t, sub, "barrier", "b")
		})
	}
}
