package benchmarks_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redisx-go/kit/benchmarks"
	"github.com/redisx-go/kit/benchmarks/target"
	"github.com/redisx-go/kit/internal/launcher"
	"github.com/redisx-go/kit/redisx"
	"github.com/redisx-go/kit/strategy"
	"github.com/redisx-go/kit/strategy/goredis"
)

// suiteTarget is one client configuration under measurement.
type suiteTarget struct {
	name  string
	conns int // connections it may open (0: not fixed)
	get   func(ctx context.Context, key string) ([]byte, error)
	set   func(ctx context.Context, key string, v []byte) error
	close func()
	// client is the target as the harness calls it, when it is one
	// (redisx and the peers; not openDirect's backends).
	client benchmarks.Client
}

type serverOnce struct {
	once sync.Once
	addr string
	err  error
	srv  *launcher.Server
}

// benchServer is the server every benchmark of this process uses; it is
// stopped by TestMain.
var benchServer serverOnce

func serverAddr(tb testing.TB) string {
	benchServer.once.Do(func() {
		if a := os.Getenv("REDISX_BENCH_ADDR"); a != "" {
			benchServer.addr = a
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		benchServer.srv, benchServer.err = launcher.Start(ctx, launcher.Options{})
		if benchServer.err == nil {
			benchServer.addr = benchServer.srv.Addr()
		}
	})
	if benchServer.err != nil {
		tb.Fatalf("start redis-server: %v", benchServer.err)
	}
	return benchServer.addr
}

// clusterOnce is the cluster of the cross-slot benchmarks: one 3-master
// cluster without replicas, started on first use and stopped by TestMain.
type clusterOnce struct {
	once  sync.Once
	seeds []string
	err   error
	c     *launcher.Cluster
}

var benchCluster clusterOnce

// clusterSeeds returns the seed addresses of the benchmark cluster:
// REDISX_BENCH_CLUSTER (comma-separated host:port) when set, otherwise
// the nodes of a 3-master cluster started with launcher.StartCluster.
func clusterSeeds(tb testing.TB) []string {
	benchCluster.once.Do(func() {
		if env := os.Getenv("REDISX_BENCH_CLUSTER"); env != "" {
			for _, a := range strings.Split(env, ",") {
				if a = strings.TrimSpace(a); a != "" {
					benchCluster.seeds = append(benchCluster.seeds, a)
				}
			}
			if len(benchCluster.seeds) == 0 {
				benchCluster.err = fmt.Errorf("REDISX_BENCH_CLUSTER=%q: no address", env)
			}
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		benchCluster.c, benchCluster.err = launcher.StartCluster(ctx, launcher.ClusterOptions{Masters: 3})
		if benchCluster.err == nil {
			benchCluster.seeds = benchCluster.c.Addrs()
		}
	})
	if benchCluster.err != nil {
		tb.Fatalf("start redis cluster: %v", benchCluster.err)
	}
	return benchCluster.seeds
}

func TestMain(m *testing.M) {
	code := m.Run()
	if benchServer.srv != nil {
		benchServer.srv.Stop()
	}
	if benchCluster.c != nil {
		benchCluster.c.Stop()
	}
	os.Exit(code)
}

func openRedisx(tb testing.TB, name string, s strategy.Strategy, conns int) suiteTarget {
	c, err := redisx.New(context.Background(), redisx.Options{Addrs: []string{serverAddr(tb)}, Strategy: s})
	if err != nil {
		tb.Fatalf("%s: %v", name, err)
	}
	return suiteTarget{
		name: name, conns: conns, get: c.Get,
		set:    func(ctx context.Context, k string, v []byte) error { return c.Set(ctx, k, v, 0) },
		close:  func() { c.Close() },
		client: c,
	}
}

// openDirect bypasses the facade: the strategy's backend called directly,
// for the facade-overhead bar (P3).
func openDirect(tb testing.TB, name string, s strategy.Strategy) suiteTarget {
	b, err := s.Open(context.Background(), strategy.Config{Addrs: []string{serverAddr(tb)}, DialTimeout: 5 * time.Second, ReadTimeout: 3 * time.Second, WriteTimeout: 3 * time.Second})
	if err != nil {
		tb.Fatalf("%s: %v", name, err)
	}
	return suiteTarget{
		name: name, get: b.Get,
		set:   func(ctx context.Context, k string, v []byte) error { return b.Set(ctx, k, v, 0) },
		close: func() { b.Close() },
	}
}

// openPeer opens a peer, the harness's own definition of it
// (benchmarks.RueidisTarget, RedigoPoolTarget, GoRedisTarget,
// GoRedisAutoPipelineTarget), on addrs.
func openPeer(tb testing.TB, t benchmarks.Target, addrs []string, cluster bool) benchmarks.Client {
	c, err := t.Open(context.Background(), benchmarks.Env{Addrs: addrs, Cluster: cluster})
	if err != nil {
		tb.Fatalf("%s: %v", t.Name, err)
	}
	return c
}

// clientTarget measures GET and SET through c.
func clientTarget(name string, conns int, c benchmarks.Client) suiteTarget {
	return suiteTarget{
		name: name, conns: conns, get: c.Get,
		set:    func(ctx context.Context, k string, v []byte) error { return c.Set(ctx, k, v, 0) },
		close:  func() { c.Close() },
		client: c,
	}
}

func openRueidis(tb testing.TB) suiteTarget {
	return clientTarget("rueidis", 0, openPeer(tb, target.RueidisTarget(), []string{serverAddr(tb)}, false))
}

func openRedigoPool(tb testing.TB, n int) suiteTarget {
	t := target.RedigoPoolTarget(n)
	return clientTarget(t.Name, n, openPeer(tb, t, []string{serverAddr(tb)}, false))
}

func openGoRedisAutoPipeline(tb testing.TB) suiteTarget {
	return clientTarget("goredis-autopipeline", 0, openPeer(tb, target.GoRedisAutoPipelineTarget(), []string{serverAddr(tb)}, false))
}

func openGoRedis(tb testing.TB) (suiteTarget, *redis.Client) {
	rdb := redis.NewClient(&redis.Options{Addr: serverAddr(tb)})
	return suiteTarget{
		name: "go-redis",
		get: func(ctx context.Context, k string) ([]byte, error) {
			v, err := rdb.Get(ctx, k).Bytes()
			if errors.Is(err, redis.Nil) {
				return nil, redisx.ErrNotFound
			}
			return v, err
		},
		set: func(ctx context.Context, k string, v []byte) error {
			return rdb.Set(ctx, k, v, 0).Err()
		},
		close: func() { rdb.Close() },
	}, rdb
}

// targets lists every configuration of the GET/SET sweep.
func targets(tb testing.TB) []func() suiteTarget {
	return []func() suiteTarget{
		func() suiteTarget { return openRedisx(tb, "multiplexed", strategy.Multiplexed{}, 0) },
		func() suiteTarget { return openRedisx(tb, "multiplexed-1", strategy.Multiplexed{Conns: 1}, 1) },
		func() suiteTarget { return openRedisx(tb, "multiplexed-4", strategy.Multiplexed{Conns: 4}, 4) },
		func() suiteTarget { return openRedisx(tb, "pool-8", strategy.Pool{Size: 8}, 8) },
		func() suiteTarget { return openRedisx(tb, "pool-32", strategy.Pool{Size: 32}, 32) },
		func() suiteTarget { return openRedisx(tb, "pool-100", strategy.Pool{Size: 100}, 100) },
		func() suiteTarget {
			t, rdb := openGoRedis(tb)
			x := openRedisx(tb, "goredis-adapter", goredis.Strategy{Client: rdb, CloseClient: true}, 0)
			closeX := x.close
			x.close = func() { closeX(); t.close() }
			return x
		},
		func() suiteTarget { return openRueidis(tb) },
		func() suiteTarget { return openRedigoPool(tb, 8) },
		func() suiteTarget { return openRedigoPool(tb, 32) },
		func() suiteTarget { return openRedigoPool(tb, 100) },
		func() suiteTarget { t, _ := openGoRedis(tb); return t },
		func() suiteTarget { return openGoRedisAutoPipeline(tb) },
	}
}
