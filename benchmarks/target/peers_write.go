package target

import (
	"context"
	"errors"
	"time"

	redigo "github.com/gomodule/redigo/redis"
	goredis "github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/redisx-go/kit/benchmarks/workload"
)

// Del and MSet of the peers (Deleter and MSetter), for the custom
// workload's del and mset ops: each peer as a service would call it. A
// custom del removes one key; an MSET's keys may lie in several slots of
// a cluster, and MSET has no TTL, so with one each peer sends a SET PX per
// key in one pipeline.

var (
	_ workload.Deleter = rueidisClient{}
	_ workload.MSetter = rueidisClient{}
	_ workload.Deleter = redigoClient{}
	_ workload.MSetter = redigoClient{}
	_ workload.Deleter = goRedisClient{}
	_ workload.MSetter = goRedisClient{}
	_ workload.Deleter = goRedisAutoClient{}
	_ workload.MSetter = goRedisAutoClient{}
)

// Del is one DEL per key: a cluster's keys may lie in several slots
// (rueidis's MDel helper groups them).
func (r rueidisClient) Del(ctx context.Context, keys ...string) (int64, error) {
	if len(keys) == 1 {
		return r.c.Do(ctx, r.c.B().Del().Key(keys[0]).Build()).AsInt64()
	}
	for _, err := range rueidis.MDel(r.c, ctx, keys) {
		if err != nil {
			return 0, err
		}
	}
	return int64(len(keys)), nil
}

// MSet is rueidis's MSet helper (one MSET on a standalone server; SETs
// grouped by slot on a cluster), or one SET PX per key with a TTL.
func (r rueidisClient) MSet(ctx context.Context, kv map[string][]byte, ttl time.Duration) error {
	if ttl <= 0 {
		kvs := make(map[string]string, len(kv))
		for k, v := range kv {
			kvs[k] = rueidis.BinaryString(v)
		}
		for _, err := range rueidis.MSet(r.c, ctx, kvs) {
			if err != nil {
				return err
			}
		}
		return nil
	}
	cmds := make(rueidis.Commands, 0, len(kv))
	for k, v := range kv {
		cmds = append(cmds, r.c.B().Set().Key(k).Value(rueidis.BinaryString(v)).PxMilliseconds(ttl.Milliseconds()).Build())
	}
	for _, res := range r.c.DoMulti(ctx, cmds...) {
		if err := res.Error(); err != nil {
			return err
		}
	}
	return nil
}

func (r redigoClient) Del(ctx context.Context, keys ...string) (int64, error) {
	args := make([]any, len(keys))
	for i, k := range keys {
		args[i] = k
	}
	return redigo.Int64(r.do(ctx, "DEL", args...))
}

// MSet is one MSET, or a pipeline of SET PX with a TTL (redigo has no
// cluster support).
func (r redigoClient) MSet(ctx context.Context, kv map[string][]byte, ttl time.Duration) error {
	c, err := r.p.GetContext(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	if ttl <= 0 {
		args := make([]any, 0, 2*len(kv))
		for k, v := range kv {
			args = append(args, k, v)
		}
		_, err := c.Do("MSET", args...)
		return err
	}
	for k, v := range kv {
		if err := c.Send("SET", k, v, "PX", ttl.Milliseconds()); err != nil {
			return err
		}
	}
	if err := c.Flush(); err != nil {
		return err
	}
	var errs []error
	for range kv {
		_, err := c.Receive()
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func (g goRedisClient) Del(ctx context.Context, keys ...string) (int64, error) {
	if len(keys) == 1 || !g.cluster {
		return g.rdb.Del(ctx, keys...).Result()
	}
	cmds := make([]*goredis.IntCmd, len(keys))
	if _, err := g.rdb.Pipelined(ctx, func(p goredis.Pipeliner) error {
		for i, k := range keys {
			cmds[i] = p.Del(ctx, k)
		}
		return nil
	}); err != nil {
		return 0, err
	}
	var n int64
	for _, c := range cmds {
		n += c.Val()
	}
	return n, nil
}

// MSet is one MSET on a standalone server without a TTL; otherwise, as
// go-redis's cluster client would fail a cross-slot MSET with CROSSSLOT, a
// pipeline of SETs (go-redis splits it per node).
func (g goRedisClient) MSet(ctx context.Context, kv map[string][]byte, ttl time.Duration) error {
	if ttl <= 0 && !g.cluster {
		pairs := make([]any, 0, 2*len(kv))
		for k, v := range kv {
			pairs = append(pairs, k, v)
		}
		return g.rdb.MSet(ctx, pairs...).Err()
	}
	_, err := g.rdb.Pipelined(ctx, func(p goredis.Pipeliner) error {
		for k, v := range kv {
			p.Set(ctx, k, v, ttl)
		}
		return nil
	})
	return err
}
