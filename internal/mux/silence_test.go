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
// overdue.
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

	look("nothing pending", false)
	c.reserve(1 << 20) // call A
	c.progress.Add(64) // A's reply arrives, not yet answered
	look("A's reply just arrived", false)
	c.release(1)       // A answered, no new byte
	c.reserve(1 << 20) // call B, sent now
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
	c.reserve(1 << 20)
	look("C, first seen", false)
}
