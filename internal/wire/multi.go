package wire

import (
	"github.com/redisx-go/kit/backend"
	"github.com/redisx-go/kit/internal/command"
	"github.com/redisx-go/kit/internal/failure"
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
func CheckMulti(cmds [][]any) (classes []command.Class, blocking bool, res []backend.Result, ok bool) {
	classes = make([]command.Class, len(cmds))
	bad := -1
	var badErr error
	for i, args := range cmds {
		c, err := command.CheckCommand(args)
		if err != nil {
			bad, badErr = i, err
			break
		}
		classes[i] = c
		blocking = blocking || c == command.ClassBlocking
	}
	if bad < 0 {
		return classes, blocking, nil, true
	}
	return nil, false, failure.Refused(len(cmds), bad, badErr), false
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
			res[i].Err = failure.ReplyError(command.ArgName(cmds[i], 0), rps[i].Err)
			continue
		}
		res[i].Value = rps[i].Any
	}
	return res
}

// CutResults are the results of cmds cut short by cut (see CutError):
// the replies decoded, the refusal last, then cut.Err for each command
// after it.
func CutResults(cmds [][]any, rps []Reply, cut *CutError) []backend.Result {
	res := Results(cmds[:cut.N], rps[:cut.N])
	for range cmds[cut.N:] {
		res = append(res, backend.Result{Err: cut.Err})
	}
	return res
}

// SizeOf estimates the encoded size of cmds, in bytes.
func SizeOf(cmds [][]any) int {
	n := 0
	for _, args := range cmds {
		n += 16
		for _, a := range args {
			n += 16 + command.BulkLen(a)
		}
	}
	return n
}
