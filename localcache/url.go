package localcache

import (
	"fmt"

	"github.com/redisx-go/kit/strategy"
)

// URLName implements strategy.URLLayer: near=<size> puts a Near with
// that MaxBytes in front of the URL's strategy (0: Near's default).
func (Near) URLName() string { return "near" }

// URLKeys implements strategy.URLStrategy.
func (Near) URLKeys() []string {
	return []string{"near", "near_ttl", "near_negative_ttl", "near_jitter", "near_prefix", "near_ping_interval", "near_tracking"}
}

// FromURL implements strategy.URLStrategy: near is MaxBytes (bytes, or a
// number with B, KiB, MiB, GiB or TiB: "64MiB"); near_ttl,
// near_negative_ttl and near_ping_interval (Go durations) are TTL,
// NegativeTTL and PingInterval; near_jitter (a fraction in [0, 1)) is
// Jitter; near_prefix, repeatable, is Prefixes; near_tracking (keys,
// broadcast or none) is Tracking.
func (Near) FromURL(p *strategy.URLParams) (strategy.Strategy, error) {
	var n Near
	for _, err := range []error{
		p.Size("near", &n.MaxBytes),
		p.Duration("near_ttl", &n.TTL),
		p.Duration("near_negative_ttl", &n.NegativeTTL),
		p.Fraction("near_jitter", &n.Jitter),
		p.Duration("near_ping_interval", &n.PingInterval),
	} {
		if err != nil {
			return nil, err
		}
	}
	prefixes, err := p.Take("near_prefix", true)
	if err != nil {
		return nil, err
	}
	n.Prefixes = prefixes
	if n.Tracking, err = trackingParam(p); err != nil {
		return nil, err
	}
	return n, nil
}

// trackingParam reads near_tracking: keys (the default), broadcast or
// none.
func trackingParam(p *strategy.URLParams) (Tracking, error) {
	given := p.Has("near_tracking")
	v, err := p.String("near_tracking")
	if err != nil || !given {
		return TrackKeys, err
	}
	for t := TrackKeys; t.valid(); t++ {
		if v == t.String() {
			return t, nil
		}
	}
	return TrackKeys, fmt.Errorf("%w: near_tracking=%q in URL, want keys, broadcast or none", strategy.ErrInvalidArgument, v)
}

// ToURL implements strategy.URLStrategy.
func (n Near) ToURL(p *strategy.URLParams) error {
	if err := p.AddSize("near", n.MaxBytes); err != nil {
		return fmt.Errorf("%w (Near.MaxBytes)", err)
	}
	p.AddDuration("near_ttl", n.TTL)
	p.AddDuration("near_negative_ttl", n.NegativeTTL)
	if err := p.AddFraction("near_jitter", n.Jitter); err != nil {
		return err
	}
	for _, pre := range n.Prefixes {
		p.Add("near_prefix", pre)
	}
	p.AddDuration("near_ping_interval", n.PingInterval)
	switch n.Tracking {
	case TrackKeys:
	case TrackBroadcast, TrackNone:
		p.Add("near_tracking", n.Tracking.String())
	default:
		return fmt.Errorf("%w: Near.Tracking %v cannot be written as a URL", strategy.ErrInvalidArgument, n.Tracking)
	}
	return nil
}

// URLInner implements strategy.URLLayer.
func (n Near) URLInner() strategy.Strategy { return n.Inner }

// WithURLInner implements strategy.URLLayer.
func (n Near) WithURLInner(inner strategy.Strategy) strategy.Strategy {
	n.Inner = inner
	return n
}

var _ strategy.URLLayer = Near{}
