// Package transport is the contract, inside the module, between a
// transport's nodes and what routes calls over them. The nodes are
// internal/mux's and internal/pool's; internal/cluster, internal/sentinel
// and SlotGrouped route over them. It defines the method set of a node
// (Node, Backend), how a transport opens one (Transport), the count of
// calls that keeps a shared node open (Held), and the sums of nodes'
// statistics.
package transport

import (
	"context"
	"net"
	"time"

	"github.com/redisx-go/kit/backend"
	"github.com/redisx-go/kit/internal/failure"
	"github.com/redisx-go/kit/internal/wire"
)

// Backend is what a transport's node, a Router and a Grouped offer:
// strategy.Backend and the optional interfaces this module's backends
// have, with the values of package backend.
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
	Stats() backend.Stats
	// DoMulti, Dedicated and DialSession are strategy.MultiDoer's,
	// strategy.Dedicator's and strategy.SessionDialer's (see multi.go).
	DoMulti(ctx context.Context, cmds ...[]any) []backend.Result
	Dedicated(ctx context.Context, keys []string) (backend.Dedicated, error)
	DialSession(ctx context.Context, slot int, hello func(net.Conn) error) (net.Conn, error)
}

// Node is a transport's backend for one server: the unit a cluster
// routes to (mux.Node, pool.Node).
type Node interface {
	Backend
	// Exec sends the commands encoded in buf back to back, on the
	// connection of keys, the keys they name, and decodes their replies
	// into rps.
	Exec(ctx context.Context, keys []string, buf []byte, rps []wire.Reply) error
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
	NewNode(cfg backend.Config, addr string) (Node, error)
	// OpenNode returns a node for addr once it has connected.
	OpenNode(ctx context.Context, cfg backend.Config, addr string) (Node, error)
}

// Pending is a pipeline sent and not yet awaited, as a transport that can
// have pipelines in flight on several nodes from one goroutine returns it
// (mux.Node.Send).
type Pending interface {
	// Await waits, within ctx, for the pipeline's replies.
	Await(ctx context.Context) error
}

// Execer is a transport's node: it sends encoded commands on the
// connection of keys and decodes their replies.
type Execer interface {
	Exec(ctx context.Context, keys []string, buf []byte, rps []wire.Reply) error
}

// GetWithTTL is strategy.TTLGetter's GetWithTTL on n: GET and PTTL in one
// round trip.
func GetWithTTL(ctx context.Context, n Execer, key string) ([]byte, time.Duration, error) {
	keys := []string{key}
	buf, rps := wire.TTLPipeline(keys, true)
	if err := n.Exec(ctx, keys, buf, rps); err != nil {
		return nil, 0, err
	}
	if rps[0].Err != nil {
		return nil, 0, failure.ReplyError("get", rps[0].Err)
	}
	if rps[0].Val == nil {
		return nil, 0, backend.ErrNotFound
	}
	return rps[0].Val, wire.PTTL(&rps[1]), nil
}

// MGetWithTTL is strategy.TTLGetter's MGetWithTTL on n: MGET and a PTTL
// per key in one round trip.
func MGetWithTTL(ctx context.Context, n Execer, keys []string) ([][]byte, []time.Duration, error) {
	if len(keys) == 0 {
		return [][]byte{}, []time.Duration{}, nil
	}
	buf, rps := wire.TTLPipeline(keys, false)
	if err := n.Exec(ctx, keys, buf, rps); err != nil {
		return nil, nil, err
	}
	if rps[0].Err != nil {
		return nil, nil, failure.ReplyError("mget", rps[0].Err)
	}
	ttls := make([]time.Duration, len(keys))
	for i := range keys {
		ttls[i] = wire.PTTL(&rps[1+i])
	}
	return rps[0].Vals, ttls, nil
}
