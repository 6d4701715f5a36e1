package localcache

import (
	"fmt"

	"github.com/redisx-go/kit/strategy"
)

// followerOf returns, when cfg has Sentinel, the backend along b's Unwrap
// chain that reports the master it follows, or an error if none does (a
// strategy that does not follow the sentinels itself).
func followerOf(b strategy.Backend, cfg strategy.Config) (strategy.MasterFollower, error) {
	if cfg.Sentinel == nil {
		return nil, nil
	}
	if f, ok := strategy.Find[strategy.MasterFollower](b); ok {
		return f, nil
	}
	return nil, fmt.Errorf("%w: Near with Sentinel over %T, which does not report the master it follows: use strategy.Multiplexed or strategy.Pool", strategy.ErrInvalidArgument, b)
}
