package benchmarks

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/redisx-go/kit/backend"
	"github.com/redisx-go/kit/internal/sentinel"
	"github.com/redisx-go/kit/redisx"
)

// Measuring through Redis Sentinel (Servers.Sentinel): the harness asks
// the sentinels for the master once, at the start, and treats it as the
// run's standalone server — its own connection there counts the targets'
// connections, seeds the workloads and deletes the keys — while every
// target that can follows the sentinels itself: redisx (Options.Sentinel),
// rueidis (SentinelOption) and go-redis (its FailoverClient). redigo has
// no Sentinel support: its pool connects to the master named at start.

// resolveSentinel sets s.Standalone to the master s.Sentinel names, when
// it names sentinels and s no standalone address.
func resolveSentinel(ctx context.Context, s *Servers) error {
	if s.Sentinel == nil || s.Standalone != "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cfg := backend.Config{
		Username: s.Username, Password: s.Password, TLS: s.TLS, DB: s.DB,
		DialTimeout: 2 * time.Second, ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second,
		ClientName: monitorName,
		Sentinel: &backend.SentinelConfig{
			Master: s.Sentinel.Master, Addrs: s.Sentinel.Addrs,
			Username: s.Sentinel.Username, Password: s.Sentinel.Password,
		},
	}
	if err := sentinel.Validate(cfg.Sentinel); err != nil {
		return fmt.Errorf("benchmarks: sentinel: %w", err)
	}
	addr, err := sentinel.Discover(ctx, &cfg)
	if err != nil {
		return fmt.Errorf("benchmarks: sentinel: %w", err)
	}
	s.Standalone = addr
	return nil
}

// sentinelName is o as the -sentinel flag writes it,
// "MASTER@host:port,host:port"; "" for nil.
func sentinelName(o *redisx.SentinelOptions) string {
	if o == nil {
		return ""
	}
	return o.Master + "@" + strings.Join(o.Addrs, ",")
}
