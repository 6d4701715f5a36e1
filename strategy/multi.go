package strategy

import (
	"context"
	"fmt"
	"net"

	"github.com/redisx-go/kit/backend"
	"github.com/redisx-go/kit/internal/failure"
)

// Result is the outcome of one command of a pipeline (MultiDoer) or of a
// transaction (Dedicated's DoMulti). It is backend.Result, a struct of
// two fields:
//
//   - Value any: the command's reply, in Do's types ([]byte, string,
//     int64, []any, nil).
//   - Err error: the command's error. A server error reply for that
//     command (WRONGTYPE…) is its Err, wrapping a redis.Error; it does
//     not fail the other commands.
type Result = backend.Result

// MultiDoer is an optional interface that may be implemented by a
// Backend: a pipeline. DoMulti sends cmds, each a command as Do takes it,
// in as few round trips as it can — one per node — and returns one
// Result per command, in cmds' order. A command's own error (a server
// error reply) is its Result's Err and does not fail the others; a
// connection or context failure is the Err of every command it affects,
// with Unsent telling which were not executed. A command refused before
// anything is sent (an argument of an unsupported type, a command that
// changes a connection's state, keys across cluster slots) refuses the
// whole batch: every Result holds an error, the refused command's its
// own, and nothing is sent. The context bounds the whole call.
//
// Without it the facade falls back to DoEach.
type MultiDoer interface {
	DoMulti(ctx context.Context, cmds ...[]any) []Result
}

// DoEach is the fallback of MultiDoer: one Do per command, one after
// another, in order, until ctx ends (the commands not sent then get its
// error). Without a Doer every command gets ErrUnsupported.
func DoEach(ctx context.Context, b Backend, cmds ...[]any) []Result {
	res := make([]Result, len(cmds))
	d, ok := b.(Doer)
	for i, args := range cmds {
		switch {
		case !ok:
			res[i].Err = fmt.Errorf("%w: Do on a %T backend", ErrUnsupported, b)
		case ctx.Err() != nil:
			res[i].Err = failure.MarkUnsent(ctx.Err())
		default:
			res[i].Value, res[i].Err = d.Do(ctx, args...)
		}
	}
	return res
}

// Dedicated is a connection lent to one caller for a session of several
// round trips, such as a transaction (WATCH … MULTI … EXEC): whatever
// state the commands give it stays the caller's until Release. It is not
// safe for concurrent use. Dedicator lends it. It is backend.Dedicated,
// an interface of three methods:
//
//   - DoMulti(ctx context.Context, cmds ...[]any) ([]Result, error):
//     writes cmds in one write and reads one reply per command, as
//     MultiDoer's does, with no command refused for its class (blocking
//     commands extend the read deadline by their block time). Its error
//     is a failure of the connection or of ctx, after which the
//     connection is in doubt and Release destroys it.
//   - Slot() int: the cluster slot the connection serves (its keys must
//     hash to it: the server refuses others with MOVED or CROSSSLOT), or
//     -1 when it serves every key (a standalone server).
//   - Release(reuse bool): ends the loan, exactly once: with reuse the
//     connection goes back to its pool, clean (the caller has run
//     UNWATCH or DISCARD if needed); otherwise it is closed.
//
// The backend's Close does not wait for a loan to end: it closes the
// connection, so that a DoMulti in flight fails at once and later ones
// return ErrClosed; Release is then safe and does nothing more.
type Dedicated = backend.Dedicated

// Dedicator is an optional interface that may be implemented by a
// Backend: connections of their own for transactions. Dedicated lends
// one, within ctx, on the node serving keys: on a Redis Cluster their
// slot's master — keys in several slots are refused with an error
// wrapping ErrCrossSlot, no keys take any master — on a standalone
// server the server. Multiplexed lends one of its dedicated connections
// for blocking commands (Multiplexed.Blocking of them per node), never a
// shared one; Pool one of its pool's.
//
// Without it redisx.Client.Watch returns ErrUnsupported. A decorator that
// must see the writes of a transaction (localcache.Near, which
// invalidates their keys) implements it; the facade does not look for it
// along the Unwrap chain.
type Dedicator interface {
	Dedicated(ctx context.Context, keys []string) (Dedicated, error)
}

// SessionDialer is an optional interface that may be implemented by a
// Backend: new connections for Pub/Sub, which keep their connection for
// as long as they last. DialSession opens a connection of the caller's
// own, within ctx, with the shared settings' handshake (AUTH, SELECT,
// CLIENT SETNAME, TLS), to the master serving slot on a Redis Cluster
// (any master for a negative slot), to the server on a standalone one;
// then it runs hello on it, within ctx, and returns it. An error reply
// MOVED or ASK that hello returns (wrapped or not, as a redis.Error) is
// followed, as any command's is: the slot map is updated and hello runs
// on a new connection to the node named (after ASKING, for ASK). A
// connection failure of hello triggers a reload of the slot map. The
// connection is the caller's to close.
//
// Without it redisx.Client's Subscribe, PSubscribe and SSubscribe return
// ErrUnsupported. Decorators need not implement it: the facade looks for
// it along the Unwrap chain.
type SessionDialer interface {
	DialSession(ctx context.Context, slot int, hello func(net.Conn) error) (net.Conn, error)
}
