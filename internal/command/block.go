package command

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/redisx-go/kit/internal/resp"
)

// BlockTime returns how long the blocking command args may keep the server
// from answering: its own timeout argument, by which a read deadline is
// extended, as go-redis and rueidis do. A timeout of 0 blocks until there
// is data: BlockTime returns BlockForever. Any other command, and a
// timeout the server refuses at once (negative, not a number), return 0.
//
// The timeout is the last argument of BLPOP, BRPOP, BRPOPLPUSH, BLMOVE,
// BZPOPMIN and BZPOPMAX, the first after the name of BLMPOP and BZMPOP (in
// seconds, fractions allowed); the value of the BLOCK option of XREAD and
// XREADGROUP, and the last argument of WAIT and WAITAOF (in milliseconds).
func BlockTime(args []any) time.Duration {
	if len(args) < 2 {
		return 0
	}
	var arg any
	unit := time.Second
	switch strings.ToUpper(ArgName(args, 0)) {
	case "BLPOP", "BRPOP", "BRPOPLPUSH", "BLMOVE", "BZPOPMIN", "BZPOPMAX":
		arg = args[len(args)-1]
	case "BLMPOP", "BZMPOP":
		arg = args[1]
	case "WAIT":
		if len(args) != 3 {
			return 0
		}
		arg, unit = args[2], time.Millisecond
	case "WAITAOF":
		if len(args) != 4 {
			return 0
		}
		arg, unit = args[3], time.Millisecond
	case "XREAD", "XREADGROUP":
		i, ok := xreadBlock(args)
		if !ok {
			return 0
		}
		arg, unit = args[i], time.Millisecond
	default:
		return 0
	}
	f, ok := number(arg)
	switch {
	case !ok || f < 0 || math.IsNaN(f):
		return 0
	case f == 0:
		return BlockForever
	case f*float64(unit) > float64(MaxBlock):
		return MaxBlock
	}
	return time.Duration(f * float64(unit))
}

const (
	// BlockForever is the block time of a command with timeout 0.
	BlockForever time.Duration = math.MaxInt64
	// MaxBlock caps a finite block time far beyond any sensible one, so
	// that adding it to a deadline cannot overflow.
	MaxBlock = 100 * 365 * 24 * time.Hour
)

// xreadBlock returns the index of the value of the BLOCK option of an
// XREAD or XREADGROUP command: an option before STREAMS, where the stream
// names begin (a stream may be called BLOCK).
func xreadBlock(args []any) (int, bool) {
	i := 1
	if strings.EqualFold(ArgName(args, 0), "XREADGROUP") {
		i = 4 // after GROUP group consumer
	}
	for ; i < len(args)-1; i++ {
		switch strings.ToUpper(ArgName(args, i)) {
		case "BLOCK":
			return i + 1, true
		case "COUNT":
			i++ // skip its value
		case "STREAMS":
			return 0, false
		}
	}
	return 0, false
}

// number reads a numeric command argument as the server would: the text
// it receives (resp.AppendArgText), a bool's 1 or 0 included, parsed.
func number(arg any) (float64, bool) {
	text, ok := resp.ArgText(arg)
	if !ok {
		return 0, false
	}
	f, err := strconv.ParseFloat(text, 64)
	return f, err == nil
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
