package conn

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/gomodule/redigo/redis"
)

// A cluster's per-slot MSET or DEL that fails after an earlier slot was
// applied is never Unsent: the facade must not send it all again. And
// which failures the facade may retry (Temporary), and send again when a
// write (Unsent).
func TestPartialFailureIsNeverUnsent(t *testing.T) {
	notSent := ConnError("127.0.0.1:1", MarkUnsent(errors.New("connection refused")))
	if !Unsent(notSent) {
		t.Fatal("a dial failure is not Unsent")
	}
	if Unsent(Partial(notSent)) {
		t.Error("a failure after an applied part counts as Unsent")
	}
	if !errors.Is(Partial(notSent), ErrConnection) {
		t.Error("partialError hides ErrConnection")
	}
	sent := ConnError("127.0.0.1:1", errors.New("reset by peer"))
	for _, tc := range []struct {
		err               error
		temporary, unsent bool
	}{
		{sent, true, false},
		{notSent, true, true},
		{Partial(notSent), true, false},
		{&NodeError{Node: "127.0.0.1:1", Err: notSent}, true, false},
		{MarkUnsent(fmt.Errorf("%w: slot served by no master", ErrConnection)), true, true},
		{CtxErr("127.0.0.1:1", false, context.DeadlineExceeded), false, true},
		{CtxErr("127.0.0.1:1", true, context.DeadlineExceeded), false, false},
		{ErrClosed, false, false},
		{fmt.Errorf("%w: %w", ErrConnection, ErrClosed), false, false},
		{context.DeadlineExceeded, false, false},
		{redis.Error("WRONGTYPE Operation against a key holding the wrong kind of value"), false, false},
		{fmt.Errorf("redisx: get: %w", redis.Error("LOADING Redis is loading the dataset in memory")), true, true},
		{fmt.Errorf("redisx: mget: %w", redis.Error("TRYAGAIN Multiple keys request during rehashing of slot")), true, true},
		{redis.Error("CLUSTERDOWN The cluster is down"), true, true},
		{redis.Error("MASTERDOWN Link with MASTER is down"), true, true},
		{redis.Error("MOVED 3999 127.0.0.1:6381"), false, false},
	} {
		if got := Temporary(tc.err); got != tc.temporary {
			t.Errorf("Temporary(%v) = %v, want %v", tc.err, got, tc.temporary)
		}
		if got := Unsent(tc.err); got != tc.unsent {
			t.Errorf("Unsent(%v) = %v, want %v", tc.err, got, tc.unsent)
		}
	}
}
