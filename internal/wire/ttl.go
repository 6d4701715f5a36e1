package wire

import (
	"time"

	"github.com/redisx-go/kit/backend"
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
