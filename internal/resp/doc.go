// Package resp encodes Redis commands and decodes RESP2 replies without
// per-reply allocations beyond the values handed to callers.
//
// The strategies read replies here instead of through redigo's
// interface{}-based reader: a GET through redigo's Do allocates three or
// four times (argument slice, boxed key, value, boxed reply), while the
// redisx bar is at most two allocations per GET and one per SET. redigo still
// dials and authenticates every connection (see package strategy); from
// then on this package speaks to the socket.
//
// Replies decoded generically (ReadAny) use redigo's conventions — bulk
// strings as []byte, status replies as string, integers as int64, arrays as
// []any, nil as nil, error replies as redis.Error — so redigo's conversion
// helpers (redis.String, redis.Int64, redis.Values…) work on them.
//
// The errors of this package (ErrProtocol, *TypeError, *ArgError) carry no
// "redisx:" prefix: package strategy wraps each in a redisx sentinel
// (ErrConnection, ErrInvalidArgument) or a command's reply error, which
// gives the one prefix a user sees.
package resp
