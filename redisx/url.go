package redisx

import (
	"crypto/tls"
	"fmt"
	"math"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redisx-go/kit/localcache"
	"github.com/redisx-go/kit/strategy"
)

// ParseURL turns a URL into Options, so that a configuration file can pick
// the server, the credentials and the strategy without a code change:
//
//	redis://[[user]:password@]host[:port][/db][?param=value&…]
//	rediss://…  (TLS, verified against the host name)
//
// The port defaults to 6379 (a ':' with no port after it is an error), the
// database to 0. A '/', '?' or '#' in the user name or password must be
// percent-encoded. Parameters:
//
//	strategy             multiplexed (default), pool or slotgrouped
//	conns                Multiplexed.Conns
//	max_pending          Multiplexed.MaxPending
//	blocking             Multiplexed.Blocking
//	size                 Pool.Size
//	min_idle             Pool.MinIdle
//	max_idle_time        Pool.MaxIdleTime (a Go duration, "30m")
//	max_lifetime         Pool.MaxLifetime
//	health_check_period  Pool.HealthCheckPeriod
//	transport            SlotGrouped.Transport: multiplexed (default) or
//	                     pool, configured by that strategy's parameters
//	max_batch            SlotGrouped.MaxBatch
//	near                 a localcache.Near in front of the strategy, with
//	                     MaxBytes of this size: bytes, or a number with
//	                     B, KiB, MiB, GiB or TiB ("64MiB"); 0 is Near's
//	                     default (64 MiB)
//	near_ttl             Near.TTL
//	near_negative_ttl    Near.NegativeTTL
//	near_jitter          Near.Jitter (a fraction in [0, 1), "0.1")
//	near_prefix          Near.Prefixes (repeatable)
//	near_ping_interval   Near.PingInterval
//	dial_timeout, read_timeout, write_timeout   (Go durations)
//	client_name          CLIENT SETNAME
//	ttl_jitter           Options.TTLJitter (a fraction in [0, 1))
//	stale_while_revalidate  Options.StaleWhileRevalidate
//	load_timeout         Options.LoadTimeout
//	max_conn_age         Options.MaxConnAge
//	retry_max_attempts   Options.Retry.MaxAttempts (1: no retries)
//	retry_min_backoff    Options.Retry.MinBackoff
//	retry_max_backoff    Options.Retry.MaxBackoff
//	addr                 another seed node host:port (repeatable)
//
// A size in SI units (KB, MB, GB) is refused rather than guessed at: some
// read "MB" as 10⁶ bytes, redis.conf reads "mb" as 2²⁰.
//
// Unknown parameters, parameters given twice (other than addr and
// near_prefix), parameters of a strategy the URL does not name, and near_…
// parameters without near are errors. Errors never repeat the URL, which
// may hold a password. FormatURL is the inverse.
func ParseURL(raw string) (Options, error) {
	if isSentinelURL(raw) {
		return parseSentinelURL(raw) // before url.Parse, which reads no list of hosts
	}
	var o Options
	u, err := url.Parse(raw)
	if err != nil {
		// url.Parse's error quotes the whole URL, password included.
		return o, malformedURL(raw)
	}
	switch u.Scheme {
	case "redis":
	case "rediss":
		o.TLS = defaultTLS()
	default:
		return o, fmt.Errorf("%w: URL scheme %q, want redis or rediss", ErrInvalidArgument, u.Scheme)
	}
	if u.Opaque != "" {
		// "redis:host:port" or "redis:user:pw@host" (no "//") parses as an
		// opaque URL with no host nor user info: accepting it would
		// silently drop both and connect to 127.0.0.1:6379.
		return o, fmt.Errorf("%w: malformed redis URL, want redis://host", ErrInvalidArgument)
	}
	if unescapedUserInfo(raw) && strings.ContainsAny(u.Path+u.Fragment, "@") {
		// "redis://:pa#ss@host" would connect to 127.0.0.1 without a
		// password: what follows the '#' is dropped.
		return o, errUnescapedUserInfo
	}
	if u.User != nil {
		o.Username = u.User.Username()
		var set bool
		o.Password, set = u.User.Password()
		if !set {
			// redis://password@host is a common shorthand: a lone user
			// info is the password of the default user.
			o.Password, o.Username = o.Username, ""
		}
	}
	host, port := u.Hostname(), u.Port()
	if host == "" {
		host = "127.0.0.1"
	}
	if port == "" {
		if _, written := authorityPort(raw); written {
			// "redis://host:" is most often a template whose port
			// variable was empty: refused rather than read as 6379.
			return o, portError(raw, "")
		}
		port = "6379"
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return o, portError(raw, port)
	}
	if !hostRoundTrips(host, port) {
		// "redis://]" parses with host "]": refused here rather than at
		// the first dial, and so that FormatURL can write any Options
		// ParseURL returns.
		return o, fmt.Errorf("%w: malformed host in redis URL", ErrInvalidArgument)
	}
	o.Addrs = []string{net.JoinHostPort(host, port)}
	if p := strings.Trim(u.Path, "/"); p != "" {
		db, err := strconv.Atoi(p)
		if err != nil || db < 0 {
			if unescapedUserInfo(raw) {
				return o, errUnescapedUserInfo
			}
			return o, fmt.Errorf("%w: database %q in URL path is not a non-negative integer", ErrInvalidArgument, p)
		}
		o.DB = db
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		// u.Query() would drop the malformed pair and go on.
		return o, fmt.Errorf("%w: malformed query in redis URL", ErrInvalidArgument)
	}
	o.Strategy, err = parseParams(&o, q)
	if err != nil && unescapedUserInfo(raw) {
		err = errUnescapedUserInfo // the parameter it names may be part of the password
	}
	return o, err
}

// malformedURL says what is wrong with raw, which url.Parse refused,
// when it can tell without repeating a password: most often the port.
func malformedURL(raw string) error {
	if unescapedUserInfo(raw) {
		return errUnescapedUserInfo
	}
	if port, written := authorityPort(raw); written {
		if strings.Trim(port, "0123456789") != "" {
			return portError(raw, port)
		}
	}
	return fmt.Errorf("%w: malformed redis URL", ErrInvalidArgument)
}

// portError says that port, as written in raw, is not a port.
func portError(raw, port string) error {
	if unescapedUserInfo(raw) {
		return errUnescapedUserInfo // port may be part of the password
	}
	if port == "" {
		return fmt.Errorf("%w: URL port is empty after ':'; give a number 1..65535 or leave out the ':' for 6379", ErrInvalidArgument)
	}
	return fmt.Errorf("%w: URL port %q is not a number 1..65535", ErrInvalidArgument, port)
}

// errUnescapedUserInfo is the error of a URL with an '@' after its
// authority, which has none: quoting any part of it could quote a password.
var errUnescapedUserInfo = fmt.Errorf("%w: malformed redis URL: an '@' after the host (a '/', '?' or '#' in a user name or password must be percent-encoded)", ErrInvalidArgument)

// authority returns the authority of raw as net/url finds it (after
// "scheme://", up to the first '/', '?' or '#') and what follows it.
func authority(raw string) (auth, rest string, ok bool) {
	_, after, ok := strings.Cut(raw, "://")
	if !ok {
		return "", "", false
	}
	if i := strings.IndexAny(after, "/?#"); i >= 0 {
		return after[:i], after[i:], true
	}
	return after, "", true
}

// unescapedUserInfo reports whether an '@' follows the authority of raw,
// which has none: a user info holding an unescaped '/', '?' or '#' cut
// short, so that what parses as its port or path is part of the password
// and must not be quoted in an error.
func unescapedUserInfo(raw string) bool {
	auth, rest, ok := authority(raw)
	return ok && !strings.Contains(auth, "@") && strings.Contains(rest, "@")
}

// authorityPort returns the port written in raw's authority, after the
// host (a bracketed IPv6 literal included), and whether a ':' introduces
// one at all.
func authorityPort(raw string) (port string, written bool) {
	auth, _, ok := authority(raw)
	if !ok {
		return "", false
	}
	hostport := auth[strings.LastIndex(auth, "@")+1:]
	if strings.HasPrefix(hostport, "[") {
		end := strings.IndexByte(hostport, ']')
		if end < 0 {
			return "", false
		}
		return strings.CutPrefix(hostport[end+1:], ":")
	}
	i := strings.LastIndexByte(hostport, ':')
	if i < 0 {
		return "", false
	}
	return hostport[i+1:], true
}

// The strategies and transports a URL can name.
const (
	kindMultiplexed = "multiplexed"
	kindPool        = "pool"
	kindSlotGrouped = "slotgrouped"
)

// parseParams reads the query into o's plain fields and returns the
// strategy it names.
func parseParams(o *Options, q url.Values) (strategy.Strategy, error) {
	one := func(name string) string {
		if vs := q[name]; len(vs) > 0 {
			return vs[0]
		}
		return ""
	}
	kind := one("strategy")
	switch kind {
	case "":
		kind = kindMultiplexed
	case kindMultiplexed, kindPool, kindSlotGrouped:
	default:
		return nil, fmt.Errorf("%w: strategy=%q in URL, want multiplexed, pool or slotgrouped", ErrInvalidArgument, kind)
	}
	// base is the strategy that carries the commands: the URL's, or
	// SlotGrouped's transport.
	base := kind
	if kind == kindSlotGrouped {
		switch t := one("transport"); t {
		case "":
			base = kindMultiplexed
		case kindMultiplexed, kindPool:
			base = t
		default:
			return nil, fmt.Errorf("%w: transport=%q in URL, want multiplexed or pool", ErrInvalidArgument, t)
		}
	}
	_, near := q["near"]

	var (
		mux  strategy.Multiplexed
		pool strategy.Pool
		sg   strategy.SlotGrouped
		nc   localcache.Near
	)
	// Sorted, so that a URL with several faults always reports the same.
	names := make([]string, 0, len(q))
	for name := range q {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		vals := q[name]
		if len(vals) > 1 && name != "addr" && name != "near_prefix" {
			return nil, fmt.Errorf("%w: %s= given %d times in URL", ErrInvalidArgument, name, len(vals))
		}
		v := vals[0]
		// Which strategy the parameter belongs to, and so whether the
		// URL names it.
		switch name {
		case "conns", "max_pending", "blocking":
			if base != kindMultiplexed {
				return nil, misplaced(name, kindMultiplexed, kind, base)
			}
		case "size", "min_idle", "max_idle_time", "max_lifetime", "health_check_period":
			if base != kindPool {
				return nil, misplaced(name, kindPool, kind, base)
			}
		case "transport", "max_batch":
			if kind != kindSlotGrouped {
				return nil, fmt.Errorf("%w: %s= in URL applies to strategy=slotgrouped, not %s", ErrInvalidArgument, name, kind)
			}
		case "near_ttl", "near_negative_ttl", "near_jitter", "near_prefix", "near_ping_interval":
			if !near {
				return nil, fmt.Errorf("%w: %s= in URL needs near=<size>", ErrInvalidArgument, name)
			}
		}
		var err error
		switch name {
		case "strategy", "transport":
		case "addr":
			for _, a := range vals {
				if _, _, e := net.SplitHostPort(a); e != nil {
					return nil, fmt.Errorf("%w: addr=%q in URL is not host:port", ErrInvalidArgument, a)
				}
				o.Addrs = append(o.Addrs, a)
			}
		case "client_name":
			o.ClientName = v
		case "dial_timeout":
			o.DialTimeout, err = parseDuration(v)
		case "read_timeout":
			o.ReadTimeout, err = parseDuration(v)
		case "write_timeout":
			o.WriteTimeout, err = parseDuration(v)
		case "ttl_jitter":
			o.TTLJitter, err = parseFraction(v)
		case "stale_while_revalidate":
			o.StaleWhileRevalidate, err = parseDuration(v)
		case "load_timeout":
			o.LoadTimeout, err = parseDuration(v)
		case "max_conn_age":
			o.MaxConnAge, err = parseDuration(v)
		case "retry_max_attempts":
			o.Retry.MaxAttempts, err = parseCount(v)
		case "retry_min_backoff":
			o.Retry.MinBackoff, err = parseDuration(v)
		case "retry_max_backoff":
			o.Retry.MaxBackoff, err = parseDuration(v)
		case "conns":
			mux.Conns, err = parseCount(v)
		case "max_pending":
			mux.MaxPending, err = parseCount(v)
		case "blocking":
			mux.Blocking, err = parseCount(v)
		case "size":
			pool.Size, err = parseCount(v)
		case "min_idle":
			pool.MinIdle, err = parseCount(v)
		case "max_idle_time":
			pool.MaxIdleTime, err = parseDuration(v)
		case "max_lifetime":
			pool.MaxLifetime, err = parseDuration(v)
		case "health_check_period":
			pool.HealthCheckPeriod, err = parseDuration(v)
		case "max_batch":
			sg.MaxBatch, err = parseCount(v)
		case "near":
			nc.MaxBytes, err = parseSize(v)
		case "near_ttl":
			nc.TTL, err = parseDuration(v)
		case "near_negative_ttl":
			nc.NegativeTTL, err = parseDuration(v)
		case "near_jitter":
			nc.Jitter, err = parseFraction(v)
		case "near_prefix":
			nc.Prefixes = append(nc.Prefixes, vals...)
		case "near_ping_interval":
			nc.PingInterval, err = parseDuration(v)
		default:
			return nil, fmt.Errorf("%w: unknown URL parameter %q", ErrInvalidArgument, name)
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %s=%q in URL: %v", ErrInvalidArgument, name, v, err)
		}
	}

	var s strategy.Strategy = mux
	if base == kindPool {
		s = pool
	}
	if kind == kindSlotGrouped {
		sg.Transport = s
		s = sg
	}
	if near {
		nc.Inner = s
		s = nc
	}
	return s, nil
}

// misplaced is the error of a parameter of strategy want in a URL whose
// strategy is kind (carried by base).
func misplaced(name, want, kind, base string) error {
	if kind == kindSlotGrouped {
		return fmt.Errorf("%w: %s= in URL applies to transport=%s, not %s", ErrInvalidArgument, name, want, base)
	}
	return fmt.Errorf("%w: %s= in URL applies to strategy=%s, not %s", ErrInvalidArgument, name, want, kind)
}

func parseCount(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("not a non-negative integer")
	}
	return n, nil
}

func parseDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("not a duration such as 500ms or 3s")
	}
	return d, nil
}

func parseFraction(s string) (float64, error) {
	f, err := strconv.ParseFloat(s, 64)
	// !(f >= 0 && f < 1) also refuses NaN.
	if err != nil || !(f >= 0 && f < 1) {
		return 0, fmt.Errorf("not a fraction in [0, 1) such as 0.1")
	}
	return f, nil
}

// sizeUnit is a unit of a near= size.
type sizeUnit struct {
	name string
	n    int64
}

// sizeUnits are the units of a near= size, largest first (FormatURL
// picks the largest that divides the size).
func sizeUnits() []sizeUnit {
	return []sizeUnit{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"B", 1}}
}

func parseSize(s string) (int64, error) {
	digits := strings.TrimRightFunc(s, func(r rune) bool { return r < '0' || r > '9' })
	unit := s[len(digits):]
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || n < 0 || strings.HasPrefix(digits, "+") {
		return 0, fmt.Errorf("not a size such as 64MiB, 512KiB or 1048576")
	}
	if unit == "" {
		return n, nil
	}
	for _, u := range sizeUnits() {
		if strings.EqualFold(unit, u.name) {
			if n > math.MaxInt64/u.n {
				return 0, fmt.Errorf("size overflows int64")
			}
			return n * u.n, nil
		}
	}
	return 0, fmt.Errorf("unit %q, want B, KiB, MiB, GiB or TiB (SI units such as MB are ambiguous)", unit)
}

func formatSize(n int64) string {
	if n == 0 {
		return "0"
	}
	for _, u := range sizeUnits() {
		if n%u.n == 0 && u.n > 1 {
			return strconv.FormatInt(n/u.n, 10) + u.name
		}
	}
	return strconv.FormatInt(n, 10)
}

func defaultTLS() *tls.Config { return &tls.Config{MinVersion: tls.VersionTLS12} }
