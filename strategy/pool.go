package strategy

import (
	"context"
	"time"

	"github.com/redisx-go/kit/internal/pool"
)

// Pool lends each call a connection of its own from a jackc/puddle pool,
// the model of Jedis: acquire within the caller's context, a blocking
// write and read on the caller's goroutine, release. A connection that saw
// a network or protocol error, or whose call was cancelled mid-flight, is
// destroyed rather than returned, so no late reply can reach the next
// borrower. A request the server refuses as it reads it, then closes on,
// returns the refusal, also when its write meets the reset first. A
// blocking command (BLPOP…) may wait its own block time beyond
// Config.ReadTimeout. Close closes borrowed connections too: the calls on
// them fail at once with ErrClosed.
//
// The zero value is a pool of 10 connections per GOMAXPROCS per node,
// opened on demand, each checked when idle and closed after 30 minutes
// idle.
type Pool struct {
	// Size is the most connections per node. Zero: 10 × GOMAXPROCS (the
	// go-redis default). Callers beyond it wait within their context.
	Size int
	// MinIdle connections per node are kept open and ready. Zero: none.
	MinIdle int
	// MaxIdleTime closes a connection idle for longer. Zero: 30 minutes;
	// negative: never.
	MaxIdleTime time.Duration
	// MaxLifetime closes a connection this long after it was opened, at
	// its next release or health check — never during a call. Zero:
	// Config.MaxConnAge (redisx.Options.MaxConnAge); when both are set,
	// the shorter applies. Zero for both: never.
	MaxLifetime time.Duration
	// HealthCheckPeriod is how often idle connections are pinged, expired
	// ones closed and MinIdle restored. Zero: 1 minute.
	HealthCheckPeriod time.Duration
}

// Open implements Strategy. It opens one connection (or MinIdle) to the
// first seed that answers before it returns; on a cluster, the other
// nodes' connections are opened on first use.
func (p Pool) Open(ctx context.Context, cfg Config) (Backend, error) {
	if err := p.Validate(cfg); err != nil {
		return nil, err
	}
	return open(ctx, cfg, pool.Options(p))
}

// Validate implements Validator: Size, MinIdle, MaxLifetime and
// HealthCheckPeriod not negative, MinIdle at most Size (its default
// included).
func (p Pool) Validate(Config) error {
	_, err := pool.Options(p).WithDefaults()
	return err
}

// URLName implements URLStrategy: strategy=pool.
func (Pool) URLName() string { return "pool" }

// URLKeys implements URLStrategy.
func (Pool) URLKeys() []string {
	return []string{"size", "min_idle", "max_idle_time", "max_lifetime", "health_check_period"}
}

// FromURL implements URLStrategy: size and min_idle are Size and MinIdle;
// max_idle_time, max_lifetime and health_check_period (Go durations,
// "30m") MaxIdleTime, MaxLifetime and HealthCheckPeriod.
func (Pool) FromURL(p *URLParams) (Strategy, error) {
	var o Pool
	for _, err := range []error{
		p.Count("size", &o.Size),
		p.Count("min_idle", &o.MinIdle),
		p.Duration("max_idle_time", &o.MaxIdleTime),
		p.Duration("max_lifetime", &o.MaxLifetime),
		p.Duration("health_check_period", &o.HealthCheckPeriod),
	} {
		if err != nil {
			return nil, err
		}
	}
	return o, nil
}

// ToURL implements URLStrategy.
func (o Pool) ToURL(p *URLParams) error {
	if err := p.AddCount("size", o.Size); err != nil {
		return err
	}
	if err := p.AddCount("min_idle", o.MinIdle); err != nil {
		return err
	}
	p.AddDuration("max_idle_time", o.MaxIdleTime)
	p.AddDuration("max_lifetime", o.MaxLifetime)
	p.AddDuration("health_check_period", o.HealthCheckPeriod)
	return nil
}
