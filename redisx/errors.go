package redisx

import (
	"errors"
	"strings"

	"github.com/redisx-go/kit/strategy"
)

// The sentinel errors of redisx, shared with package strategy.
var (
	// ErrNotFound is returned by Get when the key does not exist.
	ErrNotFound = strategy.ErrNotFound
	// ErrClosed is returned by every call on a closed Client.
	ErrClosed = strategy.ErrClosed
	// ErrInvalidArgument is returned before anything is sent for input
	// such as a negative TTL, a key or value over 512 MiB
	// (strategy.MaxValueSize) or a nil map; by ParseURL; and by New for
	// options the server refuses at the first connection's handshake (a
	// DB out of range, a DB other than 0 on a cluster, a client name) or
	// several addresses of which the one that answers is a standalone
	// server. It is never retried, and does not wrap ErrConnection.
	ErrInvalidArgument = strategy.ErrInvalidArgument
	// ErrConnection wraps network and protocol failures. Options.Retry
	// says which operations that fail with it are tried again.
	ErrConnection = strategy.ErrConnection
	// ErrAuth is returned when the server refuses the credentials of a
	// new connection (WRONGPASS, NOAUTH, NOPERM at the handshake). It does
	// not wrap ErrConnection and is never retried. The error names the
	// server, never the password.
	ErrAuth = strategy.ErrAuth
	// ErrUnsupported is returned for a command or capability the chosen
	// strategy does not provide.
	ErrUnsupported = strategy.ErrUnsupported
	// ErrLoad wraps the error of a GetOrLoad loader.
	ErrLoad = errors.New("redisx: load failed")
)

// facadeError is an error the facade builds around a cause. It reads
// "<kind>: <detail>: <cause>" with the cause's own "redisx: " prefix
// dropped, so that the prefix appears once, and errors.Is and errors.As
// find both kind and cause.
type facadeError struct {
	kind   error // a sentinel, whose text starts with "redisx: "
	detail string
	cause  error
}

// wrapError returns kind wrapped around cause with detail, such as
// "redisx: load failed: key \"k\": database down".
func wrapError(kind error, detail string, cause error) error {
	return &facadeError{kind: kind, detail: detail, cause: cause}
}

func (e *facadeError) Error() string {
	s := e.kind.Error()
	if e.detail != "" {
		s += ": " + e.detail
	}
	return s + ": " + strings.TrimPrefix(e.cause.Error(), "redisx: ")
}

// Unwrap returns the sentinel and the cause.
func (e *facadeError) Unwrap() []error { return []error{e.kind, e.cause} }
