package command

import (
	"fmt"
	"strings"

	"github.com/redisx-go/kit/backend"
	"github.com/redisx-go/kit/internal/resp"
)

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

// ArgName returns args[i] when it is a string or a byte slice, as a
// command's or a subcommand's name is; "" otherwise.
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
		return class, fmt.Errorf("%w: %s changes connection state or needs a session; it cannot run on a shared or pooled connection", backend.ErrUnsupported, strings.ToUpper(ArgName(args, 0)))
	}
	return class, nil
}

// CheckArgs validates the arguments of a command, whatever its class:
// types the encoder takes, sizes the server accepts.
func CheckArgs(args []any) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: empty command", backend.ErrInvalidArgument)
	}
	if ArgName(args, 0) == "" {
		return fmt.Errorf("%w: command name must be a non-empty string", backend.ErrInvalidArgument)
	}
	for i, a := range args {
		if err := resp.CheckArg(a); err != nil {
			return fmt.Errorf("%w: argument %d: %w", backend.ErrInvalidArgument, i, err)
		}
		if n := BulkLen(a); n > backend.MaxValueSize {
			// The server would read it whole, then close the connection.
			return fmt.Errorf("%w: argument %d of %d bytes over Redis's limit of %d", backend.ErrInvalidArgument, i, n, backend.MaxValueSize)
		}
	}
	return nil
}

// BulkLen is the length of a string or byte-slice argument; 0 for a
// number, whose text is short.
func BulkLen(arg any) int {
	switch v := arg.(type) {
	case string:
		return len(v)
	case []byte:
		return len(v)
	}
	return 0
}
