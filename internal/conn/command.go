package conn

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/redisx-go/kit/internal/resp"
)

// Encoders of the cache-level commands. They append to a connection's
// write buffer without allocating.

func AppendGet(b []byte, key string) []byte {
	b = append(b, "*2\r\n$3\r\nGET\r\n"...)
	return resp.AppendString(b, key)
}

func AppendSet(b []byte, key string, value []byte, ttl time.Duration) []byte {
	if ttl <= 0 {
		b = append(b, "*3\r\n$3\r\nSET\r\n"...)
		b = resp.AppendString(b, key)
		return resp.AppendBytes(b, value)
	}
	b = append(b, "*5\r\n$3\r\nSET\r\n"...)
	b = resp.AppendString(b, key)
	b = resp.AppendBytes(b, value)
	b = append(b, "$2\r\nPX\r\n"...)
	return resp.AppendInt(b, TTLMillis(ttl))
}

// TTLMillis rounds a positive ttl up to whole milliseconds, so that a
// sub-millisecond ttl still expires rather than being refused.
func TTLMillis(ttl time.Duration) int64 {
	return int64((ttl + time.Millisecond - 1) / time.Millisecond)
}

func AppendKeys(b []byte, cmd string, keys []string) []byte {
	b = resp.AppendArray(b, len(keys)+1)
	b = resp.AppendString(b, cmd)
	for _, k := range keys {
		b = resp.AppendString(b, k)
	}
	return b
}

// AppendMSet encodes kv as one MSET when ttl is 0, otherwise as one
// SET … PX per pair (pipelined by the caller). It returns the number of
// replies to expect.
func AppendMSet(b []byte, kv map[string][]byte, ttl time.Duration) ([]byte, int) {
	if ttl <= 0 {
		b = resp.AppendArray(b, 2*len(kv)+1)
		b = append(b, "$4\r\nMSET\r\n"...)
		for k, v := range kv {
			b = resp.AppendString(b, k)
			b = resp.AppendBytes(b, v)
		}
		return b, 1
	}
	for k, v := range kv {
		b = AppendSet(b, k, v, ttl)
	}
	return b, len(kv)
}

// AppendArgs encodes a generic command.
func AppendArgs(b []byte, args []any) ([]byte, error) {
	b = resp.AppendArray(b, len(args))
	for i, a := range args {
		var err error
		if b, err = resp.AppendArg(b, a); err != nil {
			return b, fmt.Errorf("%w: argument %d: %w", ErrInvalidArgument, i, err)
		}
	}
	return b, nil
}

// Class says where a generic command may run.
type Class uint8

const (
	ClassShared   Class = iota // any connection, shared or not
	ClassBlocking              // a dedicated connection: it may block it for long
	ClassSession               // changes connection state or needs a session: refused
)

// Classify tells what a generic command needs. Blocking commands would
// stall every caller behind them on a shared connection; commands that
// change a connection's state (SELECT, AUTH, SUBSCRIBE, CLIENT TRACKING…)
// or span several calls (MULTI/EXEC, WATCH) would leak that state to the
// next caller of a pooled connection.
func Classify(args []any) Class {
	name := ArgName(args, 0)
	switch strings.ToUpper(name) {
	case "BLPOP", "BRPOP", "BRPOPLPUSH", "BLMOVE", "BLMPOP", "BZPOPMIN", "BZPOPMAX", "BZMPOP", "WAIT", "WAITAOF":
		return ClassBlocking
	case "XREAD", "XREADGROUP":
		if _, ok := xreadBlock(args); ok {
			return ClassBlocking
		}
	case "SUBSCRIBE", "PSUBSCRIBE", "SSUBSCRIBE", "UNSUBSCRIBE", "PUNSUBSCRIBE", "SUNSUBSCRIBE",
		"MONITOR", "MULTI", "EXEC", "DISCARD", "WATCH", "UNWATCH", "SELECT", "AUTH", "HELLO",
		"RESET", "QUIT", "SYNC", "PSYNC", "REPLCONF", "READONLY", "READWRITE", "ASKING":
		return ClassSession
	case "CLIENT":
		switch strings.ToUpper(ArgName(args, 1)) {
		case "TRACKING", "REPLY", "SETNAME", "CACHING", "NO-EVICT", "NO-TOUCH", "SETINFO":
			return ClassSession
		}
	}
	return ClassShared
}

func ArgName(args []any, i int) string {
	if i >= len(args) {
		return ""
	}
	switch v := args[i].(type) {
	case string:
		return v
	case []byte:
		return string(v)
	}
	return ""
}

// CheckCommand validates a generic command before anything is sent.
func CheckCommand(args []any) (Class, error) {
	if err := CheckArgs(args); err != nil {
		return 0, err
	}
	class := Classify(args)
	if class == ClassSession {
		return class, fmt.Errorf("%w: %s changes connection state or needs a session; it cannot run on a shared or pooled connection", ErrUnsupported, strings.ToUpper(ArgName(args, 0)))
	}
	return class, nil
}

// CheckArgs validates the arguments of a command, whatever its class:
// types the encoder takes, sizes the server accepts.
func CheckArgs(args []any) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: empty command", ErrInvalidArgument)
	}
	if ArgName(args, 0) == "" {
		return fmt.Errorf("%w: command name must be a non-empty string", ErrInvalidArgument)
	}
	for i, a := range args {
		if err := resp.CheckArg(a); err != nil {
			return fmt.Errorf("%w: argument %d: %w", ErrInvalidArgument, i, err)
		}
		if n := bulkLen(a); n > MaxValueSize {
			// The server would read it whole, then close the connection.
			return fmt.Errorf("%w: argument %d of %d bytes over Redis's limit of %d", ErrInvalidArgument, i, n, MaxValueSize)
		}
	}
	return nil
}

// bulkLen is the length of a string or byte-slice argument; 0 for a
// number, whose text is short.
func bulkLen(arg any) int {
	switch v := arg.(type) {
	case string:
		return len(v)
	case []byte:
		return len(v)
	}
	return 0
}

// ReplyError wraps a reply-level error (a server error reply, kept as a
// redis.Error for errors.As, or a reply of an unexpected type) of cmd. An
// error that already carries one of this package's sentinels, or a
// context's error, is returned as it is: one "redisx:" prefix per error.
func ReplyError(cmd string, err error) error {
	if err == nil {
		return nil
	}
	for _, own := range [...]error{ErrConnection, ErrClosed, ErrNotFound, ErrInvalidArgument, ErrUnsupported, context.Canceled, context.DeadlineExceeded} {
		if errors.Is(err, own) {
			return err
		}
	}
	if strings.HasPrefix(err.Error(), prefix) {
		return err // one of this module's errors already
	}
	return fmt.Errorf("redisx: %s: %w", cmd, err)
}

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

// AppendArrayHeader starts a command of n elements named cmd.
func AppendArrayHeader(b []byte, n int, cmd string) []byte {
	b = resp.AppendArray(b, n)
	return resp.AppendString(b, cmd)
}

// AppendPair appends a key and its value as two bulk strings.
func AppendPair(b []byte, k string, v []byte) []byte {
	b = resp.AppendString(b, k)
	return resp.AppendBytes(b, v)
}
