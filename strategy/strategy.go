package strategy

import (
	"context"
	"time"

	"github.com/redisx-go/kit/backend"
	"github.com/redisx-go/kit/internal/failure"
)

// Sentinel errors, compared with errors.Is (see package backend, which
// defines them). Package redisx re-exports them.
var (
	ErrNotFound        = backend.ErrNotFound
	ErrClosed          = backend.ErrClosed
	ErrInvalidArgument = backend.ErrInvalidArgument
	ErrConnection      = backend.ErrConnection
	ErrUnsupported     = backend.ErrUnsupported
	ErrAuth            = backend.ErrAuth
	ErrCrossSlot       = backend.ErrCrossSlot
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
func Unsent(err error) bool { return failure.Unsent(err) }

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
func Temporary(err error) bool { return failure.Temporary(err) }

// MaxValueSize is the largest bulk string Redis accepts, in bytes: the
// limit of a value, a key and any argument of a command
// (backend.MaxValueSize).
const MaxValueSize = backend.MaxValueSize

// NodeError reports the keys of a multi-key call that failed on one node
// (SlotGrouped on a cluster); other nodes' results are returned alongside
// it, and errors.As finds it in the joined error. It is never Unsent: the
// call's other parts may have been applied. It is backend.NodeError, a
// struct of three fields:
//
//   - Node string: the node's address, host:port.
//   - Keys []string: the keys whose part failed.
//   - Err error: the node's error.
//
// Its methods, on *NodeError:
//
//   - Error() string: names the node and how many keys failed on it, not
//     the keys themselves, followed by the node's error.
//   - Unwrap() error: returns Err.
type NodeError = backend.NodeError

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

// Stats describes a backend's connections at one moment; fields a
// strategy does not track are zero. It is backend.Stats, a struct whose
// fields are, by the part of the module that fills them:
//
//   - Strategy string: "multiplexed", "pool", "go-redis", …; Conns int:
//     the open connections to the server(s).
//   - Multiplexed: Lanes, its shared connections (see Multiplexed.Lanes);
//     BigValueConns, those open for SETs of big values; PipelineDepth,
//     the most commands awaiting a reply on one connection now; Pending,
//     the commands written and not yet answered; Flushes and Commands,
//     the write batches handed to the socket (counted as each write
//     starts) and the commands they carried
//     (Commands/Flushes is the mean batch size).
//   - Pool, summed over nodes: InUse, connections lent to callers; Idle,
//     those waiting in the pool; MaxConns, the pool's bound; Acquires;
//     AcquireWait, the total time callers waited for a connection;
//     EmptyAcquires, acquires that found no idle connection;
//     CanceledAcquire, acquires abandoned because their context ended.
//   - Topology: Nodes, the servers connected to (0 once closed); on a
//     cluster Masters, the masters in the slot map; Redirects, the MOVED
//     and ASK redirects followed; TopologyRefreshes, the slot-map
//     reloads.
//   - localcache.Near: LocalHits and LocalMisses, the reads served
//     locally and not; Invalidations, local entries dropped by
//     invalidation messages or own writes; InvalidationsReceived, the
//     keys the server's invalidation messages named; LocalFlushes,
//     whole-cache flushes (FLUSHALL, a lost invalidation connection);
//     Evictions, entries evicted for room; LocalBytes, the bytes held
//     (approximate).
//   - Every strategy: Dials, connections opened, redials included;
//     DialErrors, failed dials; BrokenConns, connections discarded after
//     a network or protocol error or a cancelled call.
type Stats = backend.Stats

// Config is the connection settings every strategy shares; redisx fills
// it from Options, and strategies must not modify it. It is
// backend.Config, where each field is documented in full; in one line
// each:
//
//   - Addrs []string: a standalone server's "host:port", or seed nodes of
//     a Redis Cluster. Required.
//   - Username, Password string: AUTH's (an ACL user when Username is
//     set). Never logged nor put in errors.
//   - Credentials func(ctx) (username, password string, err error):
//     called for every new connection, its answer used instead of
//     Username and Password (secrets that rotate, tokens that expire).
//   - MaxConnAge time.Duration: when positive, every connection is
//     replaced once it is that old, without failing a call.
//   - DB int: the database selected on every connection (standalone
//     only).
//   - TLS *tls.Config: when non-nil, every connection is a TLS one.
//   - DialTimeout time.Duration: bounds connecting and authenticating
//     one connection.
//   - ReadTimeout time.Duration: bounds the wait for a reply when the
//     call's context has no deadline, extended by a blocking command's
//     block time (redisx defaults it to 3 s).
//   - WriteTimeout time.Duration: bounds each write of a shared
//     Multiplexed connection, and Pool's write of a big request.
//   - ClientName string: set with CLIENT SETNAME on every connection
//     when not empty.
//   - Sentinel *SentinelConfig: when non-nil, the master comes from the
//     sentinels and Addrs are ignored.
//   - ReadFrom ReadFrom: which node serves reads.
//   - OnConnect func(ctx, addr string, nc net.Conn) error: for decorators
//     such as localcache.Near, called on every new connection that may
//     serve a read, once its handshake is done; redisx never sets it.
type Config = backend.Config
