package conn

import (
	"context"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/redisx-go/kit/internal/failure"
	"github.com/redisx-go/kit/strategy/backend"
)

// Pipelines, dedicated connections and session dials: what the
// transports share for DoMulti, transactions and Pub/Sub.

// CheckMulti validates the commands of a pipeline before anything is
// sent, as CheckCommand does one command. When one is refused, every
// result holds an error — the refused command its own, the others one
// that says so and wraps it — and ok is false: the batch is not sent, so
// that no part of it runs without the rest (a MULTI refused would leave
// the commands after it to run outside a transaction). classes[i] is
// command i's class; blocking reports a ClassBlocking command.
func CheckMulti(cmds [][]any) (classes []Class, blocking bool, res []backend.Result, ok bool) {
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
	return nil, false, failure.Refused(len(cmds), bad, badErr), false
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
func Results(cmds [][]any, rps []Reply) []backend.Result {
	res := make([]backend.Result, len(rps))
	for i := range rps {
		if rps[i].Err != nil {
			res[i].Err = failure.ReplyError(ArgName(cmds[i], 0), rps[i].Err)
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

// DialSession dials addr with cfg's handshake and runs hello on the new
// connection (the caller's from then on), within ctx: the connection's
// deadline is ctx's during hello, and cleared after.
func DialSession(ctx context.Context, cfg *backend.Config, addr string, hello func(net.Conn) error) (net.Conn, error) {
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
		return failure.CtxErr(nc.RemoteAddr().String(), true, ctx.Err())
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
