package strategy

import (
	"context"
	"crypto/tls"
	"net"
	"time"

	"github.com/redisx-go/kit/internal/conn"
)

// Sentinel errors, compared with errors.Is. Package redisx re-exports them.
var (
	// ErrNotFound is returned by Get when the key does not exist.
	ErrNotFound = conn.ErrNotFound
	// ErrClosed is returned by any call on a closed client, and by calls
	// still waiting when the client is closed.
	ErrClosed = conn.ErrClosed
	// ErrInvalidArgument is returned, before anything is sent, for input
	// the server would refuse or misread: a negative TTL, a key, value or
	// command argument over MaxValueSize, a nil map, an argument of an
	// unsupported type. A new connection's setting that the server
	// refuses (an ERR reply to the handshake's SELECT or CLIENT SETNAME:
	// a DB out of range, a DB other than 0 on a cluster) wraps it too,
	// with the server's reply, and not ErrConnection: another attempt
	// would get the same answer.
	ErrInvalidArgument = conn.ErrInvalidArgument
	// ErrConnection wraps network and protocol failures. The connection
	// that failed is discarded and replaced; the call may be retried.
	ErrConnection = conn.ErrConnection
	// ErrUnsupported is returned for a command or capability the strategy
	// does not provide, such as a transaction on a shared connection.
	ErrUnsupported = conn.ErrUnsupported
	// ErrAuth is returned when the server refuses a new connection's
	// handshake for its credentials: a wrong password or user name
	// (WRONGPASS, "invalid password", "invalid username-password pair"), no
	// password where one is required (NOAUTH), a password where none is
	// configured, or a user not allowed to run a handshake command
	// (NOPERM). It does not wrap ErrConnection: retrying with the same
	// credentials does not help, and redisx never retries it. The error
	// names the server, never the password.
	ErrAuth = conn.ErrAuth
)

// Unsent reports whether err shows that the request of the call that
// returned it was not executed: the call failed before any byte of it
// was written — a dial that failed (ErrAuth included), a pool that could
// not create a connection, a connection found broken before the request
// was written to it, a cluster slot no master served, a context that
// ended before the request was sent — or the server refused it without
// running it, with a reply that means "not now" (TRYAGAIN, CLUSTERDOWN,
// LOADING, MASTERDOWN: see Temporary). Retrying such a call cannot apply
// a write twice. Unsent is false for nil, for errors that do not wrap a
// connection failure of this package, for an error that joins several
// unless every one is unsent, and for a *NodeError: it reports one
// node's part of a multi-node call, whose other parts may have been
// applied.
func Unsent(err error) bool { return conn.Unsent(err) }

// Temporary reports whether err is a failure that the same call may not
// meet if it is tried again a moment later: a connection failure (an
// error wrapping ErrConnection, but not ErrClosed nor a context's end) or
// a server reply that means "not now" rather than "no" — TRYAGAIN (the
// keys of a slot being migrated), CLUSTERDOWN, LOADING (a server loading
// its data set), MASTERDOWN (a replica that lost its master). Whether a
// write that failed so may be sent again is Unsent's to say.
//
// Backends of this module do not retry (a cluster follows MOVED and ASK
// redirects, which are routing, and reloads its slot map after such a
// failure): redisx.Client retries by its one policy, redisx.Retry, with
// these two functions.
func Temporary(err error) bool { return conn.Temporary(err) }

// MaxValueSize is the largest bulk string Redis accepts
// (proto-max-bulk-len's default), in bytes: the limit of a value, a key
// and any argument of a command.
const MaxValueSize = conn.MaxValueSize

// NodeError reports the keys of a multi-key call that failed on one node
// (SlotGrouped on a cluster); other nodes' results are returned alongside
// it, and errors.As finds it in the joined error. Its fields: Node, the
// node's address (host:port); Keys, the keys whose part failed; Err, the
// node's error, which Unwrap returns.
type NodeError = conn.NodeError

// Strategy is implemented by the values users choose from (Multiplexed,
// Pool, GoRedis, localcache.Near…). Open starts a running backend with
// the shared connection settings. Open must not modify the receiver and
// must verify that the server answers before it returns. When ctx ends
// first, Open returns without delay an error that wraps ErrConnection and
// ctx's error and names the address it waited for (the strategies of
// this module do).
type Strategy interface {
	Open(ctx context.Context, cfg Config) (Backend, error)
}

// Validator is implemented by strategy values that can tell, without
// connecting, whether Open would refuse them with cfg: Multiplexed, Pool,
// SlotGrouped and localcache.Near. Validate returns the error Open would
// return before it dials — a field out of range, fields that exclude each
// other, a field cfg excludes (a ReadFrom or Sentinel the strategy does
// not support) — and Open calls it first, so that the rules live once.
// redisx.ParseURL asks it, and refuses a URL whose Options New would.
type Validator interface {
	Strategy
	Validate(cfg Config) error
}

var (
	_ Validator = Multiplexed{}
	_ Validator = Pool{}
	_ Validator = SlotGrouped{}
)

// Backend is a running strategy. Implementations are safe for concurrent
// use. The caller of Open owns the Backend and must Close it.
//
// Get returns an error wrapping ErrNotFound for a missing key; the value
// it returns is the caller's to modify and keep (a strategy that caches
// values hands out copies). Set with
// ttl 0 stores without expiry; ttl is never negative (the facade checks).
// Del returns how many of the keys existed. Close releases every
// connection and goroutine; calls after Close return ErrClosed.
type Backend interface {
	Get(ctx context.Context, key string) ([]byte, error)
	Set(ctx context.Context, key string, value []byte, ttl time.Duration) error
	Del(ctx context.Context, keys ...string) (int64, error)
	Close() error
}

// Appender is an optional interface that may be implemented by a Backend:
// the allocation-conscious read. AppendGet appends the value of key to dst
// and returns the extended slice, in the style of strconv.AppendInt; the
// result is the caller's. On a miss it returns dst unchanged and an error
// wrapping ErrNotFound; on any other error, dst unchanged and the error.
// A near-cache hit appended to a dst with room allocates nothing. Without
// it the facade calls Get and appends the value.
type Appender interface {
	AppendGet(ctx context.Context, dst []byte, key string) ([]byte, error)
}

// MultiGetter is an optional interface that may be implemented by a
// Backend. MGet returns one element per key, in the keys' order, nil
// where a key is missing. Without it the facade calls Get once per key.
type MultiGetter interface {
	MGet(ctx context.Context, keys []string) ([][]byte, error)
}

// MultiSetter is an optional interface that may be implemented by a
// Backend. MSet stores every pair with the same ttl (0: no expiry).
// Without it the facade calls Set once per pair.
type MultiSetter interface {
	MSet(ctx context.Context, kv map[string][]byte, ttl time.Duration) error
}

// Doer is an optional interface that may be implemented by a Backend: the
// escape hatch for any command. Arguments are strings, []byte, integers,
// floats or bools; replies use redigo's types ([]byte, string, int64,
// []any, nil), so redigo's helpers such as redis.String convert them. A
// server error reply is returned as an error wrapping a redis.Error.
// Without it the facade returns ErrUnsupported.
type Doer interface {
	Do(ctx context.Context, args ...any) (any, error)
}

// NodeDoer is an optional interface that may be implemented by a Backend
// on a Redis Cluster: Do on a node the caller names, for the commands
// each master answers for itself — SCAN (each master has its own cursor),
// INFO, MEMORY STATS, LATENCY — which Do refuses on a cluster with
// ErrUnsupported.
//
// Masters returns the addresses (host:port) of the masters of the current
// slot map, as DoOn takes them, in the order of their first slot. The map
// follows failovers and resharding — it is reloaded on redirects, on
// connection failures and every 15 s — so a list kept for long may name a
// node that is no longer a master.
//
// DoOn runs one command on the master at addr, with Do's argument and
// reply types. It does no routing: no redirect is followed and nothing is
// retried. An addr that is not a master of the current map is refused
// with ErrInvalidArgument.
//
// Without it (a standalone server, or a strategy that does not route by
// itself) there is one node: send the command with Do. Decorators need not
// implement it: look for it along the Unwrap chain.
type NodeDoer interface {
	Masters() []string
	DoOn(ctx context.Context, addr string, args ...any) (any, error)
}

// Statser is an optional interface that may be implemented by a Backend.
// Without it the facade reports zero Stats.
type Statser interface {
	Stats() Stats
}

// SelfRetrier is an optional interface that may be implemented by a
// Backend that retries failed calls by a policy of its own, as go-redis
// does (its Options.MaxRetries): when RetriesCalls reports true, the
// facade leaves retries to it rather than multiply attempts. Without it
// the facade retries by redisx.Options.Retry. The facade looks for it
// along the Unwrapper chain.
type SelfRetrier interface {
	RetriesCalls() bool
}

// Unwrapper is an optional interface implemented by decorators: Unwrap
// returns the Backend they wrap, so capabilities hidden by a wrapper can
// be found along the chain.
type Unwrapper interface {
	Unwrap() Backend
}

// Stats describes a backend's connections at one moment. Fields a
// strategy does not track are zero.
type Stats struct {
	Strategy string // "multiplexed", "pool", "go-redis", …

	Conns int // open connections to the server(s)
	// Multiplexed: the shared connections open (its lanes; see
	// Multiplexed.Lanes), a part of Conns.
	Lanes int

	// Multiplexed: commands written but not yet answered, write batches
	// flushed, and commands they carried (Commands/Flushes is the mean
	// batch size).
	Pending  int64
	Flushes  int64
	Commands int64

	// Pool (summed over nodes).
	InUse           int           // connections lent to callers
	Idle            int           // connections waiting in the pool
	MaxConns        int           // the pool's bound
	Acquires        int64         // successful acquires
	AcquireWait     time.Duration // total time callers waited for a connection
	EmptyAcquires   int64         // acquires that found no idle connection
	CanceledAcquire int64         // acquires abandoned because the context ended

	// Topology: the servers connected to (1 on a standalone server,
	// whatever the strategy; the master and the replicas followed over
	// Sentinel; a cluster's nodes; 0 once closed), and on a cluster the
	// masters in the slot map, MOVED/ASK redirects followed, and slot-map
	// reloads.
	Nodes             int
	Masters           int
	Redirects         int64
	TopologyRefreshes int64

	// Near-cache (localcache.Near): reads served locally and not, local
	// entries dropped by invalidation messages or own writes, the keys
	// the server's invalidation messages named (a part of Invalidations:
	// what tracking costs the process, and the server), whole-cache
	// flushes (FLUSHALL, a lost invalidation connection), entries evicted
	// for room, and the bytes held (approximate).
	LocalHits             int64
	LocalMisses           int64
	Invalidations         int64
	InvalidationsReceived int64
	LocalFlushes          int64
	Evictions             int64
	LocalBytes            int64

	Dials       int64 // connections opened, including redials
	DialErrors  int64 // failed dials
	BrokenConns int64 // connections discarded after a network or protocol error or a cancelled call
}

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
	// WriteTimeout bounds each write of a shared Multiplexed connection; a
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
	// sets it. When set, Multiplexed and Pool (alone, on a cluster or over
	// Sentinel) call it on every new connection that may serve a read —
	// each shared connection of Multiplexed, big-value ones included, and
	// each pooled connection — once its handshake is done and before it
	// carries a call; not on Multiplexed's connections for blocking
	// commands and transactions, nor on Pub/Sub connections, nor on
	// those of Dial. addr is the node's address as dialled. OnConnect may
	// run commands on nc (reading exactly their replies; ctx's deadline,
	// DialTimeout's, is set on nc) and keep nc: closing it later makes the
	// strategy drop the connection as failed, as a server closing it
	// would. Its error fails the dial as it is: wrap ErrConnection, or
	// ErrAuth for a refusal. goredis.Strategy does not call it.
	OnConnect func(ctx context.Context, addr string, nc net.Conn) error
}
