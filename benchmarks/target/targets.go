package target

import (
	"cmp"
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/redisx-go/kit/benchmarks/workload"
	"github.com/redisx-go/kit/internal/mux"
	"github.com/redisx-go/kit/localcache"
	"github.com/redisx-go/kit/redisx"
	"github.com/redisx-go/kit/strategy"
)

// NearMaxBytes and NearTTL configure the near-cache targets of
// DefaultTargets.
const (
	NearMaxBytes = 64 << 20
	NearTTL      = time.Minute
)

// DefaultTargets are the configurations of the default plan: the redisx
// strategies multiplexed (the zero value, adaptive lanes), multiplexed-1
// and multiplexed-4 (fixed connections), pool-8/32/100, slotgrouped (cluster
// workloads only), the near-caches over Multiplexed in each tracking mode
// — near-multiplexed (per-key tracking, the default), near-broadcast and
// near-none — for the near workload and the user's own, and the peers
// rueidis, redigo-pool-100, go-redis and goredis-autopipeline.
func DefaultTargets() []Target {
	near := func(name string, inner strategy.Strategy, mode localcache.Tracking) Target {
		t := StrategyTarget(name, localcache.Near{Inner: inner, MaxBytes: NearMaxBytes, TTL: NearTTL, Tracking: mode})
		t.Only = []string{"near", workload.CustomName}
		return t
	}
	slot := StrategyTarget("slotgrouped", strategy.SlotGrouped{})
	slot.Topology = ClusterOnly
	return []Target{
		StrategyTarget("multiplexed", strategy.Multiplexed{}),
		StrategyTarget("multiplexed-1", strategy.Multiplexed{Conns: 1}),
		StrategyTarget("multiplexed-4", strategy.Multiplexed{Conns: 4}),
		StrategyTarget("pool-8", strategy.Pool{Size: 8}),
		StrategyTarget("pool-32", strategy.Pool{Size: 32}),
		StrategyTarget("pool-100", strategy.Pool{Size: 100}),
		slot,
		near("near-multiplexed", strategy.Multiplexed{}, localcache.TrackKeys),
		near("near-broadcast", strategy.Multiplexed{}, localcache.TrackBroadcast),
		near("near-none", strategy.Multiplexed{}, localcache.TrackNone),
		RueidisTarget(),
		RedigoPoolTarget(100),
		GoRedisTarget(),
		GoRedisAutoPipelineTarget(),
	}
}

// StrategyTarget measures redisx over s. Its URL and Go snippet are
// derived from s for this module's strategies (Multiplexed, Pool,
// SlotGrouped, localcache.Near); for another strategy, set them on the
// returned Target if you want them in recommendations.
func StrategyTarget(name string, s strategy.Strategy) Target {
	d := describe(s)
	return Target{
		Name:     name,
		Conns:    d.conns,
		URL:      d.url(),
		Go:       d.goExpr,
		Isolated: isNear(s),
		Stale:    isUntracked(s),
		Open: func(ctx context.Context, env Env) (workload.Client, error) {
			return openRedisx(ctx, env.Options(s))
		},
	}
}

// isNear reports whether s is a near-cache, whose tracking costs the
// server work for other clients' writes while it is open (see
// Target.Isolated).
func isNear(s strategy.Strategy) bool {
	_, ok := s.(localcache.Near)
	return ok
}

// isUntracked reports whether s is a near-cache without tracking, whose
// reads may be stale up to its TTL (see Target.Stale).
func isUntracked(s strategy.Strategy) bool {
	n, ok := s.(localcache.Near)
	return ok && n.Tracking == localcache.TrackNone
}

// URLTarget measures redisx configured by a redis:// URL, parsed with
// redisx.ParseURL: the URL's strategy parameters apply, and so do its
// timeouts.
//
// A URL with a host ("redis://10.0.0.5:6379?strategy=pool&size=16")
// measures that server — with its addr= seeds, the cluster they form —
// with the URL's credentials, TLS and database (Target.Servers), so that
// two servers can be compared in one run. A URL without a host
// ("redis://?strategy=pool&size=16", "redis:///2?near=64MiB") is a
// configuration only: it measures the run's servers, with the run's
// credentials, or the URL's when the run has none. A redis-sentinel URL
// ("redis-sentinel://10.0.0.5:26379/mymaster?read_from=replica")
// measures the master its sentinels name, through them, reading where
// its read_from says.
func URLTarget(name, rawURL string) (Target, error) {
	o, err := redisx.ParseURL(rawURL)
	if err != nil {
		return Target{}, fmt.Errorf("benchmarks: target %s: %w", name, err)
	}
	u, err := url.Parse(rawURL)
	if err != nil { // ParseURL accepted it: not reached
		return Target{}, fmt.Errorf("benchmarks: target %s: malformed URL", name)
	}
	d := describe(o.Strategy)
	t := Target{
		Name:     name,
		Conns:    d.conns,
		URL:      redactURL(rawURL),
		Go:       d.goExpr,
		Isolated: isNear(o.Strategy),
		Stale:    isUntracked(o.Strategy),
		Open: func(ctx context.Context, env Env) (workload.Client, error) {
			opts := env.Options(o.Strategy)
			if opts.Password == "" {
				opts.Username, opts.Password = o.Username, o.Password
			}
			if opts.DB == 0 {
				opts.DB = o.DB
			}
			if opts.TLS == nil {
				opts.TLS = o.TLS
			}
			opts.DialTimeout, opts.ReadTimeout, opts.WriteTimeout = o.DialTimeout, o.ReadTimeout, o.WriteTimeout
			opts.ReadFrom = o.ReadFrom
			if o.Sentinel != nil {
				opts.Sentinel = CloneSentinel(o.Sentinel)
			}
			return openRedisx(ctx, opts)
		},
	}
	if u.Host != "" {
		t.Servers = &Servers{Username: o.Username, Password: o.Password, TLS: o.TLS, DB: o.DB, Sentinel: CloneSentinel(o.Sentinel)}
		switch {
		case o.Sentinel != nil: // the master: asked of the sentinels when the run starts
		case len(o.Addrs) > 1:
			t.Servers.Cluster = o.Addrs
		default:
			t.Servers.Standalone = o.Addrs[0]
		}
	}
	return t, nil
}

// openRedisx opens a redisx client as a Client (never a typed nil).
func openRedisx(ctx context.Context, o redisx.Options) (workload.Client, error) {
	c, err := redisx.New(ctx, o)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// Options are the redisx options that connect s to env.
func (env Env) Options(s strategy.Strategy) redisx.Options {
	return redisx.Options{
		Addrs:      env.Addrs,
		Strategy:   s,
		Username:   env.Username,
		Password:   env.Password,
		DB:         env.DB,
		TLS:        env.TLS,
		ClientName: env.ClientName,
		Sentinel:   CloneSentinel(env.Sentinel),
	}
}

// redactURL drops the password from a URL.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	if q := u.Query(); q.Has("sentinel_password") {
		q.Set("sentinel_password", "xxxxx")
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}

// description is a strategy value as a URL query and a Go expression.
type description struct {
	query  string // "strategy=pool&size=32"; empty when no URL expresses it
	goExpr string // "strategy.Pool{Size: 32}"
	conns  int
}

// url is the URL of d on a placeholder host, replaced in recommendations.
func (d description) url() string {
	if d.query == "" {
		return ""
	}
	return "redis://127.0.0.1:6379?" + d.query
}

// describe returns s as a URL query (the parameters redisx.ParseURL
// reads) and a Go expression. Fields a URL cannot express leave the
// query empty; the Go expression falls back to %#v, which is valid Go.
func describe(s strategy.Strategy) description {
	switch v := s.(type) {
	case nil:
		return describe(strategy.Multiplexed{})
	case strategy.Multiplexed:
		// Adaptive (Conns zero): up to Lanes connections, which the
		// harness counts as the cell's own (one at one goroutine).
		conns := v.Conns
		if conns == 0 {
			conns = cmp.Or(v.Lanes, mux.DefaultLanes())
		}
		d := description{query: "strategy=multiplexed", goExpr: "strategy.Multiplexed{}", conns: conns}
		var fields []string
		if v.Conns > 0 {
			d.query += "&conns=" + strconv.Itoa(v.Conns)
			fields = append(fields, "Conns: "+strconv.Itoa(v.Conns))
		}
		if v.Lanes > 0 {
			d.query += "&lanes=" + strconv.Itoa(v.Lanes)
			fields = append(fields, "Lanes: "+strconv.Itoa(v.Lanes))
		}
		if v.MaxPending > 0 {
			d.query += "&max_pending=" + strconv.Itoa(v.MaxPending)
			fields = append(fields, "MaxPending: "+strconv.Itoa(v.MaxPending))
		}
		if v.Blocking != 0 {
			return description{goExpr: fmt.Sprintf("%#v", v), conns: d.conns}
		}
		d.goExpr = "strategy.Multiplexed{" + strings.Join(fields, ", ") + "}"
		return d
	case strategy.Pool:
		if v.HealthCheckPeriod != 0 || v.MinIdle != 0 || v.MaxIdleTime != 0 || v.MaxLifetime != 0 {
			return description{goExpr: fmt.Sprintf("%#v", v), conns: v.Size}
		}
		d := description{query: "strategy=pool", goExpr: "strategy.Pool{}", conns: v.Size}
		if v.Size > 0 {
			d.query += "&size=" + strconv.Itoa(v.Size)
			d.goExpr = "strategy.Pool{Size: " + strconv.Itoa(v.Size) + "}"
		}
		return d
	case strategy.SlotGrouped:
		inner := describe(v.Transport)
		if v.MaxBatch != 0 || inner.query == "" {
			return description{goExpr: fmt.Sprintf("%#v", v), conns: inner.conns}
		}
		d := description{conns: inner.conns}
		transport, params, _ := strings.Cut(inner.query, "&")
		d.query = "strategy=slotgrouped"
		if transport != "strategy=multiplexed" {
			d.query += "&transport=" + strings.TrimPrefix(transport, "strategy=")
		}
		if params != "" {
			d.query += "&" + params
		}
		d.goExpr = "strategy.SlotGrouped{}"
		if inner.goExpr != "strategy.Multiplexed{}" {
			d.goExpr = "strategy.SlotGrouped{Transport: " + inner.goExpr + "}"
		}
		return d
	case localcache.Near:
		inner := describe(v.Inner)
		if v.NegativeTTL != 0 || v.Jitter != 0 || v.Prefixes != nil || v.PingInterval != 0 || inner.query == "" {
			return description{goExpr: fmt.Sprintf("%#v", v), conns: inner.conns}
		}
		maxBytes, ttl := v.MaxBytes, v.TTL
		if maxBytes == 0 {
			maxBytes = NearMaxBytes
		}
		if ttl == 0 {
			ttl = NearTTL
		}
		query := inner.query + "&near=" + workload.FormatBytes(maxBytes) + "&near_ttl=" + workload.FormatDuration(ttl)
		tracking := ""
		switch v.Tracking {
		case localcache.TrackKeys:
		case localcache.TrackBroadcast, localcache.TrackNone:
			query += "&near_tracking=" + v.Tracking.String()
			tracking = ", Tracking: localcache.Track" + map[localcache.Tracking]string{localcache.TrackBroadcast: "Broadcast", localcache.TrackNone: "None"}[v.Tracking]
		default:
			return description{goExpr: fmt.Sprintf("%#v", v), conns: inner.conns}
		}
		return description{
			query:  query,
			goExpr: fmt.Sprintf("localcache.Near{Inner: %s, MaxBytes: %s, TTL: %s%s}", inner.goExpr, goBytes(maxBytes), goDuration(ttl), tracking),
			conns:  inner.conns,
		}
	default:
		return description{goExpr: fmt.Sprintf("%#v", v)}
	}
}

// goBytes writes n as a Go constant expression: "64 << 20".
func goBytes(n int64) string {
	for _, shift := range []int{30, 20, 10} {
		if n >= 1<<shift && n%(1<<shift) == 0 {
			return fmt.Sprintf("%d << %d", n>>shift, shift)
		}
	}
	return strconv.FormatInt(n, 10)
}

// goDuration writes d as a Go expression: "time.Minute", "30 * time.Second".
func goDuration(d time.Duration) string {
	for _, u := range []struct {
		d    time.Duration
		name string
	}{{time.Hour, "time.Hour"}, {time.Minute, "time.Minute"}, {time.Second, "time.Second"}, {time.Millisecond, "time.Millisecond"}} {
		if d%u.d == 0 {
			if d == u.d {
				return u.name
			}
			return fmt.Sprintf("%d * %s", d/u.d, u.name)
		}
	}
	return fmt.Sprintf("time.Duration(%d)", int64(d))
}
