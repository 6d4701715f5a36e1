package redisx

import (
	"fmt"

	"github.com/redisx-go/kit/strategy"
)

// ReadFrom says which node serves reads, for Options.ReadFrom: the master
// (ReadPrimary, the zero value), a replica (ReadReplicaPreferred) or the
// nearest node (ReadNearest). Replicas are found through Options.Sentinel
// or, on a Redis Cluster, in its slot map;
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
