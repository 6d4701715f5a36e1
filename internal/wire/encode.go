// Package wire turns the transports' commands into bytes and their replies
// into values. It holds the encoders of the cache-level commands
// (AppendGet, AppendSet…, on internal/resp), the destinations a reply is
// decoded into (Reply), and the checks, encoding and results of pipelines
// (CheckMulti, AppendMulti, Results).
package wire

import (
	"fmt"
	"time"

	"github.com/redisx-go/kit/backend"
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
			return b, fmt.Errorf("%w: argument %d: %w", backend.ErrInvalidArgument, i, err)
		}
	}
	return b, nil
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
