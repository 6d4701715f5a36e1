package strategy

import (
	"context"

	"github.com/redisx-go/kit/internal/cluster"
	"github.com/redisx-go/kit/internal/sentinel"
	"github.com/redisx-go/kit/strategy/backend"
)

// SentinelConfig names the sentinels of a Redis deployment managed by
// Redis Sentinel, for Config.Sentinel: backend.SentinelConfig, whose
// fields are Master, Addrs, Username and Password (the sentinels' own
// credentials). redisx.SentinelOptions describes how the master is found
// and followed.
type SentinelConfig = backend.SentinelConfig

// open opens the backend of transport t: over the master the sentinels of
// cfg.Sentinel name, or on a standalone server or a cluster.
func open(ctx context.Context, cfg Config, t cluster.Transport) (Backend, error) {
	b, err := sentinel.OpenBackend(ctx, cfg, t)
	if err != nil {
		return nil, err
	}
	return public(b), nil
}

// followed is the backend of a strategy over Sentinel: it reports the
// master it follows (localcache.Near's invalidation connection moves with
// it).
type followed struct {
	running
	s *sentinel.Backend
}

// Master returns the address of the master calls go to now.
func (f followed) Master() string { return f.s.Master() }

// MasterChanged returns a channel closed when Master changes.
func (f followed) MasterChanged() <-chan struct{} { return f.s.MasterChanged() }

var _ sentinel.Follower = followed{}
