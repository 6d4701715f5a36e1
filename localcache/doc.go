// Package localcache is Near: an in-process cache in front of any redisx
// strategy, kept coherent with the server.
//
// A local read costs tens of nanoseconds where a Redis round trip costs
// tens of microseconds, but a near-cache is only worth having if it never
// serves a value the server has replaced. Near therefore takes its
// coherence from Redis itself, through server-assisted client-side caching
// (CLIENT TRACKING), and errs on the side of a miss whenever it cannot be
// sure.
//
// # Tracking modes
//
// Near.Tracking chooses how other clients' writes reach the cache.
//
// TrackKeys, the default, has the server remember which keys this process
// read and tell it of writes to those keys only: each data connection of
// the inner strategy — every Multiplexed lane and big-value connection as
// it is dialled, every Pool connection, on every node of a cluster and
// after a Sentinel failover — runs CLIENT TRACKING on REDIRECT to its
// node's invalidation connection. What a process is told grows with what
// it reads, not with what the fleet writes: with 20 near-caches attached
// and another client writing 20,000 keys none of them read, the server
// sent 5.1 bytes per write — the writer's own replies, as with no
// near-cache — where 20 TrackBroadcast ones cost it 854 bytes per write,
// and the writer kept its SET rate (1.01–1.13x) where broadcasting cut it
// to 0.13–0.26x (docs/PERFORMANCE.md, "Near-cache tracking modes"). The
// server keeps a table of the keys read (tracking_total_keys in INFO;
// about 100 bytes a key), which keeps the keys a closed connection read
// until they are written; past tracking-table-max-keys (default 1,000,000;
// 0: unbounded) it evicts keys by invalidating them, which costs misses,
// not coherence. Keys outside Near.Prefixes are read but not cached; the
// server tracks them all the same.
//
// TrackBroadcast has the server send every write to a key under
// Near.Prefixes (every key without them) to every process, whether or
// not it read the key, and keep no per-key state: cheap for a few
// processes, or for writes confined to the prefixes they cache; the
// server's output grows with writes × processes.
//
// TrackNone asks nothing of the server: no invalidation connection, no
// tracking. It is for servers that refuse CLIENT TRACKING (managed
// services, ACL users without client|tracking). Another client's write is
// seen only when the entry's TTL ends: reads may return a replaced value
// for up to Near.TTL — set it to the staleness you can accept. This
// process's own writes invalidate its copy at once, as in every mode.
//
// Near never falls back from one mode to another: with TrackKeys or
// TrackBroadcast, a server that refuses CLIENT TRACKING (or an ACL user
// refused it or the channel) makes redisx.New fail at once with ErrAuth
// (NOPERM) or ErrUnsupported, and an error that names the mode to set
// instead. goredis.Strategy's connections cannot be tracked per key:
// with it as Inner, use TrackBroadcast or TrackNone.
//
// # How coherence works
//
// Per server (per master on a cluster) Near keeps one invalidation
// connection, subscribed to __redis__:invalidate; the server sends it the
// names of the keys written, expired or evicted. A FLUSHALL or FLUSHDB
// arrives as a null message and flushes the local cache. An ACL user
// needs CLIENT TRACKING and the channel (&__redis__:invalidate).
//
// With TrackKeys, the server forgets what a connection tracked when the
// connection ends (redis/redis#11767), and a read does not tell which
// connection served it: so the loss of any data connection — closed by
// the strategy (for its age, idleness, or a call cancelled mid-flight on
// a Pool), killed by the server (CLIENT KILL, timeout), dropped by a proxy
// — flushes the whole cache. Every 50 ms each node's invalidation
// connection's checker asks the server whether each data connection still
// exists, on a connection of its own (so TrackKeys keeps two connections
// per node beside the strategy's), so that a loss is noticed within about
// 50 ms even when nobody uses the connection; while the check cannot be
// made, nothing is served locally. Multiplexed, which keeps its connections, flushes
// rarely; a Pool whose calls are often cancelled flushes often. When an
// invalidation connection is replaced after a loss it has a new client
// ID: the data connections redirected to the old one are closed (their
// calls in flight fail with ErrConnection, as on any lost connection) and
// the strategy dials new ones, before anything is served locally again.
// One replaced for its age (Config.MaxConnAge) is read on until the data
// connections redirected to it are replaced for theirs.
//
// The known race — an invalidation overtaking the reply of the read it
// concerns — is closed with in-flight placeholders: a key is reserved
// before its read is sent; an invalidation of the key voids the
// reservation; the reply is stored only if its reservation survived, and
// is returned either way. Losing an invalidation connection (noticed by its
// error or by a missed ping) flushes the cache at once, and nothing is
// served from it or stored in it until every invalidation connection is
// back — flushing it once more first, so that no read begun before can
// store its reply. A process's own writes (Set, MSet, Del, and any write
// command sent through Do, its keys told by the server's own key
// specifications) invalidate the local copy once they return, before the
// call does, so it always reads its own writes. A script (EVAL, EVALSHA,
// FCALL) invalidates the keys it declares, which Redis requires scripts to
// declare; a key it writes undeclared is invalidated only when the server's
// message arrives. FLUSHALL, FLUSHDB, SWAPDB, and a write whose keys cannot
// be told (a command the table does not know, SORT … STORE, a malformed key
// count, a write naming no key such as EVAL with numkeys 0) flush the whole
// cache. Read-only commands, EVAL_RO and FCALL_RO included, touch nothing.
//
// The bounds above — milliseconds for an invalidation, about 50 ms for a
// lost connection — assume the process gets CPU time: goroutines that keep
// every core busy without blocking delay whatever the network wakes, the
// goroutines that apply invalidations included, by up to hundreds of
// milliseconds.
//
// Concurrent misses of one key share one read: while a read of the key is
// in flight whose reply may still be stored, a miss waits for that reply
// instead of sending its own.
//
// Every entry also carries a TTL no longer than Near.TTL, a bound on
// staleness should everything else fail.
//
// # Ownership
//
// Values returned are the caller's: a local hit is a copy. AppendGet
// (strategy.Appender) appends a hit to the caller's buffer instead, with
// no allocation when it has room.
package localcache
