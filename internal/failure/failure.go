// Package failure classifies and words the errors of this module. It tells
// whether the request of a call that failed was sent (Unsent) and whether
// its failure may pass (Temporary), and its wrappers say so — one "redisx:
// " prefix per message, the sentinels of package backend kept for
// errors.Is.
package failure

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"syscall"

	"github.com/gomodule/redigo/redis"
	"github.com/redisx-go/kit/backend"
)

// Unsent reports whether err shows that the request of the call that
// returned it was not executed: the call failed before any byte of it
// was written — a dial that failed (ErrAuth included), a pool that could
// not create a connection, a connection found broken before the request
// was written to it, a cluster slot no master served, a context that
// ended before the request was sent — or the server
// refused it without running it, with a reply that means "not now"
// (TRYAGAIN, CLUSTERDOWN, LOADING, MASTERDOWN: see Temporary). Retrying
// such a call cannot apply a write twice. Unsent is false for nil, for errors that do not wrap a
// connection failure of this package, for an error that joins several
// unless every one is unsent, and for a *NodeError: it reports one
// node's part of a multi-node call, whose other parts may have been
// applied.
func Unsent(err error) bool {
	// A *NodeError or a partialError reports a call of several parts, some
	// of which may have been applied: never unsent as a whole.
	switch e := err.(type) {
	case nil, *backend.NodeError, *partialError:
		return false
	case *unsentError:
		return true
	case *contextEnded:
		return !e.sent
	case redis.Error:
		return notNow(e)
	case interface{ Unwrap() error }:
		return Unsent(e.Unwrap())
	case interface{ Unwrap() []error }:
		// fmt.Errorf("%w: …: %w", ErrConnection, err) puts a bare
		// sentinel beside the cause: it says nothing either way. Any other
		// branch must be unsent too: a joined error may hold the failure
		// of a node that did receive its part.
		found := false
		for _, b := range e.Unwrap() {
			switch {
			case b == backend.ErrConnection:
			case Unsent(b):
				found = true
			default:
				return false
			}
		}
		return found
	}
	return false
}

// Temporary reports whether err is a failure that the same call may not
// meet if it is tried again a moment later: a connection failure (an
// error wrapping ErrConnection, but not ErrClosed nor a context's end) or
// a server reply that means "not now" rather than "no" — TRYAGAIN (the
// keys of a slot being migrated), CLUSTERDOWN, LOADING (a server loading
// its data set), MASTERDOWN (a replica that lost its master). Whether a
// write that failed so may be sent again is Unsent's to say.
//
// Backends of this package do not retry (a cluster follows MOVED and ASK
// redirects, which are routing, and reloads its slot map after such a
// failure): redisx.Client retries by its one policy, redisx.Retry, with
// these two functions.
func Temporary(err error) bool {
	if err == nil || errors.Is(err, backend.ErrClosed) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	if errors.Is(err, backend.ErrConnection) {
		return true
	}
	var re redis.Error
	return errors.As(err, &re) && notNow(re)
}

// notNow reports a server reply that means "not now": the command was
// not executed and may be sent again later.
func notNow(re redis.Error) bool {
	for _, p := range [...]string{"TRYAGAIN", "CLUSTERDOWN", "LOADING", "MASTERDOWN"} {
		if strings.HasPrefix(string(re), p) {
			return true
		}
	}
	return false
}

// unsentError marks an error as Unsent where it is created. It reads and
// unwraps as the error it marks.
type unsentError struct{ err error }

func (e *unsentError) Error() string { return e.err.Error() }
func (e *unsentError) Unwrap() error { return e.err }

// MarkUnsent marks err (not nil) as Unsent.
func MarkUnsent(err error) error {
	if _, ok := err.(*unsentError); ok {
		return err
	}
	return &unsentError{err}
}

// partialError is the failure of a call made of parts sent one after
// another (a cluster's per-slot MSET or DEL) after an earlier part was
// applied: retrying the call would apply that part again, so it is never
// Unsent, whatever the failing part's own error says.
type partialError struct{ err error }

func (e *partialError) Error() string { return e.err.Error() }
func (e *partialError) Unwrap() error { return e.err }

// Partial marks err, the failure of a part of a call made of parts sent
// one after another, after an earlier part was applied: never Unsent.
func Partial(err error) error { return &partialError{err} }

// contextEnded is the error of a call whose context ended while it waited
// on addr, the same on every transport: before its request was sent
// (sent false: not executed, Unsent says so), or while it waited for the
// reply. It unwraps to the context's error, so that errors.Is finds
// context.DeadlineExceeded or context.Canceled, and reads
// "redisx: 127.0.0.1:6379: context deadline exceeded before the request
// was sent".
type contextEnded struct {
	addr string
	sent bool
	err  error // the context's
}

func (e *contextEnded) Error() string {
	where := "before the request was sent"
	if e.sent {
		where = "waiting for the reply (the request may have reached the server)"
	}
	return "redisx: " + e.addr + ": " + e.err.Error() + " " + where
}

func (e *contextEnded) Unwrap() error { return e.err }

// CtxErr returns err, when it is a context's own error, as a contextEnded
// on addr; any other error as it is.
func CtxErr(addr string, sent bool, err error) error {
	if err == context.Canceled || err == context.DeadlineExceeded {
		return &contextEnded{addr: addr, sent: sent, err: err}
	}
	return err
}

// DialEnded is the error of a dial of addr, or of opening a backend on
// it, that the caller's context ended before the server answered; err is
// the context's error. It wraps both ErrConnection (no connection was
// made) and err, so that errors.Is finds context.DeadlineExceeded or
// context.Canceled, and reads "redisx: connection failed: dial
// 127.0.0.1:6379: no answer before the context's deadline (context
// deadline exceeded)". Temporary is false for it: the context's end
// stops retries.
func DialEnded(addr string, err error) error {
	why := "cancelled by the context"
	if errors.Is(err, context.DeadlineExceeded) {
		why = "no answer before the context's deadline"
	}
	return fmt.Errorf("%w: dial %s: %s (%w)", backend.ErrConnection, addr, why, err)
}

// PeerClosed reports whether err, a socket's error, is the peer ending the
// connection: the end of the stream, a reset (ECONNRESET, ECONNABORTED),
// or a write after one (EPIPE). A deadline, or the local side's own
// close, is not.
func PeerClosed(err error) bool {
	for _, e := range [...]error{io.EOF, io.ErrUnexpectedEOF, syscall.ECONNRESET, syscall.ECONNABORTED, syscall.EPIPE} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// ConnError wraps a network or protocol failure on addr.
func ConnError(addr string, err error) error {
	return Wrap(backend.ErrConnection, addr, err)
}

// prefix starts the message of every error of this module, once.
const prefix = "redisx: "

// withDetail is an error that reads "redisx: <detail>: <cause>", the
// cause's own "redisx: " prefix dropped so that the message has one, and
// unwraps to the cause.
type withDetail struct {
	detail string
	cause  error
}

func (e *withDetail) Error() string {
	return prefix + e.detail + ": " + strings.TrimPrefix(e.cause.Error(), prefix)
}

func (e *withDetail) Unwrap() error { return e.cause }

// Detail returns err, not nil, with detail before its message, behind
// one "redisx: " prefix: Detail("command #2 (index 1) of the pipeline",
// err) reads "redisx: command #2 (index 1) of the pipeline: unsupported:
// …" where err read "redisx: unsupported: …". errors.Is and errors.As see
// err; Unsent and Temporary answer as for err.
func Detail(detail string, err error) error { return &withDetail{detail: detail, cause: err} }

// kindError is an error that reads "<kind>: <detail>: <cause>", the
// cause's own "redisx: " prefix dropped, and unwraps to both kind (a
// sentinel) and cause, as fmt.Errorf("%w: %s: %w", kind, detail, cause)
// does, without the doubled prefix.
type kindError struct {
	kind   error
	detail string
	cause  error
}

func (e *kindError) Error() string {
	s := e.kind.Error()
	if e.detail != "" {
		s += ": " + e.detail
	}
	return s + ": " + strings.TrimPrefix(e.cause.Error(), prefix)
}

func (e *kindError) Unwrap() []error { return []error{e.kind, e.cause} }

// Wrap returns cause, not nil, wrapped in kind, one of this package's
// sentinels, with detail (which may be empty) between them, as in
// "redisx: connection failed: 127.0.0.1:6379: <cause>": one "redisx: "
// prefix, whatever cause says. errors.Is finds kind and what cause wraps.
func Wrap(kind error, detail string, cause error) error {
	return &kindError{kind: kind, detail: detail, cause: cause}
}

// crossSlotError is an error that wraps both ErrCrossSlot and
// ErrInvalidArgument, reading "redisx: keys in different cluster slots:
// <detail>".
type crossSlotError struct{ detail string }

func (e *crossSlotError) Error() string { return backend.ErrCrossSlot.Error() + ": " + e.detail }
func (e *crossSlotError) Unwrap() []error {
	return []error{backend.ErrCrossSlot, backend.ErrInvalidArgument}
}

// CrossSlot returns an error wrapping ErrCrossSlot and ErrInvalidArgument
// with detail, which must name no key.
func CrossSlot(format string, args ...any) error {
	return &crossSlotError{detail: fmt.Sprintf(format, args...)}
}

// ReplyError wraps a reply-level error (a server error reply, kept as a
// redis.Error for errors.As, or a reply of an unexpected type) of cmd. An
// error that already carries one of this package's sentinels, or a
// context's error, is returned as it is: one "redisx:" prefix per error.
func ReplyError(cmd string, err error) error {
	if err == nil {
		return nil
	}
	for _, own := range [...]error{backend.ErrConnection, backend.ErrClosed, backend.ErrNotFound, backend.ErrInvalidArgument, backend.ErrUnsupported, context.Canceled, context.DeadlineExceeded} {
		if errors.Is(err, own) {
			return err
		}
	}
	if strings.HasPrefix(err.Error(), prefix) {
		return err // one of this module's errors already
	}
	return fmt.Errorf("redisx: %s: %w", cmd, err)
}

// Refused returns the results of a batch of n commands not sent because
// command bad (an index) was refused with err: for it err, with its
// position, as in "redisx: command #2 (index 1) of the pipeline:
// unsupported: MULTI …"; for the others an error that says the batch was
// not sent and why, wraps err (so that errors.Is finds its sentinel) and
// Unsent reports.
func Refused(n, bad int, err error) []backend.Result {
	res := make([]backend.Result, n)
	where := Position(bad) + " of the pipeline"
	other := MarkUnsent(Detail("not sent: "+where+" was refused", err))
	for i := range res {
		res[i].Err = other
	}
	res[bad].Err = Detail(where, err)
	return res
}

// Position names the command at index i of a batch for an error message,
// counted from 1 as people count, with its index: "command #2 (index 1)".
func Position(i int) string { return fmt.Sprintf("command #%d (index %d)", i+1, i) }

// FailAll returns the results of n commands that all failed with err.
func FailAll(n int, err error) []backend.Result {
	res := make([]backend.Result, n)
	for i := range res {
		res[i].Err = err
	}
	return res
}
