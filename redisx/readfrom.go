package redisx

import "github.com/redisx-go/kit/strategy"

// ReadFrom says which node serves reads, for Options.ReadFrom: the master
// (ReadPrimary, the zero value), a replica (ReadReplicaPreferred) or the
// nearest node (ReadNearest). Replicas are found through Options.Sentinel;
// strategy.ReadFrom documents which reads go where, how replicas are
// checked, and the consistency this gives: replication is asynchronous,
// so a read from a replica may miss a write just made, your own included.
// Its String is the value of a URL's read_from parameter: primary,
// replica or nearest.
type ReadFrom = strategy.ReadFrom

// The values of ReadFrom.
const (
	// ReadPrimary sends every read to the master. The zero value.
	ReadPrimary = strategy.ReadPrimary
	// ReadReplicaPreferred sends reads to the healthy replicas, in turn,
	// and to the master when none is healthy.
	ReadReplicaPreferred = strategy.ReadReplicaPreferred
	// ReadNearest sends reads to the node, master or healthy replica,
	// with the lowest measured round trip.
	ReadNearest = strategy.ReadNearest
)
