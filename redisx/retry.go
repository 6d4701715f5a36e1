package redisx

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/redisx-go/kit/strategy"
)

// Retry is the policy by which a Client tries an operation again after a
// failure that another attempt may not meet (strategy.Temporary: a
// connection failure, a cluster slot no master serves yet, a TRYAGAIN,
// CLUSTERDOWN, LOADING or MASTERDOWN reply), with exponential backoff and
// jitter, within the caller's context. The zero value is the default: 3
// attempts in all, backoffs from 10 ms to 200 ms. MaxAttempts 1 switches
// retries off.
//
// It is the one retry policy of the Client: the strategies of this module
// do not retry (a Redis Cluster's MOVED and ASK redirects are followed,
// at most 8 per command, but they are routing, not attempts), so
// MaxAttempts bounds the attempts of a call, every one counted.
//
// What is retried, exactly:
//
//   - Reads — Get, AppendGet, MGet and the GET of GetOrLoad — after any
//     such failure: reading again changes nothing. An MGet that returned
//     part of its values (strategy.SlotGrouped on a cluster, with one
//     *strategy.NodeError per node that failed) reads again only the keys
//     of the nodes whose failure was temporary.
//   - Writes — Set, MSet, Del and GetOrLoad's store — only when the error
//     shows that the request was not executed (strategy.Unsent: a dial
//     that failed, a pool that could not open a connection, a connection
//     found broken before the request was written, a reply such as
//     TRYAGAIN). A write that failed after it was sent may have been
//     applied; it is never sent twice. A multi-node write of which some
//     parts were applied (strategy.SlotGrouped on a cluster) sends again
//     only the keys of the nodes whose part was not executed; a plain
//     transport's Del or MSet that failed after an earlier slot's part was
//     applied is not retried.
//   - Do, under the same rule as writes: the command's effect is unknown.
//
// Never retried: ErrAuth, ErrInvalidArgument, ErrClosed, ErrUnsupported,
// server error replies, misses, and an operation whose context has
// ended. Ping is never retried: a health check reports what it found.
//
// Each retry waits a backoff first: MinBackoff doubled with every retry,
// at most MaxBackoff, of which a random part up to a half is taken off
// (so that clients that failed together do not retry together). A retry
// whose backoff would end after the context's deadline is not made: the
// last error is returned at once. A call whose context has no deadline
// starts no retry later than Options.ReadTimeout after its first failure
// (without that bound, when ReadTimeout is negative, MaxAttempts alone
// bounds it). Stats.Retries counts the retries made.
//
// goredis.Strategy, alone or under a near-cache, is not retried by the
// Client: the go-redis client retries by its own Options.MaxRetries.
type Retry struct {
	// MaxAttempts is the most times an operation is tried, the first
	// included. Zero: 3. 1: no retry.
	MaxAttempts int
	// MinBackoff is the wait before the first retry (before its jitter).
	// Zero: 10 ms.
	MinBackoff time.Duration
	// MaxBackoff bounds the wait before any retry. Zero: 200 ms, or
	// MinBackoff when that is longer.
	MaxBackoff time.Duration
}

// retrier applies a Retry policy. Its zero value retries nothing.
type retrier struct {
	attempts int
	min, max time.Duration
	budget   time.Duration // bound after the first failure without a deadline; 0: none
	retries  atomic.Int64
}

// policy validates r and returns it with the defaults filled in.
func (r Retry) policy() (Retry, error) {
	switch {
	case r.MaxAttempts < 0:
		return r, fmt.Errorf("%w: Retry.MaxAttempts %d is negative", ErrInvalidArgument, r.MaxAttempts)
	case r.MinBackoff < 0 || r.MaxBackoff < 0:
		return r, fmt.Errorf("%w: Retry backoffs must not be negative", ErrInvalidArgument)
	case r.MaxBackoff > 0 && r.MinBackoff > r.MaxBackoff:
		return r, fmt.Errorf("%w: Retry.MinBackoff %v over MaxBackoff %v", ErrInvalidArgument, r.MinBackoff, r.MaxBackoff)
	}
	if r.MaxAttempts == 0 {
		r.MaxAttempts = 3
	}
	if r.MinBackoff == 0 {
		r.MinBackoff = 10 * time.Millisecond
	}
	if r.MaxBackoff == 0 {
		r.MaxBackoff = max(200*time.Millisecond, r.MinBackoff)
	}
	return r, nil
}

// setup makes rt apply the policy p (defaults filled in) to calls whose
// contexts may have no deadline, bounded then by readTimeout.
func (rt *retrier) setup(p Retry, readTimeout time.Duration) {
	rt.attempts, rt.min, rt.max = p.MaxAttempts, p.MinBackoff, p.MaxBackoff
	rt.budget = max(readTimeout, 0)
}

// backoff is the wait before retry number n (1 for the first retry):
// MinBackoff·2ⁿ⁻¹, at most MaxBackoff, less a random part up to a half.
func (rt *retrier) backoff(n int) time.Duration {
	d := rt.max
	if n < 32 && rt.min<<(n-1) < rt.max && rt.min<<(n-1) > 0 {
		d = rt.min << (n - 1)
	}
	return d - time.Duration(rand.Int64N(int64(d/2)+1))
}

// readAgain reports whether a read that failed with err may be tried
// again: a failure another attempt may not meet (strategy.Temporary), not
// a context's end nor a closed client.
func readAgain(err error) bool { return strategy.Temporary(err) }

// writeAgain reports whether a write (or Do) that failed with err may be
// sent again: only when it never reached the server.
func writeAgain(err error) bool {
	return readAgain(err) && strategy.Unsent(err)
}

// pause waits the backoff before retry number n (1 for the first) of a
// call that first failed at first, and reports whether that retry may be
// made: not when the policy's attempts are used up, nor when the backoff
// would end after the context's deadline or past the budget of a call
// without one. It returns the context's error when the context ends
// during the backoff, ErrClosed when the client was closed meanwhile.
// Every retry of the Client goes through it, and is counted there.
func (c *Client) pause(ctx context.Context, n int, first time.Time) (bool, error) {
	rt := &c.retry
	if n >= rt.attempts {
		return false, nil
	}
	d := rt.backoff(n)
	deadline, hasDeadline := ctx.Deadline()
	switch {
	case hasDeadline && time.Until(deadline) <= d:
		return false, nil
	case !hasDeadline && rt.budget > 0 && time.Since(first)+d > rt.budget:
		return false, nil
	}
	t := time.NewTimer(d)
	select {
	case <-ctx.Done():
		t.Stop()
		return false, ctx.Err()
	case <-t.C:
	}
	if c.closed.Load() {
		return false, ErrClosed
	}
	rt.retries.Add(1)
	return true, nil
}

// retry runs op again, as the policy allows, after a first attempt that
// returned v and err where again(err); it returns the result of the last
// attempt made — when the context ends during a backoff, that attempt's
// error joined with the context's, so that errors.Is finds both and the
// caller learns why its call failed, not only that time ran out. It is
// the slow path: callers call it only after a failure, so that a call
// that succeeds at once pays one comparison.
func retry[T any](ctx context.Context, c *Client, v T, err error, again func(error) bool, op func() (T, error)) (T, error) {
	first := time.Now()
	for n := 1; ; n++ {
		ok, e := c.pause(ctx, n, first)
		switch {
		case e != nil && err != nil && e != ErrClosed:
			return v, fmt.Errorf("%w (the context ended before attempt %d: %w)", err, n+1, e)
		case e != nil:
			return v, e
		case !ok:
			return v, err
		}
		v, err = op()
		if err == nil || !again(err) {
			return v, err
		}
	}
}

// retryParts retries, as the policy allows, what a multi-key call that
// failed with err left undone on some nodes (strategy.SlotGrouped on a
// cluster): the keys of each *strategy.NodeError whose failure again
// allows, with op on those keys alone (op stores its results itself),
// until none is left. It returns the error that stands: the node errors
// not retried, and those of the last attempt. An err that is not made of
// node errors alone is returned as it is.
func (c *Client) retryParts(ctx context.Context, err error, again func(error) bool, op func(keys []string) error) error {
	pending, kept, ok := nodeParts(err, again)
	if !ok || len(pending) == 0 {
		return err
	}
	first := time.Now()
	for n := 1; len(pending) > 0; n++ {
		if ok, _ := c.pause(ctx, n, first); !ok {
			break // the node errors say which keys failed, and why
		}
		var keys []string
		for _, ne := range pending {
			keys = append(keys, ne.Keys...)
		}
		e := op(keys)
		if e == nil {
			pending = nil
			break
		}
		p, k, ok := nodeParts(e, again)
		if !ok {
			pending, kept = nil, append(kept, e)
			break
		}
		pending, kept = p, append(kept, k...)
	}
	for _, ne := range pending {
		kept = append(kept, ne)
	}
	return errors.Join(kept...)
}

// nodeParts splits err, when it is made of *strategy.NodeErrors alone
// (ok), into those whose failure again allows to retry and the others.
func nodeParts(err error, again func(error) bool) (retry []*strategy.NodeError, kept []error, ok bool) {
	var parts []error
	if j, isJoin := err.(interface{ Unwrap() []error }); isJoin {
		parts = j.Unwrap()
	} else {
		parts = []error{err}
	}
	for _, p := range parts {
		ne, isNode := p.(*strategy.NodeError)
		switch {
		case !isNode:
			return nil, nil, false
		case again(ne.Err):
			retry = append(retry, ne)
		default:
			kept = append(kept, ne)
		}
	}
	return retry, kept, true
}
