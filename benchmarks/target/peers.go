package target

import (
	"context"
	"errors"
	"fmt"
	"time"

	redigo "github.com/gomodule/redigo/redis"
	goredis "github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/redisx-go/kit/benchmarks/workload"
	"github.com/redisx-go/kit/redisx"
)

// The peers: the clients redisx is measured against. Of the harness, this
// package alone imports rueidis and go-redis; the library packages never
// import them (deps_test.go at the module root checks both).

// RueidisTarget is rueidis with its default options (through Sentinel,
// its SentinelOption; on a cluster, its MGet helper: one MGET per slot,
// pipelined per node).
func RueidisTarget() Target {
	return Target{
		Name: "rueidis",
		Peer: true,
		Open: func(_ context.Context, env Env) (workload.Client, error) {
			o := rueidis.ClientOption{
				InitAddress: env.Addrs,
				Username:    env.Username,
				Password:    env.Password,
				SelectDB:    env.DB,
				TLSConfig:   env.TLS,
				ClientName:  env.ClientName,
			}
			if s := env.Sentinel; s != nil {
				o.InitAddress = s.Addrs
				o.Sentinel = rueidis.SentinelOption{MasterSet: s.Master, Username: s.Username, Password: s.Password, TLSConfig: env.TLS}
			}
			c, err := rueidis.NewClient(o)
			if err != nil {
				return nil, fmt.Errorf("rueidis: %w", err)
			}
			return rueidisClient{c}, nil
		},
	}
}

type rueidisClient struct{ c rueidis.Client }

func (r rueidisClient) Get(ctx context.Context, key string) ([]byte, error) {
	v, err := r.c.Do(ctx, r.c.B().Get().Key(key).Build()).AsBytes()
	if rueidis.IsRedisNil(err) {
		return nil, redisx.ErrNotFound
	}
	return v, err
}

func (r rueidisClient) Set(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	set := r.c.B().Set().Key(key).Value(rueidis.BinaryString(value))
	if ttl > 0 {
		return r.c.Do(ctx, set.PxMilliseconds(ttl.Milliseconds()).Build()).Error()
	}
	return r.c.Do(ctx, set.Build()).Error()
}

func (r rueidisClient) MGet(ctx context.Context, keys ...string) ([][]byte, error) {
	m, err := rueidis.MGet(r.c, ctx, keys)
	if err != nil {
		return nil, err
	}
	vs := make([][]byte, len(keys))
	for i, k := range keys {
		msg, ok := m[k]
		if !ok {
			continue
		}
		v, err := msg.AsBytes()
		if rueidis.IsRedisNil(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		vs[i] = v
	}
	return vs, nil
}

func (r rueidisClient) Close() error { r.c.Close(); return nil }

// RedigoPoolTarget is redigo's redis.Pool{MaxActive: n, MaxIdle: n,
// Wait: true}, named redigo-pool-n. redigo has no cluster support, and
// no Sentinel support: through Sentinel it dials the master the sentinels
// named at the start of the run.
func RedigoPoolTarget(n int) Target {
	return Target{
		Name:     fmt.Sprintf("redigo-pool-%d", n),
		Conns:    n,
		Peer:     true,
		Topology: StandaloneOnly,
		Open: func(ctx context.Context, env Env) (workload.Client, error) {
			if env.Cluster {
				return nil, errors.New("redigo: no cluster support")
			}
			opts := []redigo.DialOption{
				redigo.DialConnectTimeout(5 * time.Second),
				redigo.DialDatabase(env.DB),
				redigo.DialClientName(env.ClientName),
			}
			if env.Password != "" {
				opts = append(opts, redigo.DialUsername(env.Username), redigo.DialPassword(env.Password))
			}
			if env.TLS != nil {
				opts = append(opts, redigo.DialUseTLS(true), redigo.DialTLSConfig(env.TLS))
			}
			addr := env.Addrs[0]
			p := &redigo.Pool{
				MaxActive: n, MaxIdle: n, Wait: true,
				Dial: func() (redigo.Conn, error) { return redigo.Dial("tcp", addr, opts...) },
			}
			c := redigoClient{p}
			if _, err := c.do(ctx, "PING"); err != nil {
				p.Close()
				return nil, fmt.Errorf("redigo: %w", err)
			}
			return c, nil
		},
	}
}

type redigoClient struct{ p *redigo.Pool }

func (r redigoClient) do(ctx context.Context, cmd string, args ...any) (any, error) {
	c, err := r.p.GetContext(ctx)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return c.Do(cmd, args...)
}

func (r redigoClient) Get(ctx context.Context, key string) ([]byte, error) {
	v, err := redigo.Bytes(r.do(ctx, "GET", key))
	if errors.Is(err, redigo.ErrNil) {
		return nil, redisx.ErrNotFound
	}
	return v, err
}

func (r redigoClient) Set(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	var err error
	if ttl > 0 {
		_, err = r.do(ctx, "SET", key, value, "PX", ttl.Milliseconds())
	} else {
		_, err = r.do(ctx, "SET", key, value)
	}
	return err
}

func (r redigoClient) MGet(ctx context.Context, keys ...string) ([][]byte, error) {
	args := make([]any, len(keys))
	for i, k := range keys {
		args[i] = k
	}
	return redigo.ByteSlices(r.do(ctx, "MGET", args...))
}

func (r redigoClient) Close() error { return r.p.Close() }

// GoRedisTarget is go-redis with its default pool (10 connections per
// GOMAXPROCS); through Sentinel its FailoverClient; on a cluster its
// ClusterClient, whose MGet is a pipeline
// of GETs (go-redis splits it per node; a cross-slot MGET command would
// fail with CROSSSLOT).
func GoRedisTarget() Target {
	return Target{
		Name: "go-redis",
		Peer: true,
		Open: func(ctx context.Context, env Env) (workload.Client, error) {
			rdb, err := openGoRedis(ctx, env)
			if err != nil {
				return nil, err
			}
			return goRedisClient{rdb: rdb, cluster: env.Cluster}, nil
		},
	}
}

// GoRedisAutoPipelineTarget is go-redis's auto-pipelining (v9.22 on,
// experimental): the client of GoRedisTarget, every call made through
// its Client.AutoPipeline() with the default options (the blocking face:
// each call returns once executed, while concurrent callers' commands
// are batched into pipelines). Its MGet is as go-redis's.
func GoRedisAutoPipelineTarget() Target {
	return Target{
		Name: "goredis-autopipeline",
		Peer: true,
		Open: func(ctx context.Context, env Env) (workload.Client, error) {
			rdb, err := openGoRedis(ctx, env)
			if err != nil {
				return nil, err
			}
			ap, err := rdb.AutoPipeline()
			if err != nil {
				rdb.Close()
				return nil, fmt.Errorf("go-redis: auto-pipeline: %w", err)
			}
			return goRedisAutoClient{goRedisClient{rdb: ap, cluster: env.Cluster}, rdb}, nil
		},
	}
}

// openGoRedis opens go-redis's client for env: a FailoverClient through
// Sentinel, a ClusterClient on a cluster, a Client otherwise, each with
// its default pool.
func openGoRedis(ctx context.Context, env Env) (goredis.UniversalClient, error) {
	var rdb goredis.UniversalClient
	switch s := env.Sentinel; {
	case s != nil:
		rdb = goredis.NewFailoverClient(&goredis.FailoverOptions{
			MasterName: s.Master, SentinelAddrs: s.Addrs,
			SentinelUsername: s.Username, SentinelPassword: s.Password,
			Username: env.Username, Password: env.Password,
			DB: env.DB, TLSConfig: env.TLS, ClientName: env.ClientName,
		})
	case env.Cluster:
		rdb = goredis.NewClusterClient(&goredis.ClusterOptions{
			Addrs: env.Addrs, Username: env.Username, Password: env.Password,
			TLSConfig: env.TLS, ClientName: env.ClientName,
		})
	default:
		rdb = goredis.NewClient(&goredis.Options{
			Addr: env.Addrs[0], Username: env.Username, Password: env.Password,
			DB: env.DB, TLSConfig: env.TLS, ClientName: env.ClientName,
		})
	}
	if err := rdb.Ping(ctx).Err(); err != nil {
		rdb.Close()
		return nil, fmt.Errorf("go-redis: %w", err)
	}
	return rdb, nil
}

// goRedisClient calls go-redis through rdb: a client, or an
// AutoPipeliner (which implements the same interface).
type goRedisClient struct {
	rdb     goredis.UniversalClient
	cluster bool
}

// goRedisAutoClient is goRedisClient over an AutoPipeliner; Close stops
// the pipeliner, then the client it belongs to.
type goRedisAutoClient struct {
	goRedisClient
	owner goredis.UniversalClient
}

func (g goRedisAutoClient) Close() error {
	_ = g.rdb.Close() // the AutoPipeliner: drains what is queued
	return g.owner.Close()
}

func (g goRedisClient) Get(ctx context.Context, key string) ([]byte, error) {
	v, err := g.rdb.Get(ctx, key).Bytes()
	if errors.Is(err, goredis.Nil) {
		return nil, redisx.ErrNotFound
	}
	return v, err
}

func (g goRedisClient) Set(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	return g.rdb.Set(ctx, key, value, ttl).Err()
}

func (g goRedisClient) MGet(ctx context.Context, keys ...string) ([][]byte, error) {
	vs := make([][]byte, len(keys))
	if !g.cluster {
		res, err := g.rdb.MGet(ctx, keys...).Result()
		if err != nil {
			return nil, err
		}
		for i, r := range res {
			if s, ok := r.(string); ok {
				vs[i] = []byte(s)
			}
		}
		return vs, nil
	}
	cmds := make([]*goredis.StringCmd, len(keys))
	if _, err := g.rdb.Pipelined(ctx, func(p goredis.Pipeliner) error {
		for i, k := range keys {
			cmds[i] = p.Get(ctx, k)
		}
		return nil
	}); err != nil && !errors.Is(err, goredis.Nil) {
		return nil, err
	}
	for i, cmd := range cmds {
		v, err := cmd.Bytes()
		if errors.Is(err, goredis.Nil) {
			continue
		}
		if err != nil {
			return nil, err
		}
		vs[i] = v
	}
	return vs, nil
}

func (g goRedisClient) Close() error { return g.rdb.Close() }
