package redisx

import (
	"fmt"

	"github.com/redisx-go/kit/backend"
	"github.com/redisx-go/kit/strategy"
)

// ReadFrom says which node serves reads, for Options.ReadFrom: the master
// (ReadPrimary, the zero value), a replica (ReadReplicaPreferred) or the
// nearest node (ReadNearest). Reads are Get (and AppendGet), MGet,
// GetOrLoad's read of the cached value (a GET with the key's time to
// live), and Do of a command the server's command table flags read-only
// (GET, MGET, EXISTS, HGETALL, EVAL_RO…), except the SCAN family, whose
// cursor belongs to one server, and blocking commands. Everything else
// goes to the master.
//
// Over Sentinel (Options.Sentinel) the replicas are those a
// sentinel lists (SENTINEL REPLICAS, every 5 s and after a failover),
// each checked every second with INFO — one that is down, that the
// sentinel flags down or disconnected, that is loading its data set, whose
// link to the master is down (master_link_status:down) or that replicates
// another master is skipped until a check finds it well again, and so is
// one a read failed on with a connection failure, LOADING or MASTERDOWN
// (Client retries such a read, on another node).
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
// strategy.Multiplexed and strategy.Pool support it, over Sentinel and on
// a cluster; a standalone server without Sentinel, strategy.SlotGrouped
// and goredis.Strategy refuse a ReadFrom other than ReadPrimary with
// ErrInvalidArgument, and so does localcache.Near, which could not keep a
// cache of replica reads coherent with the master's invalidations.
//
// Consistency: replication is asynchronous, so a read from a replica may
// return a value older than the master's — a read after your own write
// may miss it, and two reads in a row may go back in time if they reach
// different replicas. Use ReadPrimary where that matters.
//
// Its String is the value of a URL's read_from parameter: primary,
// replica or nearest.
type ReadFrom = backend.ReadFrom

// The values of ReadFrom.
const (
	// ReadPrimary sends every read to the master. The zero value.
	ReadPrimary = backend.ReadPrimary
	// ReadReplicaPreferred sends reads to the healthy replicas, in turn,
	// and to the master when none is healthy.
	ReadReplicaPreferred = backend.ReadReplicaPreferred
	// ReadNearest sends reads to the node, master or healthy replica,
	// with the lowest round trip measured by the checks of the last
	// seconds (a moving average).
	ReadNearest = backend.ReadNearest
)

// parseReadFrom reads a URL's read_from parameter.
func parseReadFrom(p *strategy.URLParams) (ReadFrom, error) {
	v, err := p.String("read_from")
	if err != nil {
		return ReadPrimary, err
	}
	return readFromOf(v)
}

// readFromOf is the ReadFrom a read_from parameter names ("" for none).
func readFromOf(v string) (ReadFrom, error) {
	switch v {
	case "", ReadPrimary.String():
		return ReadPrimary, nil
	case ReadReplicaPreferred.String():
		return ReadReplicaPreferred, nil
	case ReadNearest.String():
		return ReadNearest, nil
	}
	return ReadPrimary, fmt.Errorf("%w: read_from=%q in URL, want primary, replica or nearest", ErrInvalidArgument, v)
}
