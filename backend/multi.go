package backend

import (
	"context"
	"time"
)

// Result is the outcome of one command of a pipeline (strategy.MultiDoer)
// or of a transaction: its reply, in Do's types, or its error. A server
// error reply for that command (WRONGTYPE…) is its Err, wrapping a
// redis.Error; it does not fail the other commands.
type Result struct {
	Value any
	Err   error
}

// Dedicated is a connection lent to one caller for a session of several
// round trips, such as a transaction (WATCH … MULTI … EXEC): whatever
// state the commands give it stays the caller's until Release. It is not
// safe for concurrent use. strategy.Dedicator lends it.
//
// The backend's Close does not wait for a loan to end: it closes the
// connection, so that a DoMulti in flight fails at once, and later ones
// return ErrClosed; Release is then safe and does nothing more. A loan
// may last as long as its caller wants (a transaction's callback), and a
// Close that waited for it could wait forever.
type Dedicated interface {
	// DoMulti writes cmds in one write and reads one reply per command,
	// as strategy.MultiDoer's does, with no command refused for its class
	// (WATCH, MULTI and EXEC are what the connection is for; blocking
	// commands extend the read deadline by their block time). Its error
	// is a failure of the connection or of ctx, after which the
	// connection is in doubt: Release destroys it whatever reuse says.
	DoMulti(ctx context.Context, cmds ...[]any) ([]Result, error)
	// Slot is the cluster slot the connection serves (its keys must hash
	// to it: the server refuses others with MOVED or CROSSSLOT), or -1
	// when it serves every key (a standalone server).
	Slot() int
	// Release ends the loan: with reuse, the connection goes back to its
	// pool, clean — the caller has run UNWATCH or DISCARD if needed —
	// otherwise it is closed. Release must be called exactly once.
	Release(reuse bool)
}

// Sentinel TTLs of strategy.TTLGetter: the key has no expiry, and its
// TTL could not be read.
const (
	NoTTL      time.Duration = -1
	UnknownTTL time.Duration = -3
)
