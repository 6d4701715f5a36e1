package failure

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/gomodule/redigo/redis"
	"github.com/redisx-go/kit/backend"
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
	if !errors.Is(Partial(notSent), backend.ErrConnection) {
		t.Error("partialError hides backend.ErrConnection")
	}
	sent := ConnError("127.0.0.1:1", errors.New("reset by peer"))
	for _, tc := range []struct {
		err               error
		temporary, unsent bool
	}{
		{sent, true, false},
		{notSent, true, true},
		{Partial(notSent), true, false},
		{&backend.NodeError{Node: "127.0.0.1:1", Err: notSent}, true, false},
		{MarkUnsent(fmt.Errorf("%w: slot served by no master", backend.ErrConnection)), true, true},
		{CtxErr("127.0.0.1:1", false, context.DeadlineExceeded), false, true},
		{CtxErr("127.0.0.1:1", true, context.DeadlineExceeded), false, false},
		{backend.ErrClosed, false, false},
		{fmt.Errorf("%w: %w", backend.ErrConnection, backend.ErrClosed), false, false},
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

// An error built around another of this module's says "redisx:" once, at
// its start, and still matches what it wraps and classifies as it does.
func TestWrappedErrorsKeepOnePrefix(t *testing.T) {
	refusal := MarkUnsent(ConnError("127.0.0.1:1", errors.New("connection refused")))
	refused := Refused(3, 1, fmt.Errorf("%w: MULTI changes connection state", backend.ErrUnsupported))
	for _, tc := range []struct {
		name   string
		err    error
		is     error
		unsent bool
	}{
		{"ConnError of a module error", ConnError("127.0.0.1:1", fmt.Errorf("%w: late", backend.ErrClosed)), backend.ErrClosed, false},
		{"Wrap of an unsent failure", Wrap(backend.ErrConnection, "dial", refusal), backend.ErrConnection, true},
		{"Detail", Detail("command #1 (index 0) of the transaction", fmt.Errorf("%w: empty command", backend.ErrInvalidArgument)), backend.ErrInvalidArgument, false},
		{"NodeError", &backend.NodeError{Node: "127.0.0.1:1", Keys: []string{"k"}, Err: refusal}, backend.ErrConnection, false},
		{"the refused command of a batch", refused[1].Err, backend.ErrUnsupported, false},
		{"another command of a refused batch", refused[0].Err, backend.ErrUnsupported, true},
	} {
		msg := tc.err.Error()
		if !strings.HasPrefix(msg, prefix) || strings.Count(msg, "redisx:") != 1 {
			t.Errorf("%s: %q; want one \"redisx:\" prefix, at its start", tc.name, msg)
		}
		if !errors.Is(tc.err, tc.is) || Unsent(tc.err) != tc.unsent {
			t.Errorf("%s: errors.Is(%v) = %v, Unsent = %v; want true, %v", tc.name, tc.is, errors.Is(tc.err, tc.is), Unsent(tc.err), tc.unsent)
		}
	}
}

// PeerClosed tells the peer's end of a connection — as a socket reports
// it, wrapped — from a deadline and from the local side's own close.
func TestPeerClosed(t *testing.T) {
	op := func(op string, err error) error {
		return &net.OpError{Op: op, Net: "tcp", Err: os.NewSyscallError(op, err)}
	}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"end of stream", io.EOF, true},
		{"end in a reply", fmt.Errorf("reading a bulk: %w", io.ErrUnexpectedEOF), true},
		{"read reset", op("read", syscall.ECONNRESET), true},
		{"write after a reset", op("write", syscall.EPIPE), true},
		{"aborted", op("read", syscall.ECONNABORTED), true},
		{"deadline", op("read", os.ErrDeadlineExceeded), false},
		{"closed here", &net.OpError{Op: "read", Net: "tcp", Err: net.ErrClosed}, false},
		{"nil", nil, false},
	} {
		if got := PeerClosed(tc.err); got != tc.want {
			t.Errorf("PeerClosed(%s: %v) = %t; want %t", tc.name, tc.err, got, tc.want)
		}
	}
}
