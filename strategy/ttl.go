package strategy

import (
	"context"
	"time"

	"github.com/redisx-go/kit/backend"
)

// TTLGetter is an optional interface that may be implemented by a Backend:
// reads that also return each key's remaining time to live, in the same
// round trip (GET or MGET pipelined with PTTL). A near-cache uses it so
// that no entry outlives its key. A TTL of NoTTL means the key has no
// expiry; UnknownTTL that it could not be read. Without it localcache.Near
// bounds entries by its own TTL only.
type TTLGetter interface {
	GetWithTTL(ctx context.Context, key string) ([]byte, time.Duration, error)
	MGetWithTTL(ctx context.Context, keys []string) ([][]byte, []time.Duration, error)
}

// Sentinel TTLs of TTLGetter: the key has no expiry (NoTTL), its TTL
// could not be read (UnknownTTL).
const (
	NoTTL      = backend.NoTTL
	UnknownTTL = backend.UnknownTTL
)
