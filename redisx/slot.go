package redisx

import "github.com/redisx-go/kit/internal/topology"

// Slot returns the Redis Cluster hash slot of key, 0 to 16383: the CRC16
// of the key — or of its hash tag, the part between the first { and the
// next }, when that is not empty — modulo 16384, as the server computes
// it (CLUSTER KEYSLOT). Keys of one command, or of one transaction, must
// share a slot on a cluster; give them a common {tag} to make sure.
func Slot(key string) int { return topology.Slot(key) }
