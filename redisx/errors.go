package redisx

import (
	"errors"

	"github.com/redisx-go/kit/strategy"
)

// The sentinel errors of redisx, shared with package strategy.
var (
	// ErrNotFound is returned by Get when the key does not exist.
	ErrNotFound = strategy.ErrNotFound
	// ErrClosed is returned by every call on a closed Client.
	ErrClosed = strategy.ErrClosed
	// ErrInvalidArgument is returned before anything is sent for input
	// such as a negative TTL, a value over 512 MB or a nil map.
	ErrInvalidArgument = strategy.ErrInvalidArgument
	// ErrConnection wraps network and protocol failures.
	ErrConnection = strategy.ErrConnection
	// ErrUnsupported is returned for a command or capability the chosen
	// strategy does not provide.
	ErrUnsupported = strategy.ErrUnsupported
	// ErrLoad wraps the error of a GetOrLoad loader.
	ErrLoad = errors.New("redisx: load failed")
)
