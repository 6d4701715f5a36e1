package strategy

import (
	"context"

	"github.com/redisx-go/kit/internal/cluster"
	"github.com/redisx-go/kit/internal/mux"
	"github.com/redisx-go/kit/internal/pool"
	"github.com/redisx-go/kit/internal/sentinel"
	"github.com/redisx-go/kit/internal/transport"
)

// The running backends of this package's strategies, as the contract
// has them: the transports (internal/mux, internal/pool), the cluster
// router (internal/cluster) and Sentinel's backend (internal/sentinel)
// behind the method set of transport.Backend — so that no other exported
// method of theirs is found by a type assertion — with the router's
// NodeDoer, the master Sentinel's backend follows, and SlotGrouped's
// Unwrap.

// running is a transport's backend: a node, a router or a Grouped.
type running struct{ transport.Backend }

// routed is a cluster's backend: a running backend that is a NodeDoer too.
type routed struct {
	running
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
	running
	inner Backend
}

// Unwrap implements Unwrapper.
func (g grouped) Unwrap() Backend { return g.inner }

// public returns b as the contract has it.
func public(b transport.Backend) Backend {
	switch t := b.(type) {
	case *cluster.Router:
		return routed{running{b}, t}
	case *sentinel.Backend:
		return followed{running{b}, t}
	}
	return running{b}
}

// transportOf returns the transport of s, a Multiplexed or a Pool.
func transportOf(s Strategy) (transport.Transport, bool) {
	switch s := s.(type) {
	case Multiplexed:
		return mux.Options(s), true
	case Pool:
		return pool.Options(s), true
	}
	return nil, false
}

var (
	_ Statser           = running{}
	_ MultiDoer         = running{}
	_ Dedicator         = running{}
	_ SessionDialer     = running{}
	_ NodeDoer          = routed{}
	_ Unwrapper         = grouped{}
	_ transport.Node    = (*mux.Node)(nil)
	_ transport.Node    = (*pool.Node)(nil)
	_ transport.Backend = (*cluster.Router)(nil)
)
