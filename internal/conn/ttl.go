package conn

import (
	"context"
	"time"

	"github.com/redisx-go/kit/internal/failure"
	"github.com/redisx-go/kit/strategy/backend"
)

// PTTL turns a PTTL reply into a TTL: -1 no expiry, -2 (gone) and errors
// unknown.
func PTTL(rp *Reply) time.Duration {
	switch {
	case rp.Err != nil || rp.Num == -2:
		return backend.UnknownTTL
	case rp.Num == -1:
		return backend.NoTTL
	}
	return time.Duration(rp.Num) * time.Millisecond
}

// TTLPipeline encodes MGET (or GET for one key) followed by one PTTL per
// key, and the replies to decode them into.
func TTLPipeline(keys []string, single bool) ([]byte, []Reply) {
	var buf []byte
	rps := make([]Reply, 1+len(keys))
	if single {
		buf = AppendGet(buf, keys[0])
		rps[0] = Reply{Kind: ReplyBulk}
	} else {
		buf = AppendKeys(buf, "MGET", keys)
		rps[0] = Reply{Kind: ReplyBulks, Vals: make([][]byte, len(keys))}
	}
	for i, k := range keys {
		buf = AppendKeys(buf, "PTTL", []string{k})
		rps[1+i] = Reply{Kind: ReplyInt}
	}
	return buf, rps
}

// Execer is a transport's node: it sends encoded commands on the
// connection of keys and decodes their replies.
type Execer interface {
	Exec(ctx context.Context, keys []string, buf []byte, rps []Reply) error
}

// GetWithTTL is strategy.TTLGetter's GetWithTTL on n: GET and PTTL in one
// round trip.
func GetWithTTL(ctx context.Context, n Execer, key string) ([]byte, time.Duration, error) {
	keys := []string{key}
	buf, rps := TTLPipeline(keys, true)
	if err := n.Exec(ctx, keys, buf, rps); err != nil {
		return nil, 0, err
	}
	if rps[0].Err != nil {
		return nil, 0, failure.ReplyError("get", rps[0].Err)
	}
	if rps[0].Val == nil {
		return nil, 0, backend.ErrNotFound
	}
	return rps[0].Val, PTTL(&rps[1]), nil
}

// MGetWithTTL is strategy.TTLGetter's MGetWithTTL on n: MGET and a PTTL
// per key in one round trip.
func MGetWithTTL(ctx context.Context, n Execer, keys []string) ([][]byte, []time.Duration, error) {
	if len(keys) == 0 {
		return [][]byte{}, []time.Duration{}, nil
	}
	buf, rps := TTLPipeline(keys, false)
	if err := n.Exec(ctx, keys, buf, rps); err != nil {
		return nil, nil, err
	}
	if rps[0].Err != nil {
		return nil, nil, failure.ReplyError("mget", rps[0].Err)
	}
	ttls := make([]time.Duration, len(keys))
	for i := range keys {
		ttls[i] = PTTL(&rps[1+i])
	}
	return rps[0].Vals, ttls, nil
}
