package strategy

import (
	"context"

	"github.com/redisx-go/kit/internal/cluster"
	"github.com/redisx-go/kit/internal/conn"
	"github.com/redisx-go/kit/internal/sentinel"
)

// SentinelConfig names the sentinels of a Redis deployment managed by
// Redis Sentinel, for Config.Sentinel (redisx.Options.Sentinel fills it;
// redisx.SentinelOptions describes how the master is found and
// followed): Master, the name the sentinels monitor the master under;
// Addrs, the sentinels' addresses (host:port); Username and Password, the
// sentinels' own credentials, if any (Config's are the data nodes').
// Config.TLS and DialTimeout apply to the sentinels too.
//
// Multiplexed and Pool follow the master the sentinels name; Open fails
// with an error wrapping ErrConnection if none answers as a master.
// SlotGrouped, goredis.Strategy and a master in cluster mode refuse it;
// localcache.Near follows the master its inner strategy reports.
type SentinelConfig = conn.Sentinel

// open opens the backend of transport t: over the master the sentinels of
// cfg.Sentinel name, or on a standalone server or a cluster.
func open(ctx context.Context, cfg Config, t cluster.Transport) (Backend, error) {
	b, err := sentinel.OpenBackend(ctx, conn.Config(cfg), t)
	if err != nil {
		return nil, err
	}
	return public(b), nil
}

// followed is the backend of a strategy over Sentinel: it reports the
// master it follows (localcache.Near's invalidation connection moves with
// it).
type followed struct {
	backend
	s *sentinel.Backend
}

// Master returns the address of the master calls go to now.
func (f followed) Master() string { return f.s.Master() }

// MasterChanged returns a channel closed when Master changes.
func (f followed) MasterChanged() <-chan struct{} { return f.s.MasterChanged() }

var _ sentinel.Follower = followed{}
