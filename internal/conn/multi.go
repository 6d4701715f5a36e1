package conn

import (
	"time"

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
