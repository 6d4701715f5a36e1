package strategy

import "github.com/redisx-go/kit/backend"

// ReadFrom says which node serves reads, for Config.ReadFrom
// (redisx.Options.ReadFrom fills it): ReadPrimary, the zero value,
// ReadReplicaPreferred or ReadNearest. It is backend.ReadFrom, a uint8
// with one method:
//
//   - String() string: the value of a URL's read_from parameter:
//     primary, replica or nearest.
//
// redisx.ReadFrom documents which reads go where, how replicas are found
// and checked, and the consistency this gives.
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
