package localcache

import (
	"fmt"

	"github.com/redisx-go/kit/internal/sentinel"
	"github.com/redisx-go/kit/strategy"
)

// followerOf returns, when cfg has Sentinel, the backend along b's Unwrap
// chain that reports the master it follows, or an error if none does (a
// strategy that does not follow the sentinels itself).
func followerOf(b strategy.Backend, cfg strategy.Config) (sentinel.Follower, error) {
	if cfg.Sentinel == nil {
		return nil, nil
	}
	for b != nil {
		if f, ok := b.(sentinel.Follower); ok {
			return f, nil
		}
		u, ok := b.(strategy.Unwrapper)
		if !ok {
			break
		}
		b = u.Unwrap()
	}
	return nil, fmt.Errorf("%w: Near with Sentinel over %T, which does not report the master it follows: use strategy.Multiplexed or strategy.Pool", strategy.ErrInvalidArgument, b)
}
