package mux

import (
	"testing"
	"time"
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
	c.progress.Add(64) // A's reply arrives, not yet answered
	look("A's reply just arrived", false)
	c.release(1) // A answered, no new byte
	queue()      // call B, sent now
	written()
	time.Sleep(rt + 10*time.Millisecond)
	look("B, sent a ReadTimeout ago, first seen now", false)
	time.Sleep(rt + 10*time.Millisecond)
	look("B silent for a ReadTimeout since first seen", true)

	c.headDeadline.Store(time.Now().Add(time.Hour).UnixNano())
	look("B silent, with a deadline an hour away", false)
	c.headDeadline.Store(0)
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
