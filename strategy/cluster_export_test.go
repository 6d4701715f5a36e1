package strategy

import (
	"context"
	"fmt"
	"time"

	"github.com/redisx-go/kit/internal/cluster"
)

// InstallShardsForTest makes shards the slot map of b, a cluster backend
// (or SlotGrouped over one), as if a refresh had read them: the nodes the
// map no longer lists are retired. The next refresh may start at once.
// Tests force a map change with it — a master leaving, a stale map —
// without waiting for the cluster to make one.
func InstallShardsForTest(b Backend, shards []cluster.Shard) error {
	c, err := clusterOf(b)
	if err != nil {
		return err
	}
	c.refreshMu.Lock()
	c.lastRefresh = time.Time{}
	c.refreshMu.Unlock()
	c.mu.Lock()
	top, err := c.build(shards)
	var gone []*member
	if err == nil {
		gone = c.install(top)
	}
	c.mu.Unlock()
	retireAll(gone)
	return err
}

// RefreshForTest reloads the slot map of b, a cluster backend (or
// SlotGrouped over one), and waits for the outcome within ctx, as any
// caller of the shared refresh does.
func RefreshForTest(ctx context.Context, b Backend) error {
	c, err := clusterOf(b)
	if err != nil {
		return err
	}
	return c.refresh(ctx)
}

func clusterOf(b Backend) (*clusterBackend, error) {
	var m capable
	switch w := b.(type) {
	case grouped:
		m = w.capable.(*slotGrouped).inner
	case routed:
		m = w.capable
	case backend:
		m = w.capable
	}
	c, ok := m.(*clusterBackend)
	if !ok {
		return nil, fmt.Errorf("%T is not a cluster backend", b)
	}
	return c, nil
}
