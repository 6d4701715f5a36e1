package goredis

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	redigo "github.com/gomodule/redigo/redis"
	"github.com/redis/go-redis/v9"
	"github.com/redisx-go/kit/internal/command"
	"github.com/redisx-go/kit/internal/failure"
	"github.com/redisx-go/kit/internal/resp"
	"github.com/redisx-go/kit/internal/wire"
	"github.com/redisx-go/kit/strategy"
)

// Strategy adopts a go-redis client a service already has, so that redisx
// runs over the connections, pool settings and hooks already configured
// there. strategy.Config's addresses, credentials and timeouts are ignored: the
// client has its own.
//
// Close does not close the client unless CloseClient is set: whoever made
// it owns it. go-redis applies a context's deadline to a call only when
// the client was made with ContextTimeoutEnabled; without it the client's
// own ReadTimeout bounds a call. A call that fails once its context is
// done (or past its deadline) returns the context's error, as on every
// strategy, not ErrConnection.
//
// Do returns redigo's types, as every strategy does, converted from
// go-redis's (RESP2 or RESP3) replies: bulk strings as []byte; integers
// as int64; arrays and RESP3 sets as []any; a missing value as nil;
// RESP3 maps flattened to []any of key, value, key, value… (sorted by
// key: go-redis has lost the server's order); doubles and big numbers as
// the []byte text RESP2 sends for them ("1.5", "inf"); booleans as int64
// 1 or 0; error replies inside an array as redigo's redis.Error. go-redis
// reads status replies and bulk strings alike, so a status is told by
// its command: "OK" from any command not flagged read-only, PING's
// "PONG" and TYPE's reply are strings, as status replies are elsewhere.
// (A write command that returns a stored value, LPOP say, returns a
// stored "OK" as a string too.) The types are the same, not always the
// shapes: where RESP3 itself nests a reply differently (ZRANGE …
// WITHSCORES as [member, score] pairs), make the client speak RESP2
// (go-redis's Options.Protocol 2) to get RESP2's shapes.
//
// The facade does not retry calls over go-redis: the client retries them
// by its own policy (Options.MaxRetries).
//
// A multi-key read that fails for one key — a connection error, or a
// server error such as WRONGTYPE when MGetWithTTL reads a list key —
// fails the whole call: a failed read is never reported as a missing
// key.
type Strategy struct {
	// Client is the go-redis client to use. Required.
	Client redis.UniversalClient
	// CloseClient makes the backend's Close close Client too.
	CloseClient bool
}

// Open implements strategy.Strategy. It pings the server before it
// returns; when ctx ends first (which go-redis sees mid-read only with
// ContextTimeoutEnabled), with an error wrapping ErrConnection and ctx's
// error that names the client's address.
func (g Strategy) Open(ctx context.Context, cfg strategy.Config) (strategy.Backend, error) {
	if g.Client == nil {
		return nil, fmt.Errorf("%w: goredis.Strategy.Client is nil", strategy.ErrInvalidArgument)
	}
	if cfg.Sentinel != nil {
		return nil, fmt.Errorf("%w: goredis.Strategy with Sentinel: the go-redis client is configured on its own (redis.NewFailoverClient)", strategy.ErrInvalidArgument)
	}
	if cfg.ReadFrom != strategy.ReadPrimary {
		return nil, fmt.Errorf("%w: goredis.Strategy with ReadFrom: the go-redis client is configured on its own (ReadOnly, RouteByLatency)", strategy.ErrInvalidArgument)
	}
	if err := g.Client.Ping(ctx).Err(); err != nil {
		if ctx.Err() != nil {
			// The server did not answer before ctx ended: say whom the
			// open waited for, as the module's transports do.
			return nil, failure.MarkUnsent(failure.DialEnded(addrOf(g.Client), ctx.Err()))
		}
		return nil, goRedisError(ctx, "ping", err)
	}
	return &goRedisBackend{rdb: g.Client, closeClient: g.CloseClient}, nil
}

type goRedisBackend struct {
	rdb         redis.UniversalClient
	closeClient bool
	closed      atomic.Bool
}

// RetriesCalls implements SelfRetrier: go-redis retries by its own
// policy.
func (g *goRedisBackend) RetriesCalls() bool { return true }

// goRedisError maps go-redis errors onto the redisx sentinels: a server
// error reply stays a reply error; a failure once ctx is done is ctx's
// error, as on every transport (with ContextTimeoutEnabled, go-redis
// reports a deadline that passed mid-read as the socket's i/o timeout);
// anything else is a connection error.
func goRedisError(ctx context.Context, cmd string, err error) error {
	var re redis.Error
	switch {
	case err == nil:
		return nil
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	case errors.Is(err, redis.ErrClosed):
		return strategy.ErrClosed
	case errors.As(err, &re):
		// Present server errors as redigo's type, as the other strategies do.
		return fmt.Errorf("redisx: %s: %w", cmd, redigo.Error(re.Error()))
	case ctx.Err() != nil:
		return ctx.Err()
	}
	if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
		// The socket's deadline, set to ctx's, can pass before ctx's own
		// timer has ended it.
		return context.DeadlineExceeded
	}
	return failure.Wrap(strategy.ErrConnection, cmd, err)
}

func (g *goRedisBackend) check(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if g.closed.Load() {
		return strategy.ErrClosed
	}
	return nil
}

func (g *goRedisBackend) Get(ctx context.Context, key string) ([]byte, error) {
	if err := g.check(ctx); err != nil {
		return nil, err
	}
	v, err := g.rdb.Get(ctx, key).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, strategy.ErrNotFound
	}
	if err != nil {
		return nil, goRedisError(ctx, "get", err)
	}
	return v, nil
}

func (g *goRedisBackend) Set(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	if err := g.check(ctx); err != nil {
		return err
	}
	if ttl > 0 {
		ttl = time.Duration(wire.TTLMillis(ttl)) * time.Millisecond
	}
	return goRedisError(ctx, "set", g.rdb.Set(ctx, key, value, ttl).Err())
}

func (g *goRedisBackend) Del(ctx context.Context, keys ...string) (int64, error) {
	if len(keys) == 0 {
		return 0, nil
	}
	if err := g.check(ctx); err != nil {
		return 0, err
	}
	n, err := g.rdb.Del(ctx, keys...).Result()
	return n, goRedisError(ctx, "del", err)
}

func (g *goRedisBackend) MGet(ctx context.Context, keys []string) ([][]byte, error) {
	if len(keys) == 0 {
		return [][]byte{}, nil
	}
	if err := g.check(ctx); err != nil {
		return nil, err
	}
	vs, err := g.rdb.MGet(ctx, keys...).Result()
	if err != nil {
		return nil, goRedisError(ctx, "mget", err)
	}
	out := make([][]byte, len(vs))
	for i, v := range vs {
		if s, ok := v.(string); ok {
			out[i] = []byte(s)
		}
	}
	return out, nil
}

func (g *goRedisBackend) MSet(ctx context.Context, kv map[string][]byte, ttl time.Duration) error {
	if len(kv) == 0 {
		return nil
	}
	if err := g.check(ctx); err != nil {
		return err
	}
	if ttl <= 0 {
		pairs := make([]any, 0, 2*len(kv))
		for k, v := range kv {
			pairs = append(pairs, k, v)
		}
		return goRedisError(ctx, "mset", g.rdb.MSet(ctx, pairs...).Err())
	}
	ttl = time.Duration(wire.TTLMillis(ttl)) * time.Millisecond
	_, err := g.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for k, v := range kv {
			p.Set(ctx, k, v, ttl)
		}
		return nil
	})
	return goRedisError(ctx, "mset", err)
}

func (g *goRedisBackend) Do(ctx context.Context, args ...any) (any, error) {
	if _, err := command.CheckCommand(args); err != nil {
		return nil, err
	}
	if err := g.check(ctx); err != nil {
		return nil, err
	}
	v, err := g.rdb.Do(ctx, textArgs(args)...).Result()
	return doReply(ctx, args, v, err)
}

// doReply is Do's reply to args, from go-redis's.
func doReply(ctx context.Context, args []any, v any, err error) (any, error) {
	switch {
	case errors.Is(err, redis.Nil):
		return nil, nil
	case err != nil:
		return nil, goRedisError(ctx, command.ArgName(args, 0), err)
	}
	if s, ok := v.(string); ok && statusReply(args, s) {
		return s, nil
	}
	return redigoReply(v), nil
}

// textArgs returns args with every argument that is not a string or a
// byte slice replaced by its text (resp.ArgText), as the other strategies
// send it: go-redis writes floats in 'f' format (1e21 as 22 digits,
// float32(0.1) as 0.10000000149011612), so a key a near-cache invalidates
// or routes by would not be the key written. args is not modified; it is
// returned as it is when every argument is already text.
func textArgs(args []any) []any {
	out := args
	for i, a := range args {
		switch a.(type) {
		case string, []byte:
			continue
		}
		if &out[0] == &args[0] {
			out = slices.Clone(args)
		}
		out[i], _ = resp.ArgText(a) // checked by command.CheckCommand
	}
	return out
}

// statusReply reports whether s, the reply to the command in args, was a
// status reply rather than a bulk string (go-redis reads both as a
// string): see Strategy's doc.
func statusReply(args []any, s string) bool {
	spec := command.Lookup(args)
	switch {
	case spec == nil:
		return s == "OK"
	case spec.Name == "ping":
		return len(args) == 1 && s == "PONG"
	case spec.Name == "type":
		return true
	}
	return s == "OK" && spec.Flags&command.ReadOnly == 0
}

// redigoReply converts a go-redis reply (below the top level) to
// redigo's types: see Strategy's doc.
func redigoReply(v any) any {
	switch v := v.(type) {
	case string:
		return []byte(v)
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = redigoReply(e)
		}
		return out
	case map[any]any:
		pairs := make([][2]any, 0, len(v))
		for k, e := range v {
			pairs = append(pairs, [2]any{k, e})
		}
		slices.SortFunc(pairs, func(a, b [2]any) int { return cmp.Compare(fmt.Sprint(a[0]), fmt.Sprint(b[0])) })
		out := make([]any, 0, 2*len(v))
		for _, p := range pairs {
			out = append(out, redigoReply(p[0]), redigoReply(p[1]))
		}
		return out
	case float64:
		switch {
		case math.IsInf(v, 1):
			return []byte("inf")
		case math.IsInf(v, -1):
			return []byte("-inf")
		case math.IsNaN(v):
			return []byte("nan")
		}
		return strconv.AppendFloat(nil, v, 'g', -1, 64)
	case *big.Int:
		return []byte(v.String())
	case bool:
		if v {
			return int64(1)
		}
		return int64(0)
	case redis.Error:
		return redigo.Error(v.Error())
	}
	return v // int64, nil
}

func (g *goRedisBackend) Stats() strategy.Stats {
	s := strategy.Stats{Strategy: "go-redis"}
	if ps := g.rdb.PoolStats(); ps != nil {
		s.Conns = int(ps.TotalConns)
		s.Idle = int(ps.IdleConns)
		s.InUse = int(ps.TotalConns - ps.IdleConns)
		s.Acquires = int64(ps.Hits + ps.Misses)
		s.EmptyAcquires = int64(ps.Misses)
	}
	return s
}

func (g *goRedisBackend) Close() error {
	if g.closed.Swap(true) {
		return nil
	}
	if g.closeClient {
		return g.rdb.Close()
	}
	return nil
}

// GetWithTTL implements TTLGetter with a pipelined GET and PTTL. The
// GET's own reply decides: a value (with strategy.UnknownTTL should the PTTL
// fail), strategy.ErrNotFound, or its error.
func (g *goRedisBackend) GetWithTTL(ctx context.Context, key string) ([]byte, time.Duration, error) {
	if err := g.check(ctx); err != nil {
		return nil, 0, err
	}
	p := g.rdb.Pipeline()
	get := p.Get(ctx, key)
	ttl := p.PTTL(ctx, key)
	_, _ = p.Exec(ctx) // errors are read per command below
	v, err := get.Bytes()
	switch {
	case errors.Is(err, redis.Nil):
		return nil, 0, strategy.ErrNotFound
	case err != nil:
		return nil, 0, goRedisError(ctx, "get", err)
	}
	return v, goRedisTTL(ttl), nil
}

// MGetWithTTL implements TTLGetter with pipelined GETs and PTTLs (per key,
// so that a cluster client splits the pipeline by node itself). Any GET
// that fails — a connection error, or a server error such as WRONGTYPE
// for a key that holds a list — fails the whole call: a failed read is
// never reported as a missing key. go-redis's own Exec error is not
// enough to tell: it is the first command's error, redis.Nil for a
// missing key even when a later command failed.
func (g *goRedisBackend) MGetWithTTL(ctx context.Context, keys []string) ([][]byte, []time.Duration, error) {
	if err := g.check(ctx); err != nil {
		return nil, nil, err
	}
	if len(keys) == 0 {
		return [][]byte{}, []time.Duration{}, nil
	}
	p := g.rdb.Pipeline()
	gets := make([]*redis.StringCmd, len(keys))
	ttls := make([]*redis.DurationCmd, len(keys))
	for i, k := range keys {
		gets[i] = p.Get(ctx, k)
		ttls[i] = p.PTTL(ctx, k)
	}
	_, _ = p.Exec(ctx) // errors are read per command below
	vs := make([][]byte, len(keys))
	ds := make([]time.Duration, len(keys))
	for i := range keys {
		v, err := gets[i].Bytes()
		switch {
		case errors.Is(err, redis.Nil):
		case err != nil:
			return nil, nil, goRedisError(ctx, "mget", err)
		default:
			vs[i] = v
		}
		ds[i] = goRedisTTL(ttls[i])
	}
	return vs, ds, nil
}

func goRedisTTL(c *redis.DurationCmd) time.Duration {
	d, err := c.Result()
	switch {
	case err != nil || d == -2:
		return strategy.UnknownTTL
	case d == -1:
		return strategy.NoTTL
	}
	return d
}

// addrOf names the server (or seeds) c connects to, for errors.
func addrOf(c redis.UniversalClient) string {
	switch c := c.(type) {
	case *redis.Client:
		return c.Options().Addr
	case *redis.ClusterClient:
		return strings.Join(c.Options().Addrs, ",")
	case *redis.Ring:
		addrs := make([]string, 0, len(c.Options().Addrs))
		for _, a := range c.Options().Addrs {
			addrs = append(addrs, a)
		}
		slices.Sort(addrs)
		return strings.Join(addrs, ",")
	}
	return fmt.Sprintf("%T", c)
}
