package pool

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/redisx-go/kit/backend"
	"github.com/redisx-go/kit/internal/command"
	"github.com/redisx-go/kit/internal/dial"
	"github.com/redisx-go/kit/internal/failure"
)

// bigRequest is the size from which a request may take a while to send:
// more than a socket's send buffer takes at once on a thin link.
const bigRequest = 16 << 10

// request writes c.buf, the request of a call armed by arm with cfg's
// ReadTimeout and the command's block time, and returns once it is sent:
// how many bytes were written and the write's error, or the error of a
// request that never got through (see awaitSent).
//
// A small request leaves at once. A big one, on a call whose deadline is
// ReadTimeout's rather than its context's, may take longer to send than
// ReadTimeout, which times the wait for the reply, not the upload: it is
// written under WriteTimeout instead (no bound when not positive), and
// the read deadline is armed once it has been sent.
func (c *pconn) request(ctx context.Context, cfg *backend.Config, block time.Duration) (int, error) {
	if len(c.buf) < bigRequest || cfg.ReadTimeout <= 0 || block == command.BlockForever {
		return c.nc.Write(c.buf)
	}
	if _, ok := ctx.Deadline(); ok {
		return c.nc.Write(c.buf)
	}
	var wd time.Time
	if cfg.WriteTimeout > 0 {
		wd = time.Now().Add(cfg.WriteTimeout)
	}
	c.nc.SetWriteDeadline(wd)
	// c.deadline no longer describes the socket: a value no arm sets, so
	// that the next one sets its own.
	c.deadline, c.fromTimeout = aLongTimeAgo, false
	if err := ctx.Err(); err != nil {
		return 0, err // cancelled before the deadline was set: nothing written
	}
	n, err := c.nc.Write(c.buf)
	if err != nil {
		return n, err
	}
	return n, c.awaitSent(ctx, cfg.ReadTimeout, block)
}

// listen is for a request whose write failed with err after n of its
// bytes went out. When the peer ended the connection part way (a reset,
// a broken pipe: see failure.PeerClosed), the server may have refused the
// request as it read it and closed, and its refusal, sent before the
// reset, may sit in the socket's receive buffer (see wire.CutError).
// listen then arms a read deadline refusalWait away, or ctx's when
// sooner, so that reading the replies takes what the server sent without
// waiting for more, and reports true. It reports false for other
// failures, and once ctx has ended.
func (c *pconn) listen(ctx context.Context, n int, err error) bool {
	if n == 0 || n >= len(c.buf) || !failure.PeerClosed(err) {
		return false
	}
	d := time.Now().Add(refusalWait)
	if cd, ok := ctx.Deadline(); ok && cd.Before(d) {
		d = cd
	}
	return c.setDeadline(ctx, d) == nil
}

// refusalWait bounds the read, after a write the peer cut, of what the
// server sent before it closed. After a reset the socket's receive
// buffer holds all there is, and is read at once.
const refusalWait = 100 * time.Millisecond

// awaitSent waits until the big request just written has been sent — its
// last byte acknowledged by the peer, where the socket tells (see
// dial.Acks), since a write returns once the kernel has the bytes — and
// then arms the read deadline: timeout plus block from then. While it is
// being sent, the peer must acknowledge some of it at least every
// timeout: a peer that acknowledges nothing for that long (a half-open
// connection, a server that reads nothing) fails the call as a missing
// reply would. Where nothing tells, the request is sent when its write
// returns, or when its reply begins.
//
// The reply beginning does not end the wait where the socket tells: the
// first replies of a pipeline (a transaction's MULTI, a small command
// before a big one) come while the rest of it is still on its way, and
// the replies awaited last are timed from when it is sent whole. From
// then on the wait polls the acknowledgements instead of the socket.
func (c *pconn) awaitSent(ctx context.Context, timeout, block time.Duration) error {
	a := dial.AcksOf(c.nc)
	acked, unacked, ok := a.Read()
	if !ok || unacked == 0 {
		return c.setDeadline(ctx, time.Now().Add(timeout+block))
	}
	end := acked + unacked
	step := max(timeout/4, 10*time.Millisecond)
	moved := time.Now() // when the peer last acknowledged more
	replying := false   // the reply has begun: poll, the socket is readable
	for {
		d := time.Now().Add(step)
		if last := moved.Add(timeout); last.Before(d) {
			d = last
		}
		var err error // the wait's: a deadline exceeded, or nil
		if replying {
			if err := pause(ctx, min(time.Until(d), pollSent)); err != nil {
				return err
			}
		} else {
			if err := c.setDeadline(ctx, d); err != nil {
				return err
			}
			switch err = c.r.Wait(); {
			case err == nil:
				replying = true
			case !errors.Is(err, os.ErrDeadlineExceeded) || ctx.Err() != nil:
				return err
			}
		}
		now := time.Now()
		got, _, ok := a.Read()
		switch {
		case !ok && err != nil:
			return err
		case !ok || got >= end: // sent (or nothing tells any more): the reply is awaited from now
			return c.setDeadline(ctx, now.Add(timeout+block))
		case got != acked:
			acked, moved = got, now
		case now.Sub(moved) >= timeout: // nothing acknowledged for timeout
			return fmt.Errorf("request not acknowledged for %v (ReadTimeout): %w", now.Sub(moved).Round(time.Millisecond), os.ErrDeadlineExceeded)
		}
	}
}

// pollSent is how often awaitSent looks at the acknowledgements once the
// reply has begun.
const pollSent = 5 * time.Millisecond

// pause waits for d, or until ctx ends.
func pause(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// setDeadline sets the socket deadline d, unless ctx has ended: a
// cancellation sets a past deadline (see begin), which d must not
// replace.
func (c *pconn) setDeadline(ctx context.Context, d time.Time) error {
	c.nc.SetDeadline(d)
	c.deadline, c.fromTimeout = d, false
	return ctx.Err()
}
