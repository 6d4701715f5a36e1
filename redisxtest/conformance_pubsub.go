package redisxtest

// The conformance suite's Pub/Sub: Subscribe, PSubscribe, SSubscribe,
// Publish, SPublish, the slow reader's buffer.

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redisx-go/kit/redisx"
	"go.uber.org/goleak"
)

// subscribeOrSkip subscribes c to channels, skipping t when the strategy
// has no Pub/Sub.
func subscribeOrSkip(ctx context.Context, t *testing.T, c *redisx.Client, channels ...string) *redisx.Subscription {
	t.Helper()
	sub, err := c.Subscribe(ctx, channels...)
	if errors.Is(err, redisx.ErrUnsupported) {
		t.Skipf("no Pub/Sub: %v", err)
	}
	if err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	return sub
}

// next returns the next message of sub, failing t after 5 s without one.
func next(t *testing.T, sub *redisx.Subscription) redisx.Message {
	t.Helper()
	select {
	case m, ok := <-sub.Messages():
		if !ok {
			t.Fatal("Messages closed")
		}
		return m
	case <-time.After(5 * time.Second):
		t.Fatal("no message within 5 s")
	}
	return redisx.Message{}
}

// expect reads the next message and checks it is payload on channel
// (matched by pattern, when not empty).
func expect(t *testing.T, sub *redisx.Subscription, channel, pattern, payload string) {
	t.Helper()
	m := next(t, sub)
	if m.Kind != redisx.Data || m.Channel != channel || m.Pattern != pattern || string(m.Payload) != payload {
		t.Fatalf("message = %v %q %q %q; want data on %q (pattern %q): %q", m.Kind, m.Channel, m.Pattern, m.Payload, channel, pattern, payload)
	}
}

// pubsubEveryMessage: every message published after Subscribe (and
// PSubscribe, SSubscribe) returns is received, in order; channels added
// and removed while running take effect; Close ends Messages and leaves
// no goroutine behind.
func (s *suite) pubsubEveryMessage(t *testing.T) {
	before := goleak.IgnoreCurrent()
	ctx := ctxT(t)
	c := s.client(t)
	a, b, extra := s.key(t, "a"), s.key(t, "b"), s.key(t, "extra")
	sub := subscribeOrSkip(ctx, t, c, a, b)
	for i := range 200 {
		ch := a
		if i%2 == 1 {
			ch = b
		}
		// The count is of the subscribers on the node that received it:
		// on a cluster, perhaps none.
		if _, err := c.Publish(ctx, ch, []byte(fmt.Sprint(i))); err != nil {
			t.Fatalf("Publish(%q): %v", ch, err)
		}
	}
	// In order per channel (on a cluster two channels may take two
	// paths, and interleave differently).
	nextOf := map[string]int{a: 0, b: 1}
	for range 200 {
		m := next(t, sub)
		want, ok := nextOf[m.Channel]
		if !ok || m.Kind != redisx.Data || string(m.Payload) != fmt.Sprint(want) {
			t.Fatalf("message = %v %q %q; want the next of %v", m.Kind, m.Channel, m.Payload, nextOf)
		}
		nextOf[m.Channel] = want + 2
	}
	if err := sub.Subscribe(ctx, extra); err != nil {
		t.Fatalf("Subscribe while running: %v", err)
	}
	pat := s.key(t, "p:")
	if err := sub.PSubscribe(ctx, pat+"*"); err != nil {
		t.Fatalf("PSubscribe while running: %v", err)
	}
	if err := sub.Unsubscribe(ctx, a); err != nil {
		t.Fatalf("Unsubscribe: %v", err)
	}
	c.Publish(ctx, a, []byte("after unsubscribe"))
	c.Publish(ctx, extra, []byte("extra"))
	c.Publish(ctx, pat+"x", []byte("matched"))
	// Two channels: on a cluster two publishes may take two nodes and
	// arrive in either order.
	want := map[string]string{extra: "\x00extra", pat + "x": pat + "*\x00matched"}
	for range 2 {
		m := next(t, sub)
		if w, ok := want[m.Channel]; !ok || m.Kind != redisx.Data || m.Pattern+"\x00"+string(m.Payload) != w {
			t.Fatalf("message = %v %q %q %q; want one of %q (channel: pattern\\x00payload)", m.Kind, m.Channel, m.Pattern, m.Payload, want)
		}
		delete(want, m.Channel)
	}
	if err := sub.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, ok := <-sub.Messages(); ok {
		t.Fatal("Messages still open after Close")
	}
	if err := sub.Subscribe(ctx, a); !errors.Is(err, redisx.ErrClosed) {
		t.Fatalf("Subscribe after Close = %v; want ErrClosed", err)
	}
	c.Close()
	if err := goleak.Find(before, goleak.IgnoreTopFunction("time.Sleep")); err != nil {
		t.Fatalf("goroutines left after Close: %v", err)
	}
}

// pubsubPatternsAndShards: PSubscribe delivers the pattern matched;
// SSubscribe receives what SPublish sends, on every slot of its channels.
func (s *suite) pubsubPatternsAndShards(t *testing.T) {
	ctx := ctxT(t)
	c := s.client(t)
	prefix := s.key(t, "news:")
	psub, err := c.PSubscribe(ctx, prefix+"*")
	if errors.Is(err, redisx.ErrUnsupported) {
		t.Skipf("no Pub/Sub: %v", err)
	}
	if err != nil {
		t.Fatalf("PSubscribe: %v", err)
	}
	defer psub.Close()
	c.Publish(ctx, prefix+"sport", []byte("goal"))
	expect(t, psub, prefix+"sport", prefix+"*", "goal")

	// Sharded channels in different slots: one connection per slot on a
	// cluster, every message received.
	chans := []string{s.key(t, "{s1}shard"), s.key(t, "{s2}shard"), s.key(t, "{s3}shard")}
	ssub, err := c.SSubscribe(ctx, chans...)
	if err != nil {
		t.Fatalf("SSubscribe: %v", err)
	}
	defer ssub.Close()
	for i, ch := range chans {
		if n, err := c.SPublish(ctx, ch, []byte(fmt.Sprint(i))); err != nil || n != 1 {
			t.Fatalf("SPublish(%q) = %d, %v; want 1 subscriber", ch, n, err)
		}
		expect(t, ssub, ch, "", fmt.Sprint(i))
	}
	if err := ssub.SUnsubscribe(ctx, chans[0]); err != nil {
		t.Fatalf("SUnsubscribe: %v", err)
	}
	c.SPublish(ctx, chans[0], []byte("gone"))
	c.SPublish(ctx, chans[1], []byte("still"))
	expect(t, ssub, chans[1], "", "still")
}

// pubsubSlowReader: with a buffer of 10, a reader that reads nothing while
// 100 messages arrive loses the oldest ones — counted — and then gets the
// newest ten, in order.
func (s *suite) pubsubSlowReader(t *testing.T) {
	ctx := ctxT(t)
	o := s.opts
	o.PubSubBuffer = 10
	c, err := redisx.New(ctx, o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	defer c.Close()
	ch := s.key(t, "slow")
	sub := subscribeOrSkip(ctx, t, c, ch)
	for i := range 100 {
		if _, err := c.Publish(ctx, ch, []byte(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	// Ten messages wait in the buffer, and perhaps one in the hand-off to
	// Messages: 89 or 90 dropped once all have arrived.
	deadline := time.Now().Add(5 * time.Second)
	for sub.Dropped() < 89 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // the last ones, if any, arrive
	dropped := sub.Dropped()
	if dropped != 89 && dropped != 90 {
		t.Fatalf("Dropped() = %d; want 89 or 90", dropped)
	}
	if n := c.Stats().PubSubDropped; n != dropped {
		t.Fatalf("Stats().PubSubDropped = %d; want %d", n, dropped)
	}
	var got []int
	for len(got) < int(100-dropped) {
		m := next(t, sub)
		var i int
		fmt.Sscan(string(m.Payload), &i)
		got = append(got, i)
	}
	for j, i := range got[len(got)-10:] {
		if i != 90+j {
			t.Fatalf("messages kept = %v; want the newest ten, 90 to 99, last", got)
		}
	}
	if len(got) == 11 && got[0] >= 90 {
		t.Fatalf("messages kept = %v; want an older one first, then 90 to 99", got)
	}
}
