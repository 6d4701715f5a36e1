package target

import (
	"context"
	"errors"

	goredis "github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
)

// The peers' Pipeline (workload.Pipeliner): rueidis's DoMulti, go-redis's
// Pipelined.

func (r rueidisClient) Pipeline(ctx context.Context, keys []string, set []bool, v []byte) ([][]byte, error) {
	cmds := make(rueidis.Commands, len(keys))
	for i, k := range keys {
		if set[i] {
			cmds[i] = r.c.B().Set().Key(k).Value(rueidis.BinaryString(v)).Build()
		} else {
			cmds[i] = r.c.B().Get().Key(k).Build()
		}
	}
	out := make([][]byte, len(keys))
	for i, res := range r.c.DoMulti(ctx, cmds...) {
		if set[i] {
			if err := res.Error(); err != nil {
				return nil, err
			}
			continue
		}
		b, err := res.AsBytes()
		if rueidis.IsRedisNil(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out[i] = b
	}
	return out, nil
}

func (g goRedisClient) Pipeline(ctx context.Context, keys []string, set []bool, v []byte) ([][]byte, error) {
	cmds, err := g.rdb.Pipelined(ctx, func(p goredis.Pipeliner) error {
		for i, k := range keys {
			if set[i] {
				p.Set(ctx, k, v, 0)
			} else {
				p.Get(ctx, k)
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, goredis.Nil) {
		return nil, err
	}
	out := make([][]byte, len(keys))
	for i, c := range cmds {
		if sc, ok := c.(*goredis.StringCmd); ok && !set[i] {
			b, err := sc.Bytes()
			if errors.Is(err, goredis.Nil) {
				continue
			}
			if err != nil {
				return nil, err
			}
			out[i] = b
		}
	}
	return out, nil
}
