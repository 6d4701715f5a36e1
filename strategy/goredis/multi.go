package goredis

import (
	"context"

	"github.com/redis/go-redis/v9"
	"github.com/redisx-go/kit/internal/failure"
	"github.com/redisx-go/kit/internal/wire"
	"github.com/redisx-go/kit/strategy"
)

// DoMulti implements strategy.MultiDoer with a go-redis pipeline
// (Pipeline, then Exec): go-redis sends it in one round trip per node and
// splits it by node on a cluster. Replies are converted as Do's are.
// Watch and Subscribe are not provided over go-redis: redisx returns
// ErrUnsupported for them (use the go-redis client's own Watch and
// Subscribe).
func (g *goRedisBackend) DoMulti(ctx context.Context, cmds ...[]any) []strategy.Result {
	if _, _, res, ok := wire.CheckMulti(cmds); !ok {
		return res
	}
	if err := g.check(ctx); err != nil {
		return failure.FailAll(len(cmds), err)
	}
	if len(cmds) == 0 {
		return []strategy.Result{}
	}
	pipe := g.rdb.Pipeline()
	out := make([]*redis.Cmd, len(cmds))
	for i, args := range cmds {
		out[i] = pipe.Do(ctx, textArgs(args)...)
	}
	pipe.Exec(ctx) // each command's error is its own (ctx's once it is done: goRedisError)
	res := make([]strategy.Result, len(cmds))
	for i, c := range out {
		v, err := c.Result()
		res[i].Value, res[i].Err = doReply(ctx, cmds[i], v, err)
	}
	return res
}
