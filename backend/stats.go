package backend

import "time"

// Stats describes a backend's connections at one moment. Fields a
// strategy does not track are zero.
type Stats struct {
	Strategy string // "multiplexed", "pool", "go-redis", …

	Conns int // open connections to the server(s)
	// Multiplexed: the shared connections open (its lanes; see
	// strategy.Multiplexed.Lanes), a part of Conns; the connections open
	// for SETs of big values (at most 4 per node; see
	// strategy.Multiplexed), another part; and the deepest pipeline now,
	// the most commands awaiting a reply on one connection (Pending is
	// their sum over all).
	Lanes         int
	BigValueConns int
	PipelineDepth int64

	// Multiplexed: commands written but not yet answered, write batches
	// handed to the socket (counted as the write starts, so a caller that
	// has its reply sees its command counted), and commands they carried
	// (Commands/Flushes is the mean batch size).
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
