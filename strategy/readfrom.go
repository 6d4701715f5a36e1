package strategy

import "github.com/redisx-go/kit/internal/conn"

// ReadFrom says which node serves reads, for Config.ReadFrom
// (redisx.Options.ReadFrom fills it): the master, a replica or the
// nearest node. redisx.ReadFrom documents which reads go where, how
// replicas are found and checked, and the consistency this gives.
// Multiplexed and Pool support it, over Sentinel and on a cluster; a
// standalone server without Sentinel, SlotGrouped, goredis.Strategy and
// localcache.Near refuse a ReadFrom other than ReadPrimary with
// ErrInvalidArgument.
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
