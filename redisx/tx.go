package redisx

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/gomodule/redigo/redis"
	"github.com/redisx-go/kit/internal/command"
	"github.com/redisx-go/kit/internal/failure"
	"github.com/redisx-go/kit/internal/topology"
	"github.com/redisx-go/kit/strategy"
)

// ErrTxConflict is returned by Tx.Exec when the transaction did not run
// because a key watched by Client.Watch changed (or expired) after WATCH:
// EXEC's null reply. Nothing of the transaction was applied; run it again
// with fresh reads.
var ErrTxConflict = errors.New("redisx: transaction aborted: a watched key changed")

// ErrCrossSlot is returned, before anything is sent, for keys of one
// transaction, of one command (Do) or of one command of a DoMulti batch
// that hash to different slots of a Redis Cluster, which the server would
// refuse (CROSSSLOT) — or, in a transaction, which one connection cannot
// serve. Errors that wrap it wrap ErrInvalidArgument too. Give such keys
// a common {hash tag} (see Slot).
var ErrCrossSlot = strategy.ErrCrossSlot

// maxWatchRedirects bounds the MOVED replies to WATCH followed by Watch,
// as a cluster follows a command's redirects.
const maxWatchRedirects = 8

// Watch runs fn in an optimistic transaction on a connection of its own:
// it sends WATCH keys, calls fn, and returns fn's error. Inside fn, tx.Do
// runs commands (reads, typically) on that connection, and tx.Exec sends
// MULTI, its commands and EXEC in one round trip; the commands run only if
// no watched key changed since WATCH, otherwise Exec returns an error
// wrapping ErrTxConflict and nothing was applied. Watch does not retry:
// the loop is yours, as in
//
//	for attempt := 0; attempt < 10; attempt++ {
//		err = c.Watch(ctx, func(tx *redisx.Tx) error {
//			n, err := redis.Int(tx.Do(ctx, "GET", "counter"))
//			if err != nil && !errors.Is(err, redis.ErrNil) {
//				return err
//			}
//			_, err = tx.Exec(ctx, []any{"SET", "counter", n + 1})
//			return err
//		}, "counter")
//		if !errors.Is(err, redisx.ErrTxConflict) {
//			break
//		}
//	}
//
// The connection: Multiplexed lends one of its dedicated connections for
// blocking commands (Multiplexed.Blocking per node, shared with blocking
// Do calls; further transactions wait for one within their context),
// never a shared one; Pool one of its pool's. It is given back clean
// whatever fn does — UNWATCH is sent unless Exec ended the watch, which
// EXEC does whatever its outcome — panics included (the panic goes on
// once the connection is dealt with). A connection in doubt — a call on
// it failed or its context ended mid-way, or the cleanup itself failed —
// is closed, not given back. fn's error is returned as it is; a failed
// cleanup does not change it.
//
// On a Redis Cluster the transaction runs on the master of its keys' slot:
// every key — the watched ones and those of every command of tx.Do and
// tx.Exec — must hash to one slot (give them a common {hash tag}), else
// the call is refused before anything of it is sent, with an error
// wrapping ErrCrossSlot. A WATCH that meets MOVED (a stale slot map) is
// sent again to the slot's new master. Without watched keys the
// connection is taken by the first call of fn, on the slot of its keys.
//
// localcache.Near invalidates the keys written by the commands of Exec
// (and of tx.Do) once they return, as Do does; reads inside a transaction
// are never served locally. A Tx must not be used after fn returns, nor
// from another goroutine than fn's while a call of it runs. Strategies
// without strategy.Dedicator (goredis.Strategy) return ErrUnsupported.
// Watch is not retried nor measured by OpenTelemetry.
//
// Client.Close does not wait for a running fn: it closes the
// transaction's connection, so that a call of tx in flight fails at once
// and every later one returns ErrClosed; Watch returns when fn does. A
// nil fn is refused with ErrInvalidArgument before anything is sent.
func (c *Client) Watch(ctx context.Context, fn func(*Tx) error, keys ...string) error {
	if fn == nil {
		return fmt.Errorf("%w: Watch without a function to run", ErrInvalidArgument)
	}
	if err := checkKeys(keys); err != nil {
		return err
	}
	if c.closed.Load() {
		return ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if !c.caps.HasDedicated() {
		return fmt.Errorf("%w: Watch on a %T backend", ErrUnsupported, c.b)
	}
	tx := &Tx{dd: &c.caps, closed: &c.closed}
	defer tx.finish(ctx) // on a panic too, which goes on after it
	if len(keys) > 0 {
		if err := tx.watch(ctx, keys); err != nil {
			return err
		}
	}
	return fn(tx)
}

// Tx is a transaction under way, on a connection of its own: see
// Client.Watch. It is valid only inside Watch's fn.
type Tx struct {
	dd     strategy.Dedicator
	closed *atomic.Bool // the Client's

	mu       sync.Mutex
	d        strategy.Dedicated // nil until a call needs it
	pinned   bool               // d's slot was chosen by keys
	watching bool               // WATCH sent, not yet ended by EXEC
	execed   bool               // Exec sent its transaction: no other may follow
	doubt    bool               // a call failed mid-way: close d, never reuse it
	done     bool               // fn returned
}

// watch sends WATCH keys, following MOVED to the slot's new master.
func (tx *Tx) watch(ctx context.Context, keys []string) error {
	tx.mu.Lock()
	defer tx.mu.Unlock()
	args := make([]any, 0, len(keys)+1)
	args = append(args, "WATCH")
	for _, k := range keys {
		args = append(args, k)
	}
	for redirects := 0; ; redirects++ {
		if err := tx.conn(ctx, keys); err != nil {
			return err
		}
		res, err := tx.d.DoMulti(ctx, args)
		if err != nil {
			tx.doubt = true
			return err
		}
		if res[0].Err == nil {
			tx.watching = true
			return nil
		}
		if !isMoved(res[0].Err) || redirects == maxWatchRedirects {
			return res[0].Err
		}
		// The connection is clean: nothing was watched. The slot map is
		// patched: the next connection goes to the new master.
		tx.release()
	}
}

// isMoved reports a MOVED reply.
func isMoved(err error) bool {
	var re redis.Error
	return errors.As(err, &re) && strings.HasPrefix(string(re), "MOVED ")
}

// conn makes sure the transaction has a connection that serves keys (on a
// cluster, one in their slot; see Watch). Called with mu held.
func (tx *Tx) conn(ctx context.Context, keys []string) error {
	if tx.d != nil {
		slot := tx.d.Slot()
		if slot < 0 || len(keys) == 0 {
			return nil // a standalone server serves every key
		}
		fits := true
		for _, k := range keys {
			fits = fits && topology.Slot(k) == slot
		}
		switch {
		case fits:
			tx.pinned = true
			return nil
		case tx.pinned || tx.watching:
			return failure.CrossSlot("a transaction on a cluster runs on its slot's master: slot %d, but a command names a key in slot %d; "+
				"every key of a transaction must share a slot: give them a common {hash tag}", slot, firstOther(keys, slot))
		}
		// Taken for a keyless call: nothing on it yet, trade it for one
		// in the keys' slot.
		tx.release()
	}
	d, err := tx.dd.Dedicated(ctx, keys)
	if err != nil {
		return err
	}
	tx.d, tx.pinned = d, len(keys) > 0
	return nil
}

// firstOther returns the slot of the first key of keys not in slot.
func firstOther(keys []string, slot int) int {
	for _, k := range keys {
		if s := topology.Slot(k); s != slot {
			return s
		}
	}
	return slot
}

// release gives the connection back clean. Called with mu held.
func (tx *Tx) release() {
	tx.d.Release(!tx.doubt)
	tx.d, tx.pinned, tx.watching = nil, false, false
}

// finish gives the connection back once fn has returned (or panicked):
// after UNWATCH when a watch is still on, closed when it is in doubt or
// ctx has ended (no round trip can be made then).
func (tx *Tx) finish(ctx context.Context) {
	tx.mu.Lock()
	defer tx.mu.Unlock()
	tx.done = true
	if tx.d == nil {
		return
	}
	if tx.watching && !tx.doubt {
		if ctx.Err() != nil {
			tx.doubt = true
		} else if res, err := tx.d.DoMulti(ctx, []any{"UNWATCH"}); err != nil || res[0].Err != nil {
			tx.doubt = true
		}
	}
	tx.release()
}

// errTxDone is the error of a Tx used after its Watch returned.
var errTxDone = fmt.Errorf("%w: Tx used after its Watch returned", ErrInvalidArgument)

// check validates a command of the transaction and returns its keys.
func (tx *Tx) check(args []any) ([]string, error) {
	if tx.done {
		return nil, errTxDone
	}
	if _, err := command.CheckCommand(args); err != nil {
		return nil, err // WATCH, MULTI, EXEC… are Watch's and Exec's
	}
	keys, _, _ := command.Keys(args)
	return keys, nil
}

// Do runs one command on the transaction's connection and returns its
// reply, in Client.Do's types: a read of the watched keys, typically.
// Commands that change a connection's state or belong to the transaction
// (WATCH, MULTI, EXEC, SUBSCRIBE, SELECT…) are refused with
// ErrUnsupported; a blocking command may block the connection for its
// block time. On a cluster its keys must be in the transaction's slot
// (ErrCrossSlot otherwise, before anything is sent). A failure of the
// connection or of ctx leaves it in doubt: it is closed when Watch
// returns.
func (tx *Tx) Do(ctx context.Context, args ...any) (any, error) {
	tx.mu.Lock()
	defer tx.mu.Unlock()
	keys, err := tx.check(args)
	if err != nil {
		return nil, err
	}
	if err := tx.ready(ctx, keys); err != nil {
		return nil, err
	}
	res, err := tx.d.DoMulti(ctx, args)
	if err != nil {
		tx.doubt = true
		return nil, err
	}
	return res[0].Value, res[0].Err
}

// ready checks the client, ctx and the connection, and gets the
// connection for keys. Called with mu held.
func (tx *Tx) ready(ctx context.Context, keys []string) error {
	if tx.closed.Load() {
		return ErrClosed
	}
	if tx.doubt {
		return failure.MarkUnsent(fmt.Errorf("%w: the transaction's connection failed earlier", ErrConnection))
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return tx.conn(ctx, keys)
}

// Exec sends MULTI, cmds and EXEC in one round trip and returns one Result
// per command, in order: each command's reply, or its own error (a
// WRONGTYPE at run time fails that command alone; Redis runs the others,
// and does not roll back). When a watched key changed, nothing runs:
// Exec returns no results and an error wrapping ErrTxConflict. When the
// server refused to queue a command (an unknown command, a wrong number of
// arguments), nothing runs either: that command's Result holds its error,
// the others EXEC's EXECABORT, and Exec returns the EXECABORT error. EXEC
// ends the watch in every case. Commands are checked as Do's are, and on
// a cluster every key of cmds must be in the transaction's slot: a
// command refused so refuses the whole Exec before anything is sent.
// No commands: an empty transaction, which still reports a conflict. A
// failure of the connection or of ctx returns the error alone, the
// outcome unknown: the connection is closed when Watch returns.
//
// Exec runs once per Watch: EXEC ends the watch, so a transaction after
// it would run unguarded. A second Exec is refused with an error wrapping
// ErrInvalidArgument, before anything is sent; call Watch again for
// another transaction. An Exec refused before sending (a command refused,
// ctx done) does not count.
func (tx *Tx) Exec(ctx context.Context, cmds ...[]any) ([]Result, error) {
	tx.mu.Lock()
	defer tx.mu.Unlock()
	switch {
	case tx.done:
		return nil, errTxDone
	case tx.execed:
		return nil, fmt.Errorf("%w: a second Exec in one Watch: EXEC ended the watch, and a transaction without it would run unguarded; call Watch again", ErrInvalidArgument)
	}
	var keys []string
	for i, args := range cmds {
		ks, err := tx.check(args)
		if err != nil {
			return nil, failure.Detail(failure.Position(i)+" of the transaction", err)
		}
		keys = append(keys, ks...)
	}
	if err := tx.ready(ctx, keys); err != nil {
		return nil, err
	}
	tx.execed = true
	batch := make([][]any, 0, len(cmds)+2)
	batch = append(batch, []any{"MULTI"})
	batch = append(batch, cmds...)
	batch = append(batch, []any{"EXEC"})
	res, err := tx.d.DoMulti(ctx, batch...)
	if err != nil {
		tx.doubt = true
		return nil, err
	}
	tx.watching = false // EXEC unwatches, whatever its outcome
	if res[0].Err != nil {
		tx.doubt = true // MULTI refused: the connection's state is not what it should be
		return nil, res[0].Err
	}
	return execResults(cmds, res[1:len(res)-1], res[len(res)-1])
}

// execResults reads the outcome of a transaction: EXEC's reply exec, and
// the replies queued, one per command of cmds.
func execResults(cmds [][]any, queued []Result, exec Result) ([]Result, error) {
	out := make([]Result, len(cmds))
	if exec.Err != nil {
		// EXECABORT: a command was not queued, nothing ran.
		for i := range out {
			if out[i].Err = queued[i].Err; out[i].Err == nil {
				out[i].Err = exec.Err
			}
		}
		return out, exec.Err
	}
	if exec.Value == nil {
		return nil, ErrTxConflict
	}
	replies, ok := exec.Value.([]any)
	if !ok || len(replies) != len(cmds) {
		return nil, fmt.Errorf("%w: EXEC answered %T for %d commands", ErrConnection, exec.Value, len(cmds))
	}
	for i, v := range replies {
		if re, isErr := v.(redis.Error); isErr {
			out[i].Err = failure.ReplyError(command.ArgName(cmds[i], 0), re)
			continue
		}
		out[i].Value = v
	}
	return out, nil
}
