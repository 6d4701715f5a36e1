package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/redisx-go/kit/internal/conn"

	"github.com/gomodule/redigo/redis"
)

// Backend is what a transport's node, a Router and a Grouped offer:
// strategy.Backend and its optional interfaces as this module's backends
// have them, with conn.Stats for Stats (package strategy converts them).
type Backend interface {
	Get(ctx context.Context, key string) ([]byte, error)
	Set(ctx context.Context, key string, value []byte, ttl time.Duration) error
	Del(ctx context.Context, keys ...string) (int64, error)
	Close() error
	MGet(ctx context.Context, keys []string) ([][]byte, error)
	MSet(ctx context.Context, kv map[string][]byte, ttl time.Duration) error
	Do(ctx context.Context, args ...any) (any, error)
	GetWithTTL(ctx context.Context, key string) ([]byte, time.Duration, error)
	MGetWithTTL(ctx context.Context, keys []string) ([][]byte, []time.Duration, error)
	Stats() conn.Stats
	// DoMulti, Dedicated and DialSession are strategy.MultiDoer's,
	// strategy.Dedicator's and strategy.SessionDialer's (see multi.go).
	DoMulti(ctx context.Context, cmds ...[]any) []conn.Result
	Dedicated(ctx context.Context, keys []string) (conn.Dedicated, error)
	DialSession(ctx context.Context, slot int, hello func(net.Conn) error) (net.Conn, error)
}

var (
	_ Backend = (*Router)(nil)
	_ Backend = (*Grouped)(nil)
)

// Node is a transport's backend for one server: the unit a cluster
// routes to (mux.Node, pool.Node).
type Node interface {
	Backend
	// Exec sends the commands encoded in buf back to back, on the
	// connection of keys, the keys they name, and decodes their replies
	// into rps.
	Exec(ctx context.Context, keys []string, buf []byte, rps []conn.Reply) error
	// Address is the node's host:port.
	Address() string
}

// AsNode returns n as a Node, and no Node but the error when err is not
// nil: what a Transport's methods return from a constructor of a
// concrete node type, whose nil would otherwise be a non-nil Node.
func AsNode[N Node](n N, err error) (Node, error) {
	if err != nil {
		return nil, err
	}
	return n, nil
}

// Transport opens the nodes of one transport (package strategy has one
// for Multiplexed and one for Pool).
type Transport interface {
	// NewNode returns a node for addr without connecting.
	NewNode(cfg conn.Config, addr string) (Node, error)
	// OpenNode returns a node for addr once it has connected.
	OpenNode(ctx context.Context, cfg conn.Config, addr string) (Node, error)
}

var errNotCluster = errors.New("cluster support disabled")

// Open connects to the first seed that answers and finds out
// whether it is a standalone server (the node is returned as is) or a
// cluster member (a cluster backend over one node per master is).
// Several seeds name a cluster: a standalone server among them is
// refused. A seed that refuses the credentials or a setting (the DB) ends
// Open with its error alone.
func Open(ctx context.Context, cfg conn.Config, t Transport) (Backend, error) {
	if len(cfg.Addrs) == 0 {
		return nil, fmt.Errorf("%w: no address", conn.ErrInvalidArgument)
	}
	// The seed is probed without ReadFrom, whose READONLY a standalone
	// server refuses.
	probe := cfg
	probe.ReadFrom = conn.ReadPrimary
	var errs []error
	for _, addr := range cfg.Addrs {
		n, err := t.OpenNode(ctx, probe, addr)
		if refused(err) {
			// The credentials or a setting (the DB): every seed of a
			// cluster would refuse them alike.
			return nil, err
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		shards, err := discover(ctx, n, cfg.TLS != nil)
		switch {
		case errors.Is(err, errNotCluster) && len(cfg.Addrs) > 1:
			// Every call would go to this server, the others unused.
			n.Close()
			return nil, fmt.Errorf("%w: %s is a standalone server (cluster support disabled), but %d addresses were given: "+
				"several addresses are the seeds of one Redis Cluster; give a standalone server's address alone",
				conn.ErrInvalidArgument, addr, len(cfg.Addrs))
		case errors.Is(err, errNotCluster) && cfg.ReadFrom != conn.ReadPrimary:
			n.Close()
			return nil, fmt.Errorf("%w: ReadFrom other than ReadPrimary on a standalone server: replicas are found through Sentinel or a Redis Cluster", conn.ErrInvalidArgument)
		case errors.Is(err, errNotCluster):
			return n, nil
		case err != nil:
			n.Close()
			errs = append(errs, err)
			continue
		}
		if cfg.DB != 0 {
			n.Close()
			return nil, fmt.Errorf("%w: DB %d on a cluster, which has database 0 only", conn.ErrInvalidArgument, cfg.DB)
		}
		if cfg.ReadFrom != conn.ReadPrimary {
			// Its nodes' connections are READONLY, so that those to
			// replicas serve reads: the seed's too.
			n.Close()
			if n, err = t.OpenNode(ctx, cfg, addr); refused(err) {
				return nil, err
			} else if err != nil {
				errs = append(errs, err)
				continue
			}
		}
		return newRouter(cfg, t, n, shards)
	}
	if len(errs) == 1 {
		return nil, errs[0]
	}
	return nil, errors.Join(errs...)
}

// refused reports whether err is a server's refusal of the
// configuration (ErrInvalidArgument) or of the credentials (ErrAuth),
// which no other node nor another attempt would accept.
func refused(err error) bool {
	return errors.Is(err, conn.ErrInvalidArgument) || errors.Is(err, conn.ErrAuth)
}

// discover asks n for the cluster's shards: CLUSTER SHARDS, falling back
// to CLUSTER SLOTS on servers older than Redis 7. It returns errNotCluster
// for a server with cluster support disabled. With useTLS the nodes'
// addresses have their TLS ports: CLUSTER SHARDS lists both ports of a
// node, CLUSTER SLOTS those of the connection it is asked over.
func discover(ctx context.Context, n Node, useTLS bool) ([]Shard, error) {
	v, err := n.Do(ctx, "CLUSTER", "SHARDS")
	var re redis.Error
	if errors.As(err, &re) {
		msg := strings.ToLower(string(re))
		switch {
		case strings.Contains(msg, "cluster support disabled"):
			return nil, errNotCluster
		case strings.Contains(msg, "unknown"):
			v, err = n.Do(ctx, "CLUSTER", "SLOTS")
			if err != nil {
				return nil, err
			}
			return ParseSlots(v)
		}
	}
	if err != nil {
		return nil, err
	}
	if useTLS {
		return ParseShardsTLS(v)
	}
	return ParseShards(v)
}
