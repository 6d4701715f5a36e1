package redisx_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/redisx-go/kit/internal/launcher"
	"github.com/redisx-go/kit/localcache"
	"github.com/redisx-go/kit/redisx"
	"github.com/redisx-go/kit/strategy"
	"go.uber.org/goleak"
)

// Pub/Sub across failures: a server restart, a cluster master failover.
// Every message published once the subscription is live again is
// received, the gap is marked, and Close leaves no goroutine behind.

// ignoreLauncher ignores the goroutine the launcher starts to reap a
// restarted redis-server: it belongs to the server, not to the client.
var ignoreLauncher = goleak.IgnoreAnyFunction("github.com/redisx-go/kit/internal/launcher.(*Server).launch.func1")

// awaitMarker reads sub until a Reconnected marker, failing t at
// deadline; it returns the data messages read before it.
func awaitMarker(t *testing.T, sub *redisx.Subscription, deadline time.Time) []redisx.Message {
	t.Helper()
	var before []redisx.Message
	for {
		select {
		case m := <-sub.Messages():
			if m.Kind == redisx.Reconnected {
				return before
			}
			before = append(before, m)
		case <-time.After(time.Until(deadline)):
			t.Fatalf("no Reconnected marker by the deadline (%d messages read)", len(before))
		}
	}
}

// probe is a channel and how to publish on it.
type probe struct {
	pub func(ctx context.Context, ch string, msg []byte) (int64, error)
	ch  string
}

// awaitLive publishes "probe" on each channel of probes, again every
// 50 ms on those not heard yet, until sub has received one on every
// channel, by deadline; then it drains the probes still on their way.
func awaitLive(ctx context.Context, t *testing.T, sub *redisx.Subscription, deadline time.Time, probes ...probe) {
	t.Helper()
	live := map[string]bool{}
	for len(live) < len(probes) {
		if time.Now().After(deadline) {
			t.Fatalf("live again on %d of %d channels by the deadline", len(live), len(probes))
		}
		for _, p := range probes {
			if !live[p.ch] {
				_, _ = p.pub(ctx, p.ch, []byte("probe")) // retried on the next round
			}
		}
		wait := time.After(50 * time.Millisecond)
	round:
		for {
			select {
			case m := <-sub.Messages():
				if m.Kind == redisx.Data && string(m.Payload) == "probe" {
					live[m.Channel] = true
				}
			case <-wait:
				break round
			}
		}
	}
	for {
		select {
		case <-sub.Messages():
		case <-time.After(100 * time.Millisecond):
			return
		}
	}
}

// publishAndReceive publishes n messages tagged tag on each channel (with
// pub, retried while the client reconnects) and checks that sub receives
// all of them, in order per channel, within 5 s; markers are skipped.
func publishAndReceive(ctx context.Context, t *testing.T, sub *redisx.Subscription, pub func(ctx context.Context, ch string, msg []byte) (int64, error), tag string, n int, channels ...string) {
	t.Helper()
	for i := range n {
		for _, ch := range channels {
			msg := []byte(fmt.Sprintf("%s-%d", tag, i))
			for attempt := 0; ; attempt++ {
				_, err := pub(ctx, ch, msg)
				if err == nil {
					break
				}
				if attempt > 50 {
					t.Fatalf("publish on %q: %v", ch, err)
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
	}
	next := map[string]int{}
	for got := 0; got < n*len(channels); {
		select {
		case m := <-sub.Messages():
			if m.Kind != redisx.Data {
				continue // another connection's marker: each comes before its connection's messages
			}
			got++
			if want := fmt.Sprintf("%s-%d", tag, next[m.Channel]); string(m.Payload) != want {
				t.Fatalf("message on %q = %q; want %q", m.Channel, m.Payload, want)
			}
			next[m.Channel]++
		case <-time.After(5 * time.Second):
			t.Fatalf("missing messages: received %v of %d per channel", next, n)
		}
	}
}

func TestSubscriptionSurvivesServerRestart(t *testing.T) {
	if launcher.External() {
		t.Skip("restarts the server, which REDISX_TEST_ADDR's external server does not allow")
	}
	srv := launcher.Standalone(t, launcher.Options{})
	for _, tc := range []struct {
		name string
		s    strategy.Strategy
	}{
		{"multiplexed", strategy.Multiplexed{}},
		{"pool", strategy.Pool{Size: 4}},
		{"near", localcache.Near{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := goleak.IgnoreCurrent()
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			c, err := redisx.New(ctx, redisx.Options{Addrs: []string{srv.Addr()}, Strategy: tc.s})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			ch, shard, pat := "restart:"+tc.name, "restart-shard:"+tc.name, "restart-pat:"+tc.name
			sub, err := c.Subscribe(ctx, ch)
			if err != nil {
				t.Fatal(err)
			}
			if err := sub.SSubscribe(ctx, shard); err != nil {
				t.Fatal(err)
			}
			if err := sub.PSubscribe(ctx, pat+":*"); err != nil {
				t.Fatal(err)
			}
			publishAndReceive(ctx, t, sub, c.Publish, "before", 20, ch, pat+":x")
			publishAndReceive(ctx, t, sub, c.SPublish, "before", 20, shard)

			if err := srv.Kill(); err != nil {
				t.Fatal(err)
			}
			if err := srv.Restart(ctx); err != nil {
				t.Fatal(err)
			}
			restarted := time.Now()
			if early := awaitMarker(t, sub, restarted.Add(2*time.Second)); len(early) > 0 {
				t.Errorf("%d messages of an empty server before the marker", len(early))
			}
			// Two connections here (channels and patterns on one, the shard
			// on the other) come back one after the other, and a message
			// published before its connection is back is the gap the marker
			// announces (two markers in a row are one): wait until both are
			// live, then every message must arrive.
			awaitLive(ctx, t, sub, restarted.Add(2*time.Second),
				probe{c.Publish, ch}, probe{c.Publish, pat + ":x"}, probe{c.SPublish, shard})
			publishAndReceive(ctx, t, sub, c.Publish, "after", 50, ch, pat+":x")
			publishAndReceive(ctx, t, sub, c.SPublish, "after", 50, shard)
			if d := time.Since(restarted); d > 2*time.Second {
				t.Errorf("subscription live again %v after the restart; want within 2 s", d)
			}
			sub.Close()
			c.Close()
			if err := goleak.Find(before, ignoreLauncher); err != nil {
				t.Errorf("goroutines left after Close: %v", err)
			}
		})
	}
}

// subscriberNode returns the node of cl where a connection named name has
// a sharded subscription (CLIENT LIST's ssub), or nil.
func subscriberNode(ctx context.Context, t *testing.T, cl *launcher.Cluster, name string) *launcher.Server {
	t.Helper()
	for _, n := range cl.Nodes() {
		out, err := n.CLI(ctx, "CLIENT", "LIST")
		if err != nil {
			continue // a node killed earlier
		}
		for line := range strings.Lines(out) {
			if strings.Contains(line, " name="+name+" ") && !strings.Contains(line, " ssub=0 ") {
				return n
			}
		}
	}
	return nil
}

// TestSSubscribeFollowsMasterFailover: a sharded subscription keeps
// receiving what is published on its slot through a manual failover (the
// shard's messages reach its former master, now a replica, by
// replication) and, when the node it is connected to is killed, follows
// the slot to its master — marked by Reconnected — within the node
// timeout and 2 s.
func TestSSubscribeFollowsMasterFailover(t *testing.T) {
	cl := launcher.ClusterForTest(t, launcher.ClusterOptions{Replicas: 1})
	if cl.External() {
		t.Skip("fails masters over, which REDISX_TEST_CLUSTER's external cluster does not allow")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	for _, tc := range []struct {
		name string
		s    strategy.Strategy
	}{
		{"multiplexed", strategy.Multiplexed{}},
		{"pool", strategy.Pool{Size: 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := goleak.IgnoreCurrent()
			name := "redisx-ssub-" + tc.name
			c, err := redisx.New(ctx, redisx.Options{Addrs: cl.Addrs(), Strategy: tc.s, ClientName: name})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			ch := "{failover:" + tc.name + "}news"
			master, err := cl.MasterOf(ctx, redisx.Slot(ch))
			if err != nil {
				t.Fatal(err)
			}
			replicas, err := cl.ReplicasOf(ctx, master)
			if err != nil || len(replicas) == 0 {
				t.Fatalf("ReplicasOf(%s) = %v, %v", master.Addr(), replicas, err)
			}
			sub, err := c.SSubscribe(ctx, ch)
			if err != nil {
				t.Fatal(err)
			}
			defer sub.Close()
			if n := subscriberNode(ctx, t, cl, name); n != master {
				t.Fatalf("subscribed on %v; want the slot's master %s", n, master.Addr())
			}
			publishAndReceive(ctx, t, sub, c.SPublish, "before", 20, ch)

			// A manual failover; then publishers that know the new master.
			if err := cl.Failover(ctx, replicas[0]); err != nil {
				t.Fatal(err)
			}
			fresh, err := redisx.New(ctx, redisx.Options{Addrs: cl.Addrs(), Strategy: tc.s})
			if err != nil {
				t.Fatal(err)
			}
			defer fresh.Close()
			start := time.Now()
			publishAndReceive(ctx, t, sub, fresh.SPublish, "failover", 50, ch)
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("live again %v after the failover; want within 2 s", d)
			}

			// The node the subscription is on killed: it follows the slot
			// to its master.
			victim := subscriberNode(ctx, t, cl, name)
			if victim == nil {
				t.Fatal("the subscription is on no node")
			}
			wasMaster := victim == replicas[0]
			if err := victim.Kill(); err != nil {
				t.Fatal(err)
			}
			start = time.Now()
			awaitMarker(t, sub, start.Add(2*time.Second+2*time.Second)) // node timeout + 2 s
			publishAndReceive(ctx, t, sub, c.SPublish, "killed", 50, ch)
			t.Logf("%s killed (a master: %v): live again in %v", victim.Addr(), wasMaster, time.Since(start).Round(time.Millisecond))
			if d := time.Since(start); d > 4*time.Second {
				t.Errorf("live again %v after the kill; want within the node timeout + 2 s", d)
			}
			now, err := cl.MasterOf(ctx, redisx.Slot(ch))
			if err != nil {
				t.Fatal(err)
			}
			if n := subscriberNode(ctx, t, cl, name); n != now {
				t.Errorf("subscribed on %v after the kill; want the slot's master %s", n, now.Addr())
			}
			if err := victim.Restart(ctx); err != nil {
				t.Fatal(err)
			}
			if err := cl.WaitOK(ctx); err != nil {
				t.Fatal(err)
			}

			// The master itself killed: the cluster fails it over to its
			// replica after the node timeout, and the subscription follows.
			if err := now.Kill(); err != nil {
				t.Fatal(err)
			}
			// The cluster's own failover takes 3.5-4.5 s here (FAIL agreed
			// after the 2 s node timeout, then the replica's election
			// delay): the subscription must be live within 2 s of the
			// promotion, which a poll of the slot map times.
			start = time.Now()
			promoted := make(chan time.Duration, 1)
			go func() {
				for ctx.Err() == nil {
					if m, err := cl.MasterOf(ctx, redisx.Slot(ch)); err == nil && m != now {
						promoted <- time.Since(start)
						return
					}
					time.Sleep(20 * time.Millisecond)
				}
				promoted <- -1
			}()
			awaitMarker(t, sub, start.Add(2*time.Second+10*time.Second))
			publishAndReceive(ctx, t, sub, c.SPublish, "failed-over", 50, ch)
			live, at := time.Since(start), <-promoted
			t.Logf("master %s killed: promoted after %v, live again after %v", now.Addr(), at.Round(time.Millisecond), live.Round(time.Millisecond))
			if at < 0 || live-at > 2*time.Second {
				t.Errorf("live again %v after the master was killed, %v after its replica was promoted; want within 2 s of the promotion", live, live-at)
			}
			if err := now.Restart(ctx); err != nil {
				t.Fatal(err)
			}
			sub.Close()
			c.Close()
			fresh.Close()
			if err := goleak.Find(before, ignoreLauncher); err != nil {
				t.Errorf("goroutines left after Close: %v", err)
			}
			if err := cl.WaitOK(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestSubscribeOverGoRedisIsUnsupported(t *testing.T) {
	c, _ := newFakeClient(t)
	if _, err := c.Subscribe(t.Context(), "ch"); !errors.Is(err, redisx.ErrUnsupported) {
		t.Fatalf("Subscribe without a SessionDialer = %v; want ErrUnsupported", err)
	}
}

// TestSSubscribeFollowsSlotMoveAfterUnsubscribeWhileReconnecting: a
// sharded channel unsubscribed while its connection is being replaced,
// and subscribed again on the new one, still follows its slot when the
// slot moves to another master: the server's own unsubscribe is not taken
// for the reply to a command that was never sent on that connection.
func TestSSubscribeFollowsSlotMoveAfterUnsubscribeWhileReconnecting(t *testing.T) {
	cl := launcher.ClusterForTest(t, launcher.ClusterOptions{})
	if cl.External() {
		t.Skip("moves a slot, which REDISX_TEST_CLUSTER's external cluster does not allow")
	}
	before := goleak.IgnoreCurrent()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	// A client name: the new connection's handshake (CLIENT SETNAME) is
	// held by the pause below, before it subscribes to anything.
	c, err := redisx.New(ctx, redisx.Options{Addrs: cl.Addrs(), Strategy: strategy.Multiplexed{}, ClientName: "redisx-ssub-move"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	x, y := "{move}x", "{move}y" // one slot, one connection
	slot := redisx.Slot(x)
	master, err := cl.MasterOf(ctx, slot)
	if err != nil {
		t.Fatal(err)
	}
	sub, err := c.SSubscribe(ctx, x, y)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()

	// The subscription's connection killed and the server paused at once:
	// x is unsubscribed while the connection is being replaced.
	admin, err := redis.Dial("tcp", master.Addr(), redis.DialReadTimeout(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	admin.Send("MULTI")
	admin.Send("CLIENT", "KILL", "TYPE", "pubsub")
	admin.Send("CLIENT", "PAUSE", 1000, "ALL")
	if _, err := admin.Do("EXEC"); err != nil {
		t.Fatalf("CLIENT KILL, CLIENT PAUSE: %v", err)
	}
	admin.Close()
	if err := sub.SUnsubscribe(ctx, x); err != nil {
		t.Fatal(err)
	}
	awaitMarker(t, sub, time.Now().Add(5*time.Second))
	if err := sub.SSubscribe(ctx, x); err != nil {
		t.Fatal(err)
	}
	if err := sub.SUnsubscribe(ctx, y); err != nil {
		t.Fatal(err)
	}
	publishAndReceive(ctx, t, sub, c.SPublish, "before", 5, x)

	var to *launcher.Server
	masters, err := cl.Masters(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range masters {
		if m != master {
			to = m
			break
		}
	}
	if err := cl.MoveSlot(ctx, slot, to); err != nil {
		t.Fatal(err)
	}
	awaitMarker(t, sub, time.Now().Add(5*time.Second))
	publishAndReceive(ctx, t, sub, c.SPublish, "moved", 20, x)
	sub.Close()
	c.Close()
	if err := goleak.Find(before, ignoreLauncher); err != nil {
		t.Errorf("goroutines left after Close: %v", err)
	}
}
