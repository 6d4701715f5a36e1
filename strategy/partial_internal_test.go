package strategy

import (
	"errors"
	"fmt"
	"testing"
)

// A cluster's per-slot MSET or DEL that fails after an earlier slot was
// applied is never Unsent: the facade must not send it all again. And
// route retries a write only when it was never sent.
func TestPartialFailureIsNeverUnsent(t *testing.T) {
	notSent := connError("127.0.0.1:1", unsent(errors.New("connection refused")))
	if !Unsent(notSent) {
		t.Fatal("a dial failure is not Unsent")
	}
	if Unsent(&partialError{notSent}) {
		t.Error("a failure after an applied part counts as Unsent")
	}
	if !errors.Is(&partialError{notSent}, ErrConnection) {
		t.Error("partialError hides ErrConnection")
	}
	sent := connError("127.0.0.1:1", errors.New("reset by peer"))
	for _, tc := range []struct {
		r    connRetry
		err  error
		want bool
	}{
		{retryReads, sent, true},
		{retryReads, notSent, true},
		{retryUnsent, sent, false},
		{retryUnsent, notSent, true},
		{retryUnsent, &partialError{notSent}, false},
		{retryNever, notSent, false},
		{retryReads, ErrClosed, false},
		{retryReads, fmt.Errorf("%w: %w", ErrConnection, ErrClosed), false},
		{retryReads, errors.New("WRONGTYPE"), false},
	} {
		if got := tc.r.allows(tc.err); got != tc.want {
			t.Errorf("connRetry(%d).allows(%v) = %v, want %v", tc.r, tc.err, got, tc.want)
		}
	}
}
