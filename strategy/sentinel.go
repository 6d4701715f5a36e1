package strategy

import (
	"context"
	"fmt"

	"github.com/redisx-go/kit/internal/cluster"
	"github.com/redisx-go/kit/internal/conn"
	"github.com/redisx-go/kit/internal/sentinel"
)

// SentinelConfig names the sentinels of a Redis deployment managed by
// Redis Sentinel, for Config.Sentinel (redisx.Options.Sentinel fills it).
// Its fields: Master, the name the sentinels monitor the master under;
// Addrs, the sentinels' addresses (host:port); Username and Password, the
// sentinels' own credentials, if they require any (Config's Username,
// Password and Credentials are the data nodes'). Config.TLS and
// DialTimeout apply to the sentinels too.
//
// With it, Multiplexed and Pool ask every sentinel at once, each within
// DialTimeout, for the master (SENTINEL GET-MASTER-ADDR-BY-NAME), try
// the addresses they name from the newest configuration epoch down, and
// use the first that answers ROLE as a master; Open fails with an error
// wrapping ErrConnection if none does. Every connection made to the
// master afterwards checks its ROLE too before a call uses it. One
// connection to one sentinel is subscribed to +switch-master (the next
// sentinel is tried when it fails or is silent for 3 s); on a switch, or
// when the sentinels, asked again after a connection to the master
// failed, name another master, new calls go to the new master and the old
// master's node is closed once its calls in flight return. Those fail
// with ErrConnection within their deadline: a master that crashed fails
// its connections, and one the sentinels demote ends them as it becomes a
// replica. A write refused with READONLY (a replica's reply) fails with
// an error wrapping ErrConnection that Unsent reports, and the master's
// ROLE is asked every second: either shows a master demoted by someone
// other than the sentinels, whose connections are then replaced. So no
// read is answered by a demoted master beyond that second, and none at
// all in a failover the sentinels run. redisx.Client retries the failed
// calls by its Retry policy.
//
// SlotGrouped and goredis.Strategy refuse it, and so does a master in
// cluster mode; localcache.Near follows the master its inner strategy
// reports (its invalidation connection moves with it, and its local
// cache is flushed).
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
