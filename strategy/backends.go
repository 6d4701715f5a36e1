package strategy

import (
	"context"

	"github.com/redisx-go/kit/internal/cluster"
	"github.com/redisx-go/kit/internal/mux"
	"github.com/redisx-go/kit/internal/pool"
	"github.com/redisx-go/kit/internal/sentinel"
)

// The running backends of this package's strategies, as the contract
// has them: the transports (internal/mux, internal/pool) and the cluster
// router (internal/cluster) report conn.Stats, which backend converts to
// Stats; the router's NodeDoer and SlotGrouped's Unwrap are kept.

// backend is a transport's backend: a node, a router or a Grouped.
type backend struct{ cluster.Backend }

// Stats implements Statser.
func (b backend) Stats() Stats { return Stats(b.Backend.Stats()) }

// routed is a cluster's backend: a backend that is a NodeDoer too.
type routed struct {
	backend
	r *cluster.Router
}

// Masters implements NodeDoer.
func (r routed) Masters() []string { return r.r.Masters() }

// DoOn implements NodeDoer.
func (r routed) DoOn(ctx context.Context, addr string, args ...any) (any, error) {
	return r.r.DoOn(ctx, addr, args...)
}

// grouped is SlotGrouped's backend, over inner.
type grouped struct {
	backend
	inner Backend
}

// Unwrap implements Unwrapper.
func (g grouped) Unwrap() Backend { return g.inner }

// public returns b as the contract has it.
func public(b cluster.Backend) Backend {
	switch t := b.(type) {
	case *cluster.Router:
		return routed{backend{b}, t}
	case *sentinel.Backend:
		return followed{backend{b}, t}
	}
	return backend{b}
}

// transportOf returns the transport of s, a Multiplexed or a Pool.
func transportOf(s Strategy) (cluster.Transport, bool) {
	switch s := s.(type) {
	case Multiplexed:
		return mux.Options(s), true
	case Pool:
		return pool.Options(s), true
	}
	return nil, false
}

var (
	_ Statser         = backend{}
	_ MultiDoer       = backend{}
	_ Dedicator       = backend{}
	_ SessionDialer   = backend{}
	_ NodeDoer        = routed{}
	_ Unwrapper       = grouped{}
	_ cluster.Node    = (*mux.Node)(nil)
	_ cluster.Node    = (*pool.Node)(nil)
	_ cluster.Backend = (*cluster.Router)(nil)
)
