package strategy

import (
	"context"
	"fmt"

	"github.com/redisx-go/kit/internal/cluster"
	"github.com/redisx-go/kit/internal/conn"
	"github.com/redisx-go/kit/internal/sentinel"
)

// SentinelConfig names the sentinels of a Redis deployment managed by
// Redis Sentinel, for Config.Sentinel (redisx.Options.Sentinel fills it):
// Master, the name the sentinels monitor the master under; Addrs, the
// sentinels' addresses (host:port); Username and Password, the sentinels'
// own credentials, if any (Config's are the data nodes'). Config.TLS and
// DialTimeout apply to the sentinels too.
//
// Multiplexed and Pool follow the master the sentinels name, as
// redisx.SentinelOptions describes in full: the master found by asking
// every sentinel at once and checked with ROLE (Open fails with an error
// wrapping ErrConnection if none answers as a master), +switch-master
// followed, calls in flight on a master that is replaced failing with
// ErrConnection within their deadline, READONLY replies and a ROLE check
// every second catching a master demoted by anyone else. SlotGrouped,
// goredis.Strategy and a master in cluster mode refuse it;
// localcache.Near follows the master its inner strategy reports.
type SentinelConfig = conn.Sentinel

// open opens the backend of transport t: over the master the sentinels of
// cfg.Sentinel name, or by cluster.Open (a standalone server or a
// cluster).
func open(ctx context.Context, cfg Config, t cluster.Transport) (Backend, error) {
	if err := checkReadFrom(cfg); err != nil {
		return nil, err
	}
	if cfg.Sentinel != nil {
		b, err := sentinel.Open(ctx, conn.Config(cfg), t)
		if err != nil {
			return nil, err
		}
		return followed{backend{b}, b}, nil
	}
	b, err := cluster.Open(ctx, conn.Config(cfg), t)
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

// noSentinel refuses cfg.Sentinel for what, a strategy that does not
// follow the sentinels.
func noSentinel(cfg Config, what string) error {
	if cfg.Sentinel == nil {
		return nil
	}
	return fmt.Errorf("%w: %s does not support Sentinel", ErrInvalidArgument, what)
}

var _ sentinel.Follower = followed{}
