package redisx

import (
	"context"

	"github.com/redisx-go/kit/backend"
	"github.com/redisx-go/kit/internal/failure"
)

// Result is the outcome of one command of DoMulti or Tx.Exec
// (strategy.Result, the same type), a struct of two fields:
//
//   - Value any: the command's reply, in Do's types ([]byte, string,
//     int64, []any, nil).
//   - Err error: the command's error. A server error reply for that
//     command (WRONGTYPE…) is its Err — wrapping a redis.Error, which
//     errors.As extracts — and does not fail the other commands.
type Result = backend.Result

// DoMulti sends cmds, each a command as Do takes it, as one pipeline — one
// round trip per node — and returns one Result per command, in cmds'
// order. Every strategy of this module runs it so:
//
//   - Multiplexed: the batch joins the shared pipeline, as one call on one
//     connection (no dedicated connection), its commands written with
//     other callers' in the same writes. A batch that holds a blocking
//     command (BLPOP, XREAD BLOCK, WAIT…) goes whole to one of the
//     dedicated connections Do uses for such commands.
//   - Pool: one borrowed connection, one write, every reply read.
//   - On a Redis Cluster (Multiplexed, Pool and SlotGrouped): commands are
//     routed by the slot of their keys as Do routes them, grouped by
//     master in cmds' order, and each master's group sent as one
//     pipeline, all masters at once. The commands a master redirects
//     (MOVED, ASK) are sent again, and only they, by master (at most 8
//     rounds). Keyless commands any master answers (TIME, ECHO) join one
//     master's pipeline; those that go to every master (DBSIZE, PING,
//     FLUSHALL…) and commands the server's table does not name run alone,
//     with Do, after the pipelines: they are not ordered with the rest.
//   - localcache.Near: a GET whose key is cached is answered locally,
//     unless an earlier command of the batch may write that key; the
//     rest go through the inner strategy as one DoMulti; then the keys of
//     the batch's writes are invalidated as Do does. GETs answered by the
//     server are not stored in the local cache.
//
// An error in one command is that command's Result.Err, not the batch's:
// a WRONGTYPE in the middle leaves the others' replies intact. A
// connection or context failure is the Err of every command it reaches;
// the context bounds the whole call. A batch with a command refused
// before anything is sent — an argument of an unsupported type, a
// command that changes a connection's state (MULTI, WATCH, SUBSCRIBE,
// SELECT…: see Watch and Subscribe), keys across cluster slots (an error
// wrapping ErrCrossSlot) — is not sent at all: the refused command's
// Result holds its error, every other one an error that wraps it (so that
// no part of the batch runs without the rest). No commands: an empty
// result, without a round trip.
//
// Retries: the batch is sent again, by Options.Retry, only when every
// command failed without being executed (strategy.Unsent and Temporary
// for each: a dial that failed, a connection found broken before the
// batch was written) — the whole batch, in order. Otherwise nothing is
// retried: some commands may have run, and each Result says how its own
// ended. Strategies without strategy.MultiDoer run the commands one
// Do at a time (strategy.DoEach), under the same rules.
func (c *Client) DoMulti(ctx context.Context, cmds ...[]any) []Result {
	if !c.tel.on(ctx) {
		return c.doMulti(ctx, cmds)
	}
	ctx, m := c.tel.begin(ctx, c.tel.op(opPipeline), len(cmds))
	res := c.doMulti(ctx, cmds)
	c.tel.end(ctx, m, batchErr(res))
	return res
}

func (c *Client) doMulti(ctx context.Context, cmds [][]any) []Result {
	if c.closed.Load() {
		return failure.FailAll(len(cmds), ErrClosed)
	}
	if err := ctx.Err(); err != nil {
		return failure.FailAll(len(cmds), err)
	}
	if len(cmds) == 0 {
		return []Result{}
	}
	res := c.multiOnce(ctx, cmds)
	if !unsentAll(res) {
		return res
	}
	res, _ = retry(ctx, c, res, errAllUnsent, func(err error) bool { return err != nil }, func() ([]Result, error) {
		res := c.multiOnce(ctx, cmds)
		if unsentAll(res) {
			return res, errAllUnsent
		}
		return res, nil
	})
	return res
}

// errAllUnsent stands, for retry, for a batch whose every command failed
// without being executed.
var errAllUnsent = failure.MarkUnsent(ErrConnection)

func (c *Client) multiOnce(ctx context.Context, cmds [][]any) []Result {
	return c.caps.DoMulti(ctx, cmds...)
}

// unsentAll reports whether every command of res failed in a way that
// allows sending it again (see writeAgain).
func unsentAll(res []Result) bool {
	for _, r := range res {
		if r.Err == nil || !writeAgain(r.Err) {
			return false
		}
	}
	return len(res) > 0
}

// batchErr is the error a batch is measured with: the first command's
// when every command failed, otherwise none.
func batchErr(res []Result) error {
	for _, r := range res {
		if r.Err == nil {
			return nil
		}
	}
	if len(res) == 0 {
		return nil
	}
	return res[0].Err
}
