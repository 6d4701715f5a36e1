package redisx

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/redisx-go/kit/localcache"
	"github.com/redisx-go/kit/strategy"
)

// FormatURL is the inverse of ParseURL: it returns a URL that ParseURL
// turns back into Options equivalent to o, password included when o has
// one (use RedactedURL for a URL to show or log).
//
// Every strategy of this module that a URL can name is expressible:
// strategy.Multiplexed, strategy.Pool, strategy.SlotGrouped over either,
// and localcache.Near over any of the three (values or non-nil pointers),
// every field of each. FormatURL drops nothing silently: what a URL cannot
// carry is refused with an error wrapping ErrInvalidArgument — a
// goredis.Strategy or any other Strategy, a TLS config other than
// ParseURL's own (rediss: no field set but MinVersion, TLS 1.2 or zero),
// a MeterProvider or TracerProvider, a Credentials function (which
// RedactedURL drops with the other credentials), a Near inside a Near, and values
// ParseURL would refuse (a negative count, size or DB, a jitter outside
// [0, 1), an address that is not host:port, a first address that cannot
// be a URL's host). The equivalences it relies on: a nil Strategy is
// written as strategy=multiplexed, a nil SlotGrouped.Transport or
// Near.Inner as multiplexed, an empty Near.Prefixes as none, empty Addrs
// as 127.0.0.1:6379, TLS MinVersion zero as TLS 1.2 (Go's client default).
//
// Parameters come in a fixed order (strategy first), so that equal
// Options give equal URLs.
func FormatURL(o Options) (string, error) {
	return formatURL(o, true)
}

// RedactedURL is FormatURL without the user info: no user name and no
// password, nor Credentials, so that a report or a log line can show the
// configuration. ParseURL reads it back as o without credentials.
func RedactedURL(o Options) (string, error) {
	return formatURL(o, false)
}

func formatURL(o Options, credentials bool) (string, error) {
	if o.Sentinel != nil || o.ReadFrom != ReadPrimary {
		return formatSentinelURL(o, credentials)
	}
	u := url.URL{Scheme: "redis"}
	if o.TLS != nil {
		if !isDefaultTLS(o.TLS) {
			return "", fmt.Errorf("%w: a URL holds no TLS settings but rediss's (MinVersion TLS 1.2)", ErrInvalidArgument)
		}
		u.Scheme = "rediss"
	}
	if o.MeterProvider != nil || o.TracerProvider != nil {
		return "", fmt.Errorf("%w: a URL cannot hold a MeterProvider or TracerProvider", ErrInvalidArgument)
	}
	if credentials && o.Credentials != nil {
		// RedactedURL drops it with the rest of the credentials.
		return "", fmt.Errorf("%w: a URL cannot hold a Credentials function", ErrInvalidArgument)
	}
	if credentials && (o.Username != "" || o.Password != "") {
		// Always "user:password@": a lone "password@" is the shorthand
		// for the password, and "user:@" keeps a user with no password.
		u.User = url.UserPassword(o.Username, o.Password)
	}
	addrs := o.Addrs
	if len(addrs) == 0 {
		addrs = []string{"127.0.0.1:6379"}
	}
	host, port, err := net.SplitHostPort(addrs[0])
	if n, e := strconv.Atoi(port); err != nil || e != nil || n < 1 || n > 65535 || host == "" {
		return "", fmt.Errorf("%w: address %q is not host:port with a port in 1..65535", ErrInvalidArgument, addrs[0])
	}
	if !hostRoundTrips(host, port) {
		return "", fmt.Errorf("%w: address %q cannot be the host of a URL", ErrInvalidArgument, addrs[0])
	}
	u.Host = net.JoinHostPort(host, port)
	if o.DB < 0 {
		return "", fmt.Errorf("%w: DB %d is negative", ErrInvalidArgument, o.DB)
	}
	if o.DB > 0 {
		u.Path = "/" + strconv.Itoa(o.DB)
	}

	var q query
	if err := q.strategy(o.Strategy); err != nil {
		return "", err
	}
	q.add("client_name", o.ClientName, o.ClientName != "")
	q.duration("dial_timeout", o.DialTimeout)
	q.duration("read_timeout", o.ReadTimeout)
	q.duration("write_timeout", o.WriteTimeout)
	if err := q.fraction("ttl_jitter", o.TTLJitter); err != nil {
		return "", err
	}
	q.duration("stale_while_revalidate", o.StaleWhileRevalidate)
	q.duration("load_timeout", o.LoadTimeout)
	q.duration("max_conn_age", o.MaxConnAge)
	if err := q.count("retry_max_attempts", o.Retry.MaxAttempts); err != nil {
		return "", err
	}
	q.duration("retry_min_backoff", o.Retry.MinBackoff)
	q.duration("retry_max_backoff", o.Retry.MaxBackoff)
	for _, a := range addrs[1:] {
		if _, _, err := net.SplitHostPort(a); err != nil {
			return "", fmt.Errorf("%w: address %q is not host:port", ErrInvalidArgument, a)
		}
		q.add("addr", a, true)
	}
	u.RawQuery = q.b.String()
	return u.String(), nil
}

// hostRoundTrips reports whether host and port make an address that reads
// back as themselves, both as host:port and as the host of a URL: url.Parse
// accepts hosts such as "]" that are no address, and refuses or rewrites
// some bytes a net.Dial address may hold.
func hostRoundTrips(host, port string) bool {
	hp := net.JoinHostPort(host, port)
	if h, p, err := net.SplitHostPort(hp); err != nil || h != host || p != port {
		return false
	}
	back, err := url.Parse((&url.URL{Scheme: "redis", Host: hp}).String())
	return err == nil && back.Hostname() == host && back.Port() == port
}

// isDefaultTLS reports whether c is ParseURL's rediss config: no exported
// field set but MinVersion, which is TLS 1.2 or zero (Go's client default
// is TLS 1.2 too). Reflection, so that a field added to tls.Config in a
// later Go release is refused rather than dropped.
func isDefaultTLS(c *tls.Config) bool {
	if c.MinVersion != 0 && c.MinVersion != tls.VersionTLS12 {
		return false
	}
	v := reflect.ValueOf(c).Elem()
	for i := range v.NumField() {
		f := v.Type().Field(i)
		if f.IsExported() && f.Name != "MinVersion" && !v.Field(i).IsZero() {
			return false
		}
	}
	return true
}

// query builds a URL query in a fixed order.
type query struct{ b strings.Builder }

func (q *query) add(name, value string, ok bool) {
	if !ok {
		return
	}
	if q.b.Len() > 0 {
		q.b.WriteByte('&')
	}
	q.b.WriteString(name)
	q.b.WriteByte('=')
	// ":" and "/" may stand unescaped in a query (RFC 3986, 3.4), and
	// addr=b:7001 reads better than addr=b%3A7001.
	v := url.QueryEscape(value)
	q.b.WriteString(strings.ReplaceAll(strings.ReplaceAll(v, "%3A", ":"), "%2F", "/"))
}

func (q *query) duration(name string, d time.Duration) {
	q.add(name, d.String(), d != 0)
}

func (q *query) count(name string, n int) error {
	if n < 0 {
		return fmt.Errorf("%w: %s %d is negative", ErrInvalidArgument, name, n)
	}
	q.add(name, strconv.Itoa(n), n != 0)
	return nil
}

func (q *query) fraction(name string, f float64) error {
	if !(f >= 0 && f < 1) {
		return fmt.Errorf("%w: %s %v outside [0, 1)", ErrInvalidArgument, name, f)
	}
	q.add(name, strconv.FormatFloat(f, 'g', -1, 64), f != 0)
	return nil
}

// strategy writes s's parameters: strategy (and transport) first, then
// the carrying strategy's, then SlotGrouped's, then the near cache's.
func (q *query) strategy(s strategy.Strategy) error {
	var nc *localcache.Near
	switch v := deref(s).(type) {
	case localcache.Near:
		switch deref(v.Inner).(type) {
		case localcache.Near:
			return fmt.Errorf("%w: Near inside Near", ErrInvalidArgument)
		}
		nc, s = &v, v.Inner
	case errNilPointer:
		return v.err()
	}
	var sg *strategy.SlotGrouped
	switch v := deref(s).(type) {
	case strategy.SlotGrouped:
		sg, s = &v, v.Transport
		q.add("strategy", kindSlotGrouped, true)
	}
	var err error
	switch v := deref(s).(type) {
	case nil:
		err = q.multiplexed(strategy.Multiplexed{}, sg != nil)
	case strategy.Multiplexed:
		err = q.multiplexed(v, sg != nil)
	case strategy.Pool:
		err = q.pool(v, sg != nil)
	case errNilPointer:
		return v.err()
	default:
		if sg != nil {
			return fmt.Errorf("%w: SlotGrouped.Transport %T cannot be written as a URL", ErrInvalidArgument, v)
		}
		return fmt.Errorf("%w: strategy %T cannot be written as a URL", ErrInvalidArgument, v)
	}
	if err != nil {
		return err
	}
	if sg != nil {
		if err := q.count("max_batch", sg.MaxBatch); err != nil {
			return err
		}
	}
	if nc != nil {
		if nc.MaxBytes < 0 {
			return fmt.Errorf("%w: Near.MaxBytes %d is negative", ErrInvalidArgument, nc.MaxBytes)
		}
		q.add("near", formatSize(nc.MaxBytes), true)
		q.duration("near_ttl", nc.TTL)
		q.duration("near_negative_ttl", nc.NegativeTTL)
		if err := q.fraction("near_jitter", nc.Jitter); err != nil {
			return err
		}
		for _, p := range nc.Prefixes {
			q.add("near_prefix", p, true)
		}
		q.duration("near_ping_interval", nc.PingInterval)
	}
	return nil
}

// kind names the strategy, or the transport under SlotGrouped or Near.
func (q *query) kind(name string, transport bool) {
	if transport {
		q.add("transport", name, true)
	} else {
		q.add("strategy", name, true)
	}
}

func (q *query) multiplexed(m strategy.Multiplexed, transport bool) error {
	q.kind(kindMultiplexed, transport)
	if err := q.count("conns", m.Conns); err != nil {
		return err
	}
	if err := q.count("max_pending", m.MaxPending); err != nil {
		return err
	}
	return q.count("blocking", m.Blocking)
}

func (q *query) pool(p strategy.Pool, transport bool) error {
	q.kind(kindPool, transport)
	if err := q.count("size", p.Size); err != nil {
		return err
	}
	if err := q.count("min_idle", p.MinIdle); err != nil {
		return err
	}
	q.duration("max_idle_time", p.MaxIdleTime)
	q.duration("max_lifetime", p.MaxLifetime)
	q.duration("health_check_period", p.HealthCheckPeriod)
	return nil
}

// errNilPointer stands for a nil pointer to a strategy of this module.
type errNilPointer struct{ name string }

func (e errNilPointer) err() error {
	return fmt.Errorf("%w: strategy is a nil %s", ErrInvalidArgument, e.name)
}

// deref turns a pointer to one of the strategies a URL can name into its
// value (errNilPointer when nil), and returns anything else as it is.
func deref(s strategy.Strategy) any {
	switch p := s.(type) {
	case *strategy.Multiplexed:
		return value(p, "*strategy.Multiplexed")
	case *strategy.Pool:
		return value(p, "*strategy.Pool")
	case *strategy.SlotGrouped:
		return value(p, "*strategy.SlotGrouped")
	case *localcache.Near:
		return value(p, "*localcache.Near")
	}
	return s
}

func value[T any](p *T, name string) any {
	if p == nil {
		return errNilPointer{name}
	}
	return *p
}
