package mux

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redisx-go/kit/backend"
	"github.com/redisx-go/kit/internal/faultproxy"
	"github.com/redisx-go/kit/internal/launcher"
)

// TestSilenceStartsOverWhenAReplyIsAnswered is the watchdog's rule on a
// connection whose state the test sets by hand: a reply answered (even
// with no new byte, its bytes having come before the last look) starts
// the silence over, so that the call sent after it is timed from then;
// a silence that lasts ReadTimeout with a call pending is overdue,
// unless the head call's deadline is later; nothing pending is never
// overdue; and a call whose request is still being written is not
// awaited yet: its silence starts once the write has ended.
func TestSilenceStartsOverWhenAReplyIsAnswered(t *testing.T) {
	const rt = 30 * time.Millisecond
	c := &muxConn{}
	var s silence
	look := func(step string, want bool) {
		t.Helper()
		if got, quiet := s.look(c, rt); got != want {
			t.Fatalf("%s: overdue = %v after %v of silence; want %v", step, got, quiet, want)
		}
	}
	// queue reserves and queues a call; written marks the end of the write
	// that took every call queued so far (the socket tells nothing of
	// acknowledgements: c.acks is zero).
	queue := func() {
		c.reserve(1 << 20)
		c.pushes++
	}
	written := func() { c.mark(c.pushes) }

	look("nothing pending", false)
	queue() // call A
	written()
	c.live.progress.Add(64) // A's reply arrives, not yet answered
	look("A's reply just arrived", false)
	c.release(1) // A answered, no new byte
	queue()      // call B, sent now
	written()
	time.Sleep(rt + 10*time.Millisecond)
	look("B, sent a ReadTimeout ago, first seen now", false)
	time.Sleep(rt + 10*time.Millisecond)
	look("B silent for a ReadTimeout since first seen", true)

	c.live.headDeadline.Store(time.Now().Add(time.Hour).UnixNano())
	look("B silent, with a deadline an hour away", false)
	c.live.headDeadline.Store(0)
	look("B silent, without a deadline", true)

	c.release(1)
	look("nothing pending again", false)
	queue() // call C, its write under way
	look("C being written, first seen", false)
	time.Sleep(rt + 10*time.Millisecond)
	look("C still being written a ReadTimeout later", false)
	time.Sleep(rt + 10*time.Millisecond)
	look("C still being written two ReadTimeouts later", false)
	written()
	look("C written, first seen", false)
	time.Sleep(rt + 10*time.Millisecond)
	look("C silent for a ReadTimeout since its write ended", true)
}

// TestMuxLanesUnheardSinceASilenceAreClosed: lanes that went half-open
// together (a NAT or balancer on the way forgot them; the server and new
// connections are fine). The first call, without a deadline, fails at the
// read timeout; the call after it — a retry — must not take another lane
// that has been as silent and wait a read timeout again: it gets a new
// connection and its reply.
func TestMuxLanesUnheardSinceASilenceAreClosed(t *testing.T) {
	const readTimeout = 500 * time.Millisecond
	srv := launcher.Standalone(t, launcher.Options{})
	p, err := faultproxy.Start(context.Background(), srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	n := muxReviewNode(t, p.Addr(), nil, Options{Lanes: 3}, readTimeout)
	ctx := context.Background()
	if err := n.Set(ctx, "unheard", []byte("v"), time.Minute); err != nil {
		t.Fatal(err)
	}
	// Load until a second lane opens, then let every lane go idle.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				n.Set(ctx, fmt.Sprint("unheard:", g), []byte("v"), time.Minute)
			}
		})
	}
	deadline := time.Now().Add(10 * time.Second)
	for n.Stats().Lanes < 2 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	if l := n.Stats().Lanes; l < 2 {
		t.Fatalf("Stats().Lanes = %d under the load of 16 goroutines; want 2 or more", l)
	}

	stranded := p.Strand()
	start := time.Now()
	_, err = n.Get(ctx, "unheard")
	first := time.Since(start)
	if !errors.Is(err, backend.ErrConnection) {
		t.Fatalf("Get on a half-open lane = %v after %v; want backend.ErrConnection", err, first)
	}
	start = time.Now()
	v, err := n.Get(ctx, "unheard")
	second := time.Since(start)
	t.Logf("%d connections stranded; the first Get failed after %v, the next returned after %v", stranded, first.Round(time.Millisecond), second.Round(time.Millisecond))
	if err != nil || string(v) != "v" {
		t.Fatalf("Get after the first lane failed for its silence = %q, %v after %v; want \"v\" on a new connection", v, err, second)
	}
}
