// Package conn holds what the transports share: the sentinel errors and
// the classification of failures (Unsent, Temporary), the dial, the
// encoders of commands and the decoding of replies. Packages strategy and
// redisx re-export the sentinels; their docs are strategy's.
package conn

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/gomodule/redigo/redis"
)

// Sentinel errors, compared with errors.Is. Packages strategy and redisx re-export them.
var (
	// ErrNotFound is returned by Get when the key does not exist.
	ErrNotFound = errors.New("redisx: not found")
	// ErrClosed is returned by any call on a closed client, and by calls
	// still waiting when the client is closed.
	ErrClosed = errors.New("redisx: client closed")
	// ErrInvalidArgument is returned, before anything is sent, for input
	// the server would refuse or misread: a negative TTL, a key, value or
	// command argument over MaxValueSize, a nil map, an argument of an
	// unsupported type; and for a handshake setting the server refuses
	// (see strategy.ErrInvalidArgument).
	ErrInvalidArgument = errors.New("redisx: invalid argument")
	// ErrConnection wraps network and protocol failures. The connection
	// that failed is discarded and replaced; the call may be retried.
	ErrConnection = errors.New("redisx: connection failed")
	// ErrUnsupported is returned for a command or capability the strategy
	// does not provide, such as a transaction on a shared connection.
	ErrUnsupported = errors.New("redisx: unsupported")
	// ErrAuth is returned when the server refuses a new connection's
	// handshake for its credentials: a wrong password or user name
	// (WRONGPASS, "invalid password", "invalid username-password pair"), no
	// password where one is required (NOAUTH), a password where none is
	// configured, or a user not allowed to run a handshake command
	// (NOPERM). It does not wrap ErrConnection: retrying with the same
	// credentials does not help, and redisx never retries it. The error
	// names the server, never the password.
	ErrAuth = errors.New("redisx: authentication failed")
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
	case nil, *NodeError, *partialError:
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
			case b == ErrConnection:
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
	if err == nil || errors.Is(err, ErrClosed) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	if errors.Is(err, ErrConnection) {
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

// MaxValueSize is the largest bulk string Redis accepts
// (proto-max-bulk-len's default), in bytes: the limit of a value, a key
// and any argument of a command.
const MaxValueSize = 512 << 20

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

// NodeError reports the keys of a multi-key call that failed on one node.
// Other nodes' results are returned alongside it.
type NodeError struct {
	Node string   // host:port
	Keys []string // the keys whose part failed
	Err  error    // the node's error
}

// Error names the node and how many keys failed on it, not the keys
// themselves, followed by the node's error.
func (e *NodeError) Error() string {
	return fmt.Sprintf("redisx: %d keys on %s: %s", len(e.Keys), e.Node, strings.TrimPrefix(e.Err.Error(), prefix))
}

// Unwrap returns the node's error.
func (e *NodeError) Unwrap() error { return e.Err }

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
	return fmt.Errorf("%w: dial %s: %s (%w)", ErrConnection, addr, why, err)
}

// ConnError wraps a network or protocol failure on addr.
func ConnError(addr string, err error) error {
	return Wrap(ErrConnection, addr, err)
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
