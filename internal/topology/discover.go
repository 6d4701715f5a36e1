package topology

import (
	"context"
	"errors"
	"net"
	"strings"

	"github.com/gomodule/redigo/redis"
)

// ErrNotCluster is returned by Discover for a server with cluster support
// disabled: a standalone server.
var ErrNotCluster = errors.New("cluster support disabled")

// Discover asks the node at addr, through do, for the cluster's shards:
// CLUSTER SHARDS, falling back to CLUSTER SLOTS on servers older than
// Redis 7. It returns ErrNotCluster for a server with cluster support
// disabled. With tls the nodes' addresses have their TLS ports (CLUSTER
// SHARDS lists both ports of a node, CLUSTER SLOTS those of the connection
// it is asked over: addr's). A node the reply names without a host — a
// node that does not know its own address, such as a cluster of one — is
// named by addr's host, the host the reply came from.
//
// do runs one command on the node, with redigo's reply types, within ctx.
func Discover(ctx context.Context, do func(ctx context.Context, args ...any) (any, error), addr string, tls bool) ([]Shard, error) {
	v, err := do(ctx, "CLUSTER", "SHARDS")
	var shards []Shard
	var re redis.Error
	switch {
	case errors.As(err, &re) && strings.Contains(strings.ToLower(string(re)), "cluster support disabled"):
		return nil, ErrNotCluster
	case errors.As(err, &re) && strings.Contains(strings.ToLower(string(re)), "unknown"):
		if v, err = do(ctx, "CLUSTER", "SLOTS"); err != nil {
			return nil, err
		}
		shards, err = ParseSlots(v)
	case err != nil:
		return nil, err
	default:
		shards, err = parseShards(v, tls)
	}
	if err != nil {
		return nil, err
	}
	for i := range shards {
		shards[i].Master = FullAddr(shards[i].Master, addr)
		for j, r := range shards[i].Replicas {
			shards[i].Replicas[j] = FullAddr(r, addr)
		}
	}
	return shards, nil
}

// FullAddr returns addr, a node's address as a slot map or a redirection
// gives it, with the host of from, the node that gave it, when addr has
// none (":6381").
func FullAddr(addr, from string) string {
	if !strings.HasPrefix(addr, ":") {
		return addr
	}
	host, _, _ := net.SplitHostPort(from)
	return net.JoinHostPort(host, addr[1:])
}
