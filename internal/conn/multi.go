package conn

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/gomodule/redigo/redis"
)

// Pipelines, dedicated connections and session dials: what the
// transports share for DoMulti, transactions and Pub/Sub. Package
// strategy re-exports the types; their docs are strategy's.

// Result is the outcome of one command of a pipeline or a transaction.
type Result struct {
	Value any
	Err   error
}

// ErrCrossSlot is returned, before anything is sent, for the keys of one
// command, or of one transaction, that hash to different slots of a
// Redis Cluster. Errors that wrap it wrap ErrInvalidArgument too.
var ErrCrossSlot = errors.New("redisx: keys in different cluster slots")

// crossSlotError is an error that wraps both ErrCrossSlot and
// ErrInvalidArgument, reading "redisx: keys in different cluster slots:
// <detail>".
type crossSlotError struct{ detail string }

func (e *crossSlotError) Error() string   { return ErrCrossSlot.Error() + ": " + e.detail }
func (e *crossSlotError) Unwrap() []error { return []error{ErrCrossSlot, ErrInvalidArgument} }

// CrossSlot returns an error wrapping ErrCrossSlot and ErrInvalidArgument
// with detail, which must name no key.
func CrossSlot(format string, args ...any) error {
	return &crossSlotError{detail: fmt.Sprintf(format, args...)}
}

// CheckMulti validates the commands of a pipeline before anything is
// sent, as CheckCommand does one command. When one is refused, every
// result holds an error — the refused command its own, the others one
// that says so and wraps it — and ok is false: the batch is not sent, so
// that no part of it runs without the rest (a MULTI refused would leave
// the commands after it to run outside a transaction). classes[i] is
// command i's class; blocking reports a ClassBlocking command.
func CheckMulti(cmds [][]any) (classes []Class, blocking bool, res []Result, ok bool) {
	classes = make([]Class, len(cmds))
	bad := -1
	var badErr error
	for i, args := range cmds {
		c, err := CheckCommand(args)
		if err != nil {
			bad, badErr = i, err
			break
		}
		classes[i] = c
		blocking = blocking || c == ClassBlocking
	}
	if bad < 0 {
		return classes, blocking, nil, true
	}
	return nil, false, Refused(len(cmds), bad, badErr), false
}

// Refused returns the results of a batch of n commands not sent because
// command bad (an index) was refused with err: for it err, with its
// position, as in "redisx: command #2 (index 1) of the pipeline:
// unsupported: MULTI …"; for the others an error that says the batch was
// not sent and why, wraps err (so that errors.Is finds its sentinel) and
// Unsent reports.
func Refused(n, bad int, err error) []Result {
	res := make([]Result, n)
	where := Position(bad) + " of the pipeline"
	other := MarkUnsent(Detail("not sent: "+where+" was refused", err))
	for i := range res {
		res[i].Err = other
	}
	res[bad].Err = Detail(where, err)
	return res
}

// Position names the command at index i of a batch for an error message,
// counted from 1 as people count, with its index: "command #2 (index 1)".
func Position(i int) string { return fmt.Sprintf("command #%d (index %d)", i+1, i) }

// FailAll returns the results of n commands that all failed with err.
func FailAll(n int, err error) []Result {
	res := make([]Result, n)
	for i := range res {
		res[i].Err = err
	}
	return res
}

// BlockTimeAll is the block time of a pipeline: the sum of its commands'
// (the server runs them one after another), BlockForever when one blocks
// forever.
func BlockTimeAll(cmds [][]any, classes []Class) time.Duration {
	var total time.Duration
	for i, args := range cmds {
		if classes != nil && classes[i] != ClassBlocking {
			continue
		}
		b := BlockTime(args)
		if b == BlockForever {
			return BlockForever
		}
		total = min(total+b, MaxBlock)
	}
	return total
}

// AppendMulti encodes cmds, already checked, back to back.
func AppendMulti(b []byte, cmds [][]any) []byte {
	for _, args := range cmds {
		b, _ = AppendArgs(b, args) // cannot fail: CheckMulti refused what it cannot encode
	}
	return b
}

// MultiReplies returns the replies of n generic commands.
func MultiReplies(n int) []Reply {
	rps := make([]Reply, n)
	for i := range rps {
		rps[i].Kind = ReplyAny
	}
	return rps
}

// Results turns the replies of cmds into results: each value, or each
// reply error wrapped with its command's name.
func Results(cmds [][]any, rps []Reply) []Result {
	res := make([]Result, len(rps))
	for i := range rps {
		if rps[i].Err != nil {
			res[i].Err = ReplyError(ArgName(cmds[i], 0), rps[i].Err)
			continue
		}
		res[i].Value = rps[i].Any
	}
	return res
}

// SizeOf estimates the encoded size of cmds, in bytes.
func SizeOf(cmds [][]any) int {
	n := 0
	for _, args := range cmds {
		n += 16
		for _, a := range args {
			n += 16 + bulkLen(a)
		}
	}
	return n
}

// Dedicated is a connection lent to one caller for a session of several
// round trips: a transaction (WATCH … EXEC). See strategy.Dedicated.
type Dedicated interface {
	DoMulti(ctx context.Context, cmds ...[]any) ([]Result, error)
	Slot() int
	Release(reuse bool)
}

// DialSession dials addr with cfg's handshake and runs hello on the new
// connection (the caller's from then on), within ctx: the connection's
// deadline is ctx's during hello, and cleared after.
func DialSession(ctx context.Context, cfg *Config, addr string, hello func(net.Conn) error) (net.Conn, error) {
	nc, err := Dial(ctx, cfg, addr)
	if err != nil {
		return nil, err
	}
	if err := RunHello(ctx, nc, hello); err != nil {
		nc.Close()
		return nil, err
	}
	return nc, nil
}

// RunHello runs hello on nc within ctx.
func RunHello(ctx context.Context, nc net.Conn, hello func(net.Conn) error) error {
	if d, ok := ctx.Deadline(); ok {
		nc.SetDeadline(d)
	}
	stop := context.AfterFunc(ctx, func() { nc.SetDeadline(time.Unix(1, 0)) })
	err := hello(nc)
	if !stop() {
		return CtxErr(nc.RemoteAddr().String(), true, ctx.Err())
	}
	if err != nil {
		return err
	}
	nc.SetDeadline(time.Time{})
	return nil
}

// Asking sends ASKING on nc and reads its +OK: the first step of a session
// dialled to the importing node of an ASK redirect.
func Asking(nc net.Conn) error {
	if _, err := nc.Write([]byte("*1\r\n$6\r\nASKING\r\n")); err != nil {
		return err
	}
	// Byte by byte: nothing else is sent until the next command, and no
	// byte of what follows must be taken from the session's own reader.
	var line []byte
	b := make([]byte, 1)
	for len(line) < 512 {
		if _, err := nc.Read(b); err != nil {
			return err
		}
		line = append(line, b[0])
		if b[0] == '\n' {
			break
		}
	}
	s := strings.TrimRight(string(line), "\r\n")
	if s != "+OK" {
		return fmt.Errorf("redisx: asking: %w", redis.Error(strings.TrimPrefix(s, "-")))
	}
	return nil
}
