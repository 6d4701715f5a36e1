package strategy

import (
	"fmt"

	"github.com/redisx-go/kit/internal/conn"
)

// ReadFrom says which node serves reads, for Config.ReadFrom
// (redisx.Options.ReadFrom fills it). Reads are Get (and AppendGet), MGet,
// the reads of GetWithTTL and MGetWithTTL, and Do of a command the
// server's command table flags read-only (GET, MGET, EXISTS, HGETALL,
// EVAL_RO…), except the SCAN family, whose cursor belongs to one server,
// and blocking commands. Everything else goes to the master.
//
// Replicas are found through Sentinel (Config.Sentinel): the replicas a
// sentinel lists (SENTINEL REPLICAS, every 5 s and after a failover),
// each checked every second with INFO — one that is down, that the
// sentinel flags down or disconnected, that is loading its data set, whose
// link to the master is down (master_link_status:down) or that replicates
// another master is skipped until a check finds it well again, and so is
// one a read failed on with a connection failure, LOADING or MASTERDOWN
// (redisx.Client retries such a read, on another node). Multiplexed and
// Pool support it over Sentinel; elsewhere (a standalone server without
// Sentinel, a Redis Cluster, SlotGrouped, goredis.Strategy) a ReadFrom
// other than ReadPrimary is refused with ErrInvalidArgument, and so is it
// by localcache.Near, which could not keep a cache of replica reads
// coherent with the master's invalidations.
//
// Consistency: replication is asynchronous, so a read from a replica may
// return a value older than the master's — a read after your own write
// may miss it, and two reads in a row may go back in time if they reach
// different replicas. Use ReadPrimary where that matters.
type ReadFrom = conn.ReadFrom

// The values of ReadFrom.
const (
	// ReadPrimary sends every read to the master. The zero value.
	ReadPrimary ReadFrom = conn.ReadPrimary
	// ReadReplicaPreferred sends reads to the healthy replicas, in turn,
	// and to the master when none is healthy.
	ReadReplicaPreferred ReadFrom = conn.ReadReplicaPreferred
	// ReadNearest sends reads to the node, master or healthy replica,
	// with the lowest round trip measured by the checks of the last
	// seconds (a moving average).
	ReadNearest ReadFrom = conn.ReadNearest
)

// checkReadFrom refuses a ReadFrom out of range, and one other than
// ReadPrimary without Sentinel.
func checkReadFrom(cfg Config) error {
	switch {
	case cfg.ReadFrom > ReadNearest:
		return fmt.Errorf("%w: ReadFrom %d is not ReadPrimary, ReadReplicaPreferred nor ReadNearest", ErrInvalidArgument, cfg.ReadFrom)
	case cfg.ReadFrom != ReadPrimary && cfg.Sentinel == nil:
		return fmt.Errorf("%w: ReadFrom other than ReadPrimary needs Sentinel, which names the replicas", ErrInvalidArgument)
	}
	return nil
}

// noReplicaReads refuses a ReadFrom other than ReadPrimary for what.
func noReplicaReads(cfg Config, what string) error {
	if cfg.ReadFrom == ReadPrimary {
		return nil
	}
	return fmt.Errorf("%w: %s reads from the master only: ReadFrom must be ReadPrimary", ErrInvalidArgument, what)
}
