package strategy

import (
	"context"
	"fmt"

	"github.com/redisx-go/kit/internal/cluster"
	"github.com/redisx-go/kit/internal/topology"
	"github.com/redisx-go/kit/internal/transport"
)

// InstallShardsForTest makes shards the slot map of b, a cluster backend
// (or SlotGrouped over one): see cluster.Router.InstallShards.
func InstallShardsForTest(b Backend, shards []topology.Shard) error {
	r, err := routerOf(b)
	if err != nil {
		return err
	}
	return r.InstallShards(shards)
}

// RefreshForTest reloads the slot map of b, a cluster backend (or
// SlotGrouped over one), and waits for the outcome within ctx, as any
// caller of the shared refresh does.
func RefreshForTest(ctx context.Context, b Backend) error {
	r, err := routerOf(b)
	if err != nil {
		return err
	}
	return r.Refresh(ctx)
}

func routerOf(b Backend) (*cluster.Router, error) {
	var m transport.Backend
	switch w := b.(type) {
	case grouped:
		m = w.Backend.(*cluster.Grouped).Inner()
	case routed:
		m = w.Backend
	case running:
		m = w.Backend
	}
	r, ok := m.(*cluster.Router)
	if !ok {
		return nil, fmt.Errorf("%T is not a cluster backend", b)
	}
	return r, nil
}
