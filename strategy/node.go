package strategy

import (
	"context"
	"errors"
	"fmt"
	"github.com/redisx-go/kit/internal/conn"
	"github.com/redisx-go/kit/internal/mux"
	"github.com/redisx-go/kit/internal/pool"
	"strings"

	"github.com/gomodule/redigo/redis"
	"github.com/redisx-go/kit/internal/cluster"
)

// capable is every capability the backends of this package offer, as
// the transports have them: their Stats are conn.Stats (see backend).
type capable interface {
	Backend
	MultiGetter
	MultiSetter
	Doer
	TTLGetter
	Stats() conn.Stats
}

var (
	_ node     = (*mux.Node)(nil)
	_ node     = (*pool.Node)(nil)
	_ capable  = (*clusterBackend)(nil)
	_ NodeDoer = (*clusterBackend)(nil)
	_ capable  = (*slotGrouped)(nil)
)

// node is a transport's backend for one server: the unit a cluster
// routes to.
type node interface {
	capable
	// Exec sends the commands encoded in buf back to back, on the
	// connection of keys, the keys they name, and decodes their replies
	// into rps.
	Exec(ctx context.Context, keys []string, buf []byte, rps []conn.Reply) error
	Address() string
}

// transport is implemented by the strategy values that open nodes:
// Multiplexed and Pool.
type transport interface {
	Strategy
	// NewNode returns a node for addr without connecting.
	NewNode(cfg conn.Config, addr string) (node, error)
	// OpenNode returns a node for addr once it has connected.
	OpenNode(ctx context.Context, cfg conn.Config, addr string) (node, error)
}

var errNotCluster = errors.New("cluster support disabled")

// openDeployment connects to the first seed that answers and finds out
// whether it is a standalone server (the node is returned as is) or a
// cluster member (a cluster backend over one node per master is).
func openDeployment(ctx context.Context, cfg conn.Config, t transport) (capable, error) {
	if len(cfg.Addrs) == 0 {
		return nil, fmt.Errorf("%w: no address", ErrInvalidArgument)
	}
	var errs []error
	for _, addr := range cfg.Addrs {
		n, err := t.OpenNode(ctx, cfg, addr)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		shards, err := discover(ctx, n, cfg.TLS != nil)
		switch {
		case errors.Is(err, errNotCluster):
			return n, nil
		case err != nil:
			n.Close()
			errs = append(errs, err)
			continue
		}
		if cfg.DB != 0 {
			n.Close()
			return nil, fmt.Errorf("%w: DB %d on a cluster, which has database 0 only", ErrInvalidArgument, cfg.DB)
		}
		return newCluster(cfg, t, n, shards)
	}
	if len(errs) == 1 {
		return nil, errs[0]
	}
	return nil, errors.Join(errs...)
}

// discover asks n for the cluster's shards: CLUSTER SHARDS, falling back
// to CLUSTER SLOTS on servers older than Redis 7. It returns errNotCluster
// for a server with cluster support disabled. With useTLS the nodes'
// addresses have their TLS ports: CLUSTER SHARDS lists both ports of a
// node, CLUSTER SLOTS those of the connection it is asked over.
func discover(ctx context.Context, n node, useTLS bool) ([]cluster.Shard, error) {
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
			return cluster.ParseSlots(v)
		}
	}
	if err != nil {
		return nil, err
	}
	if useTLS {
		return cluster.ParseShardsTLS(v)
	}
	return cluster.ParseShards(v)
}
