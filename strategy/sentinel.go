package strategy

import (
	"context"

	"github.com/redisx-go/kit/backend"
	"github.com/redisx-go/kit/internal/sentinel"
	"github.com/redisx-go/kit/internal/transport"
)

// SentinelConfig names the sentinels of a Redis deployment managed by
// Redis Sentinel, for Config.Sentinel (redisx.Options.Sentinel fills
// it). It is backend.SentinelConfig, a struct of four fields:
//
//   - Master string: the name the sentinels monitor the master under.
//   - Addrs []string: the sentinels' addresses, host:port.
//   - Username string: the sentinels' own user, if any (Config's is the
//     data nodes').
//   - Password string: the sentinels' own password, if any.
//
// Config.TLS and DialTimeout apply to the sentinels too. Multiplexed and
// Pool follow the master the sentinels name, and Open fails with an
// error wrapping ErrConnection if none answers as a master; SlotGrouped,
// goredis.Strategy and a master in cluster mode refuse it;
// localcache.Near follows the master its inner strategy reports.
// redisx.SentinelOptions describes how the master is found and followed.
type SentinelConfig = backend.SentinelConfig

// MasterFollower is an optional interface that may be implemented by a
// Backend opened with Config.Sentinel: Master returns the address of the
// master its calls go to now, and MasterChanged a channel closed when
// Master changes (a failover). Multiplexed and Pool implement it over
// Sentinel. localcache.Near, opened with Sentinel, looks for it along its
// inner backend's Unwrap chain (Find) and moves its invalidation
// connection with the master; without one it refuses Sentinel.
type MasterFollower interface {
	Master() string
	MasterChanged() <-chan struct{}
}

// open opens the backend of transport t: over the master the sentinels of
// cfg.Sentinel name, or on a standalone server or a cluster.
func open(ctx context.Context, cfg Config, t transport.Transport) (Backend, error) {
	b, err := sentinel.OpenBackend(ctx, cfg, t)
	if err != nil {
		return nil, err
	}
	return public(b), nil
}

// followed is the backend of a strategy over Sentinel: a MasterFollower.
type followed struct {
	running
	s *sentinel.Backend
}

// Master returns the address of the master calls go to now.
func (f followed) Master() string { return f.s.Master() }

// MasterChanged returns a channel closed when Master changes.
func (f followed) MasterChanged() <-chan struct{} { return f.s.MasterChanged() }

var _ MasterFollower = followed{}
