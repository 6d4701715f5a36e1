package redisx

import (
	"fmt"
	"net"

	"github.com/redisx-go/kit/strategy"
)

// SentinelOptions names the sentinels of a deployment managed by Redis
// Sentinel, for Options.Sentinel: the client asks them for the master and
// follows its failovers. Options' Username, Password, Credentials, DB and
// ClientName are the data nodes'; Options.TLS and DialTimeout apply to the
// sentinels too.
//
// The client asks every sentinel at once, each within DialTimeout, for
// the master (SENTINEL GET-MASTER-ADDR-BY-NAME), trusts the one whose
// configuration epoch is newest, and checks with ROLE that the server it
// reaches is a master — and so does every connection it opens to the
// master later. It subscribes to +switch-master on one sentinel (the next
// one when that fails), and asks the sentinels again when a connection to
// the master fails or a write is refused as READONLY. On a failover, new
// calls go to the new master; calls in flight on the old one fail with an
// error wrapping ErrConnection within their deadline (a crashed master
// fails its connections; one the sentinels demote ends them as it becomes
// a replica) and are retried by the Retry policy like any connection
// failure. No call is answered by a demoted master in a failover the
// sentinels run; one demoted by anyone else (REPLICAOF by hand) is caught
// within a second by a ROLE check.
//
// ParseURL reads it from a redis-sentinel URL, and FormatURL writes one:
//
//	redis-sentinel://[[user]:password@]host[:port][,host[:port]…]/master[?param=value&…]
//
// The hosts are the sentinels (port 26379 by default, IPv6 literals in
// brackets), the path is Master, and the user and password are the data
// nodes' (Options.Username and Password). Every parameter of a redis://
// URL applies but addr, and four more: db (Options.DB, in the path of a
// redis:// URL), read_from (Options.ReadFrom: primary, replica or
// nearest), sentinel_username and sentinel_password. The scheme has
// no TLS form: FormatURL refuses Sentinel with TLS.
//
// strategy.Multiplexed, strategy.Pool and localcache.Near over either
// follow the sentinels (Near flushes its local cache and moves its
// invalidation connection with the master); strategy.SlotGrouped,
// goredis.Strategy and a master in cluster mode are refused.
type SentinelOptions struct {
	// Master is the name the sentinels monitor the master under (the
	// name of "sentinel monitor <name> …"). Required.
	Master string
	// Addrs are the sentinels' addresses, "host:port". At least one;
	// list them all, so that the client hears them all.
	Addrs []string
	// Username and Password authenticate with the sentinels (AUTH), when
	// they require it (sentinel requirepass, or an ACL user); they never
	// appear in errors.
	Username, Password string
}

// sentinelConfig validates o.Sentinel (non-nil) into cfg: Addrs are
// ignored then.
func (o *Options) sentinelConfig(cfg *strategy.Config) error {
	s := o.Sentinel
	switch {
	case s.Master == "":
		return fmt.Errorf("%w: Sentinel.Master is empty", ErrInvalidArgument)
	case len(s.Addrs) == 0:
		return fmt.Errorf("%w: Sentinel.Addrs is empty", ErrInvalidArgument)
	case s.Password == "" && s.Username != "":
		return fmt.Errorf("%w: Sentinel.Username without Sentinel.Password", ErrInvalidArgument)
	}
	for _, a := range s.Addrs {
		if _, _, err := net.SplitHostPort(a); err != nil {
			return fmt.Errorf("%w: sentinel address %q is not host:port", ErrInvalidArgument, a)
		}
	}
	cfg.Addrs = nil
	cfg.Sentinel = &strategy.SentinelConfig{
		Master:   s.Master,
		Addrs:    append([]string(nil), s.Addrs...),
		Username: s.Username,
		Password: s.Password,
	}
	return nil
}

// firstAddr is the address telemetry names the client by: the first seed,
// or the first sentinel.
func firstAddr(cfg strategy.Config) string {
	if len(cfg.Addrs) == 0 && cfg.Sentinel != nil {
		return cfg.Sentinel.Addrs[0]
	}
	return cfg.Addrs[0]
}
