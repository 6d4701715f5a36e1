// Package localcache puts an in-process cache in front of any redisx
// strategy and keeps it coherent with the server: Near.
//
// A local read costs tens of nanoseconds where a Redis round trip costs
// tens of microseconds, but a near-cache is only worth having if it never
// serves a value the server has replaced. Near therefore takes its
// coherence from Redis itself, through server-assisted client-side caching
// (CLIENT TRACKING), and errs on the side of a miss whenever it cannot be
// sure.
//
// # How coherence works
//
// Per server (per master on a cluster) Near keeps one invalidation
// connection. It enables tracking in broadcasting mode (BCAST) redirected
// to itself and subscribes to __redis__:invalidate, so the server sends it
// the name of every key written, expired or evicted — optionally only
// under Near.Prefixes. A FLUSHALL or FLUSHDB arrives as a null message and
// flushes the local cache. An ACL user needs CLIENT TRACKING and the
// channel (&__redis__:invalidate): when the server refuses either
// (NOPERM), redisx.New fails at once with redisx.ErrAuth; should it refuse
// them later, nothing is served locally until it accepts again.
//
// Broadcasting mode is chosen over the default (per-connection) mode on
// purpose: in the default mode the server remembers which connection read
// which key and forgets it when that connection drops (redis/redis#11767),
// so every data connection of the wrapped strategy would have to be
// tracked, redirected and watched. With BCAST coherence does not depend on
// which connection read a key, so Near wraps Multiplexed, Pool, SlotGrouped
// and GoRedis unchanged, and losing a data connection loses nothing. The
// price is one invalidation message per write to a matching key, whether
// or not this process cached it: set Prefixes to the key prefixes you cache
// when other keys see heavy writes.
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
