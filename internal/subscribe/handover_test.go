package subscribe_test

import (
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redisx-go/kit/backend"
	"github.com/redisx-go/kit/internal/launcher"
	"github.com/redisx-go/kit/internal/subscribe"
)

// aging is channels with handovers: keep says whether HandOver keeps the
// old connection; it reports the connections handed over, retired, and
// each Missed.
type aging struct {
	*channels
	keep    bool
	handed  chan *subscribe.Conn
	retired chan *subscribe.Conn
	missed  chan struct{}
}

func newAging(keep bool, names ...string) *aging {
	return &aging{channels: newChannels(names...), keep: keep,
		handed: make(chan *subscribe.Conn, 256), retired: make(chan *subscribe.Conn, 256), missed: make(chan struct{}, 256)}
}

func (p *aging) HandOver(old, _ *subscribe.Conn) bool {
	report(p.handed, old)
	return p.keep
}

func (p *aging) Retired(old *subscribe.Conn) { report(p.retired, old) }
func (p *aging) Missed()                     { report(p.missed, struct{}{}) }

// startAging runs the engine with MaxAge age on a server of its own,
// subscribed to "a", and returns once the first connection is up.
func startAging(t *testing.T, keep bool, age time.Duration) (*launcher.Server, *aging) {
	srv := launcher.Private(t, launcher.Options{})
	p := newAging(keep, "a")
	o := options(&backend.Config{}, srv.Addr(), &p.mu)
	o.MaxAge = age
	start(t, o, p)
	wait(t, p.ups, "first connection")
	return srv, p
}

// received is a Push that records each message's payload, taking a
// while over each: the connection has a backlog when it is handed over.
type received struct {
	*aging
	mu  sync.Mutex
	got map[string]bool
}

func (p *received) Push(c *subscribe.Conn, v any) bool {
	if msg, ok := v.([]any); ok && len(msg) == 3 && string(msg[0].([]byte)) == "message" {
		p.mu.Lock()
		p.got[string(msg[2].([]byte))] = true
		p.mu.Unlock()
		time.Sleep(100 * time.Microsecond)
	}
	return true
}

func (p *received) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.got)
}

// TestHandoverLosesNoPush: a connection replaced for its age every
// 150 ms is read up to the marker's pong — with a backlog, as messages
// come faster than they are taken — so that every message published is
// received, without a loss, a Down or a marker.
func TestHandoverLosesNoPush(t *testing.T) {
	srv := launcher.Private(t, launcher.Options{})
	p := &received{aging: newAging(false, "a"), got: map[string]bool{}}
	o := options(&backend.Config{}, srv.Addr(), &p.mu)
	o.MaxAge = 150 * time.Millisecond
	start(t, o, p)
	wait(t, p.ups, "first connection")

	pub := publisher(t, srv)
	// Waves of messages, each taking longer to read than MaxAge.
	const waves, batch = 4, 300
	n := 0
	for range waves {
		for range batch {
			pub.Send("PUBLISH", "a", strconv.Itoa(n))
			n++
		}
		if err := pub.Flush(); err != nil {
			t.Fatal(err)
		}
		for range batch {
			if _, err := pub.Receive(); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	deadline := time.Now().Add(10 * time.Second)
	for p.count() < n && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := p.count(); got < n {
		t.Fatalf("%d of %d messages received across %d handovers; want every one", got, n, len(p.handed))
	}
	if len(p.handed) < 2 {
		t.Errorf("%d handovers with MaxAge 150 ms; want several", len(p.handed))
	}
	if len(p.missed) > 0 || len(p.downs) > 0 {
		t.Errorf("%d Missed, %d Down across the handovers; want none", len(p.missed), len(p.downs))
	}
	for len(p.ups) > 0 {
		if <-p.ups {
			t.Errorf("Up(again) = true after a handover; want false: nothing was lost")
		}
	}
}

// TestKeptConnectionIsReadUntilClosed: a connection HandOver keeps is
// read on beside its successor, and retired once closed.
func TestKeptConnectionIsReadUntilClosed(t *testing.T) {
	srv, p := startAging(t, true, 300*time.Millisecond)
	old := wait(t, p.handed, "handover")
	wait(t, p.ups, "successor")

	// Both are subscribed: a message comes twice.
	pub := publisher(t, srv)
	if n, err := redis.Int(pub.Do("PUBLISH", "a", "twice")); err != nil || n < 2 {
		t.Fatalf("PUBLISH = %d, %v; want 2 subscribers, the kept connection and its successor", n, err)
	}
	wait(t, p.msgs, "message on one connection")
	wait(t, p.msgs, "message on the other")

	old.Close()
	if got := wait(t, p.retired, "retirement"); got != old {
		t.Fatalf("Retired(%p); want the connection closed, %p", got, old)
	}
	if len(p.downs) > 0 {
		t.Errorf("Down after a kept connection ended; want Retired only")
	}
	publishUntil(t, srv, p.channels, "a", "after")
}
