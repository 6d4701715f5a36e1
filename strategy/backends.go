package strategy

import "context"

// The running backends of this package's strategies, as the contract
// has them: the transports report conn.Stats, which backend converts to
// Stats; the cluster's NodeDoer and SlotGrouped's Unwrap are kept.

// backend is a transport's backend, a node or a cluster.
type backend struct{ capable }

// Stats implements Statser.
func (b backend) Stats() Stats { return Stats(b.capable.Stats()) }

// routed is a cluster's backend: a backend that is a NodeDoer too.
type routed struct {
	backend
	nodes NodeDoer
}

// Masters implements NodeDoer.
func (r routed) Masters() []string { return r.nodes.Masters() }

// DoOn implements NodeDoer.
func (r routed) DoOn(ctx context.Context, addr string, args ...any) (any, error) {
	return r.nodes.DoOn(ctx, addr, args...)
}

// grouped is SlotGrouped's backend, over inner.
type grouped struct {
	backend
	inner Backend
}

// Unwrap implements Unwrapper.
func (g grouped) Unwrap() Backend { return g.inner }

// public returns b as the contract has it.
func public(b capable) Backend {
	if nd, ok := b.(NodeDoer); ok {
		return routed{backend{b}, nd}
	}
	return backend{b}
}

var (
	_ Statser  = backend{}
	_ NodeDoer = routed{}
)
