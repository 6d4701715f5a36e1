package redisx

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/url"
	"reflect"
	"strconv"

	"github.com/redisx-go/kit/internal/param"
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
	if o.Sentinel != nil {
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

	q := strategy.WriteURLParams()
	if err := writeStrategy(q, o.Strategy); err != nil {
		return "", err
	}
	if o.ClientName != "" {
		q.Add("client_name", o.ClientName)
	}
	q.AddDuration("dial_timeout", o.DialTimeout)
	q.AddDuration("read_timeout", o.ReadTimeout)
	q.AddDuration("write_timeout", o.WriteTimeout)
	if err := q.AddFraction("ttl_jitter", o.TTLJitter); err != nil {
		return "", err
	}
	q.AddDuration("stale_while_revalidate", o.StaleWhileRevalidate)
	q.AddDuration("load_timeout", o.LoadTimeout)
	q.AddDuration("max_conn_age", o.MaxConnAge)
	if err := q.AddCount("retry_max_attempts", o.Retry.MaxAttempts); err != nil {
		return "", err
	}
	q.AddDuration("retry_min_backoff", o.Retry.MinBackoff)
	q.AddDuration("retry_max_backoff", o.Retry.MaxBackoff)
	if err := q.AddCount("pubsub_buffer", o.PubSubBuffer); err != nil {
		return "", err
	}
	switch o.ReadFrom {
	case ReadPrimary:
	case ReadReplicaPreferred, ReadNearest:
		q.Add("read_from", o.ReadFrom.String())
	default:
		return "", fmt.Errorf("%w: %v is not ReadPrimary, ReadReplicaPreferred nor ReadNearest", ErrInvalidArgument, o.ReadFrom)
	}
	for _, a := range addrs[1:] {
		if _, _, err := net.SplitHostPort(a); err != nil {
			return "", fmt.Errorf("%w: address %q is not host:port", ErrInvalidArgument, a)
		}
		q.Add("addr", a)
	}
	u.RawQuery = q.Encode()
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

// writeStrategy writes s: strategy= first, then the strategy's own
// parameters, then those of the layers in front of it (near=…). A nil
// Strategy is written as strategy=multiplexed.
func writeStrategy(q *strategy.URLParams, s strategy.Strategy) error {
	var layers []strategy.URLLayer
	for {
		if s == nil {
			s = urlStrategies()[0]
		}
		if err := param.NilValue(s); err != nil {
			return err
		}
		l, ok := param.Kind(s, urlLayers())
		if !ok {
			break
		}
		if len(layers) > 0 {
			return fmt.Errorf("%w: %s inside %s", ErrInvalidArgument, l.URLName(), layers[0].URLName())
		}
		layers = append(layers, l)
		s = l.URLInner()
	}
	u, ok := param.Kind(s, urlStrategies())
	if !ok {
		return fmt.Errorf("%w: strategy %T cannot be written as a URL", ErrInvalidArgument, s)
	}
	q.Add("strategy", u.URLName())
	if err := u.ToURL(q); err != nil {
		return err
	}
	for _, l := range layers {
		if err := l.ToURL(q); err != nil {
			return err
		}
	}
	return nil
}
