// Package backend defines, once, the values that cross the strategy
// contract. They are the settings a backend is opened with ([Config],
// [ReadFrom], [SentinelConfig]), what it reports ([Stats], [Result],
// [NodeError]), the connection it lends for a transaction ([Dedicated]) and
// the errors it returns ([ErrNotFound], [ErrConnection]…).
//
// Package strategy re-exports every name of this package under the same
// name (strategy.Config is backend.Config), beside the contract's
// interfaces (strategy.Backend and its optional interfaces), which are
// strategy's own. The values live here, in a package that imports no
// other of this module, because both strategy and the transports it
// opens use them: strategy imports the transports, so the transports
// cannot import strategy. Programs use strategy's names: go doc shows an
// alias's own comment only, so each alias lists the fields and methods of
// its type, one line each; this package documents them in full.
package backend

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors, compared with errors.Is. Packages strategy and redisx
// re-export them.
var (
	// ErrNotFound is returned by Get when the key does not exist.
	ErrNotFound = errors.New("redisx: not found")
	// ErrClosed is returned by any call on a closed client, and by calls
	// still waiting when the client is closed.
	ErrClosed = errors.New("redisx: client closed")
	// ErrInvalidArgument is returned, before anything is sent, for input
	// the server would refuse or misread: a negative TTL, a key, value or
	// command argument over MaxValueSize, a nil map, an argument of an
	// unsupported type. A new connection's setting that the server
	// refuses (an ERR reply to the handshake's SELECT or CLIENT SETNAME:
	// a DB out of range, a DB other than 0 on a cluster) wraps it too,
	// with the server's reply, and not ErrConnection: another attempt
	// would get the same answer.
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
	// ErrCrossSlot is returned, before anything is sent, for keys of one
	// command or of one transaction that hash to different slots of a
	// Redis Cluster, which the server would refuse with CROSSSLOT. Errors
	// that wrap it wrap ErrInvalidArgument too. Give such keys a common
	// {hash tag}.
	ErrCrossSlot = errors.New("redisx: keys in different cluster slots")
)

// MaxValueSize is the largest bulk string Redis accepts
// (proto-max-bulk-len's default), in bytes: the limit of a value, a key
// and any argument of a command.
const MaxValueSize = 512 << 20

// NodeError reports the keys of a multi-key call that failed on one node
// (SlotGrouped on a cluster); other nodes' results are returned alongside
// it, and errors.As finds it in the joined error. It is never Unsent: the
// call's other parts may have been applied.
type NodeError struct {
	Node string   // the node's address, host:port
	Keys []string // the keys whose part failed
	Err  error    // the node's error
}

// Error names the node and how many keys failed on it, not the keys
// themselves, followed by the node's error.
func (e *NodeError) Error() string {
	return fmt.Sprintf("redisx: %d keys on %s: %s", len(e.Keys), e.Node, strings.TrimPrefix(e.Err.Error(), "redisx: "))
}

// Unwrap returns the node's error.
func (e *NodeError) Unwrap() error { return e.Err }
