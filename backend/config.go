package backend

import (
	"context"
	"crypto/tls"
	"net"
	"strconv"
	"time"
)

// Config is the connection settings every strategy shares. redisx fills it
// from Options; strategies must not modify it.
type Config struct {
	// Addrs are "host:port": a standalone server's, or seed nodes of a
	// Redis Cluster. Required. Several name a cluster: Open refuses them
	// (ErrInvalidArgument) when the one that answers is a standalone
	// server.
	Addrs []string
	// Username and Password authenticate with AUTH (ACL user when
	// Username is set). Never logged nor put in errors.
	Username string
	Password string
	// Credentials, when set, is called for every new connection, within
	// its DialTimeout, and its user name and password are used instead of
	// Username and Password (which redisx refuses beside it): the way to
	// authenticate with secrets that rotate or tokens that expire. An
	// empty password sends no AUTH. Its error fails the dial with an
	// error wrapping ErrConnection and it, which Unsent reports. It is
	// called from many goroutines at once.
	Credentials func(ctx context.Context) (username, password string, err error)
	// MaxConnAge, when positive, replaces every connection — shared,
	// pooled, dedicated or invalidation connection — once it is that old,
	// without failing a call: a shared connection is replaced by a fresh
	// one for new calls while its calls in flight finish, then closed; a
	// pooled one is closed when released or found idle. Connections
	// authenticated with credentials that later expire or are revoked thus
	// last at most this long. Zero: no limit.
	MaxConnAge time.Duration
	// DB is the database index selected on every connection (standalone
	// only).
	DB int
	// TLS, when non-nil, makes every connection a TLS connection.
	TLS *tls.Config
	// DialTimeout bounds connecting and authenticating one connection.
	DialTimeout time.Duration
	// ReadTimeout bounds the wait for a reply when the call's context has
	// no deadline. The rule, the same on every transport: a call waits for
	// its reply until its context ends; when the context has no deadline,
	// at most until ReadTimeout after its request was sent, extended by a
	// blocking command's own block time (the timeout of BLPOP, BZPOPMIN,
	// BLMPOP…, the BLOCK of XREAD, the timeout of WAIT) — without bound
	// for a block time of 0. A connection is discarded only when a reply
	// is overdue under that rule, and then within half a ReadTimeout.
	// Sent means written whole and, on plain TCP connections on Linux
	// (amd64, arm64), acknowledged by the peer, since a write ends once
	// the kernel's send buffer holds the bytes: the upload of a big
	// request is not counted, but a peer that acknowledges none of it for
	// ReadTimeout fails the connection as a missing reply would. Zero or
	// negative: no bound (redisx defaults it to 3 s).
	ReadTimeout time.Duration
	// WriteTimeout bounds each write of a shared strategy.Multiplexed connection; a
	// write that takes longer fails the connection. Pool bounds with it
	// the write of a request of 16 KiB or more when the call's context has
	// no deadline, and writes others under the call's read deadline. Zero
	// or negative: no bound.
	WriteTimeout time.Duration
	// ClientName is set with CLIENT SETNAME on every connection when not
	// empty.
	ClientName string
	// Sentinel, when non-nil, names the master through Redis Sentinel:
	// Addrs are ignored, the master's address comes from the sentinels,
	// and every connection is checked to reach a master (see
	// SentinelConfig).
	Sentinel *SentinelConfig
	// ReadFrom says which node serves reads (see ReadFrom): the master
	// (ReadPrimary, the zero value) or, over Sentinel, a replica.
	ReadFrom ReadFrom
	// OnConnect is for decorators such as localcache.Near, which set it
	// in the Config they pass to the inner strategy's Open; redisx never
	// sets it. When set, strategy.Multiplexed and strategy.Pool (alone, on
	// a cluster or over Sentinel) call it on every new connection that may
	// serve a read — each shared connection of Multiplexed, big-value ones
	// included, and each pooled connection — once its handshake is done
	// and before it carries a call; not on Multiplexed's connections for
	// blocking commands and transactions, nor on Pub/Sub connections, nor
	// on those of Dial. addr is the node's address as dialled. OnConnect
	// may run commands on nc (reading exactly their replies; ctx's
	// deadline, DialTimeout's, is set on nc) and keep nc: closing it later
	// makes the strategy drop the connection as failed, as a server
	// closing it would. Its error fails the dial as it is: wrap
	// ErrConnection, or ErrAuth for a refusal. goredis.Strategy does not
	// call it.
	OnConnect func(ctx context.Context, addr string, nc net.Conn) error
}

// ReadFrom says which node serves reads, for Config.ReadFrom
// (redisx.Options.ReadFrom fills it): the master, a replica or the
// nearest node. redisx.ReadFrom documents which reads go where, how
// replicas are found and checked, and the consistency this gives.
// strategy.Multiplexed and strategy.Pool support it, over Sentinel and on
// a cluster; a standalone server without Sentinel, strategy.SlotGrouped,
// goredis.Strategy and localcache.Near refuse a ReadFrom other than
// ReadPrimary with ErrInvalidArgument.
type ReadFrom uint8

// The values of ReadFrom.
const (
	// ReadPrimary sends every read to the master. The zero value.
	ReadPrimary ReadFrom = iota
	// ReadReplicaPreferred sends reads to the healthy replicas, in turn,
	// and to the master when none is healthy.
	ReadReplicaPreferred
	// ReadNearest sends reads to the node, master or healthy replica,
	// with the lowest round trip measured by the checks of the last
	// seconds (a moving average).
	ReadNearest
)

// String returns the name of r in a URL's read_from parameter: primary,
// replica or nearest.
func (r ReadFrom) String() string {
	switch r {
	case ReadPrimary:
		return "primary"
	case ReadReplicaPreferred:
		return "replica"
	case ReadNearest:
		return "nearest"
	}
	return "ReadFrom(" + strconv.Itoa(int(r)) + ")"
}

// SentinelConfig names the sentinels of a Redis deployment managed by
// Redis Sentinel, for Config.Sentinel (redisx.Options.Sentinel fills it;
// redisx.SentinelOptions describes how the master is found and
// followed). Config.TLS and DialTimeout apply to the sentinels too.
//
// strategy.Multiplexed and strategy.Pool follow the master the sentinels
// name; Open fails with an error wrapping ErrConnection if none answers
// as a master. strategy.SlotGrouped, goredis.Strategy and a master in
// cluster mode refuse it; localcache.Near follows the master its inner
// strategy reports.
type SentinelConfig struct {
	Master   string   // the name the sentinels monitor the master under
	Addrs    []string // the sentinels' addresses, host:port
	Username string   // the sentinels' own user, if any (Config's is the data nodes')
	Password string   // the sentinels' own password, if any
}
