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
// Over Sentinel (Config.Sentinel) the replicas are those a
// sentinel lists (SENTINEL REPLICAS, every 5 s and after a failover),
// each checked every second with INFO — one that is down, that the
// sentinel flags down or disconnected, that is loading its data set, whose
// link to the master is down (master_link_status:down) or that replicates
// another master is skipped until a check finds it well again, and so is
// one a read failed on with a connection failure, LOADING or MASTERDOWN
// (redisx.Client retries such a read, on another node).
//
// On a Redis Cluster the replicas are those the slot map lists as online
// for each master (CLUSTER SHARDS: a failed or loading replica is not
// listed), reloaded with the map; every connection is READONLY so that a
// replica serves its master's slots. A read that fails on a replica — a
// connection failure, a redirect, LOADING, MASTERDOWN — goes to the
// master within the same call, and that replica is skipped for a second.
// A replica whose link to its master is down but that still answers
// (replica-serve-stale-data yes) is not detected: its reads may be stale
// until the cluster fails it over or drops it.
//
// Multiplexed and Pool support it, over Sentinel and on a cluster; a
// standalone server without Sentinel, SlotGrouped and goredis.Strategy
// refuse a ReadFrom other than ReadPrimary with ErrInvalidArgument, and
// so does localcache.Near, which could not keep a cache of replica reads
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

// checkReadFrom refuses a ReadFrom out of range (a standalone server
// without Sentinel refuses any but ReadPrimary when it is opened).
func checkReadFrom(cfg Config) error {
	switch {
	case cfg.ReadFrom > ReadNearest:
		return fmt.Errorf("%w: ReadFrom %d is not ReadPrimary, ReadReplicaPreferred nor ReadNearest", ErrInvalidArgument, cfg.ReadFrom)
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
