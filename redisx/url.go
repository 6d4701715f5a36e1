package redisx

import (
	"crypto/tls"
	"fmt"
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
// database to 0. A '/', '?', '#' or '@' in the user name or password must
// be percent-encoded (%2F, %3F, %23, %40); so should an '@' in a
// parameter: an error about a URL with an '@' after its host quotes none
// of it, which may be a password cut short. Parameters (each strategy
// reads its own, see strategy.URLStrategy; the facade reads strategy=,
// addr and the Options fields):
//
//	strategy             multiplexed (default), pool or slotgrouped
//	conns                Multiplexed.Conns
//	lanes                Multiplexed.Lanes
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
//	near_tracking        Near.Tracking: keys (default), broadcast or none
//	dial_timeout, read_timeout, write_timeout   (Go durations)
//	client_name          CLIENT SETNAME
//	ttl_jitter           Options.TTLJitter (a fraction in [0, 1))
//	stale_while_revalidate  Options.StaleWhileRevalidate
//	load_timeout         Options.LoadTimeout
//	max_conn_age         Options.MaxConnAge
//	retry_max_attempts   Options.Retry.MaxAttempts (1: no retries)
//	retry_min_backoff    Options.Retry.MinBackoff
//	retry_max_backoff    Options.Retry.MaxBackoff
//	pubsub_buffer        Options.PubSubBuffer
//	read_from            Options.ReadFrom: primary (default), replica or
//	                     nearest (on a Redis Cluster; see also ParseURL's
//	                     redis-sentinel form)
//	addr                 another seed node host:port (repeatable)
//
// A size in SI units (KB, MB, GB) is refused rather than guessed at: some
// read "MB" as 10⁶ bytes, redis.conf reads "mb" as 2²⁰.
//
// Unknown parameters, parameters given twice (other than addr and
// near_prefix), parameters of a strategy the URL does not name, and near_…
// parameters without near are errors, and so are values New would refuse
// before it dials (conns with lanes, a negative dial_timeout, read_from
// with slotgrouped or near…): the rules of Options and of the strategies'
// Validate. Errors never repeat the URL, which may hold a password.
// FormatURL is the inverse.
func ParseURL(raw string) (Options, error) {
	inPath, inQuery := atAfterAuthority(raw)
	if inPath {
		// "redis://:p@q#r@host" would read password "p" on host q,
		// "redis://:p@q/r@host" fail on database "r@host".
		return Options{}, errUserInfoCutShort
	}
	parse := parseRedisURL
	if isSentinelURL(raw) {
		parse = parseSentinelURL // before url.Parse, which reads no list of hosts
	}
	o, err := parse(raw)
	if err == nil {
		err = validate(&o)
	}
	if err != nil {
		if inQuery {
			// What the error names (a parameter, the port, a sentinel
			// host) may be part of a password cut short by a '?'.
			err = errUserInfoCutShort
		}
		return Options{}, err
	}
	return o, nil
}

// validate returns the error New would return for o before it dials:
// o's own fields (Options.config), and its strategy's with them
// (strategy.Validator).
func validate(o *Options) error {
	cfg, err := o.config()
	if err != nil {
		return err
	}
	return strategy.Validate(o.Strategy, cfg)
}

// parseRedisURL is ParseURL for the redis and rediss schemes.
func parseRedisURL(raw string) (Options, error) {
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
			return o, portError("")
		}
		port = "6379"
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return o, portError(port)
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
	return o, err
}

// malformedURL says what is wrong with raw, which url.Parse refused,
// when it can tell without repeating a password: most often the port.
func malformedURL(raw string) error {
	if port, written := authorityPort(raw); written {
		if strings.Trim(port, "0123456789") != "" {
			return portError(port)
		}
	}
	return fmt.Errorf("%w: malformed redis URL", ErrInvalidArgument)
}

// portError says that port, as written in raw, is not a port.
func portError(port string) error {
	if port == "" {
		return fmt.Errorf("%w: URL port is empty after ':'; give a number 1..65535 or leave out the ':' for 6379", ErrInvalidArgument)
	}
	return fmt.Errorf("%w: URL port %q is not a number 1..65535", ErrInvalidArgument, port)
}

// errUserInfoCutShort is the error of a URL with an '@' after its
// authority: most often the end of a user info that an unescaped '/', '?'
// or '#' cut short, so that its rest reads as a port, a database, a
// parameter or a fragment. Quoting any part of the URL could quote a
// password.
var errUserInfoCutShort = fmt.Errorf("%w: malformed redis URL: an '@' after the host "+
	"(a '/', '?', '#' or '@' in a user name or password, and an '@' in the path or a parameter, must be percent-encoded)", ErrInvalidArgument)

// authority returns the authority of raw as net/url finds it (after
// "scheme://", up to the first '/', '?' or '#') and what follows it.
func authority(raw string) (auth, rest string, ok bool) {
	i := strings.IndexByte(raw, ':')
	if i < 0 || !strings.HasPrefix(raw[i:], "://") {
		return "", "", false // "redis:/://x": a "://" in the path
	}
	after := raw[i+len("://"):]
	if i := strings.IndexAny(after, "/?#"); i >= 0 {
		return after[:i], after[i:], true
	}
	return after, "", true
}

// atAfterAuthority reports whether an '@' follows the authority of raw,
// in its path or fragment (where none may be: a database, a master's
// name) or in its query (where one may be, in a client name or a key
// prefix).
func atAfterAuthority(raw string) (inPath, inQuery bool) {
	_, rest, ok := authority(raw)
	if !ok {
		// No authority ("redis:/pw@host"): all of it is path and query.
		_, rest, _ = strings.Cut(raw, ":")
	}
	rest, fragment, _ := strings.Cut(rest, "#")
	path, query, _ := strings.Cut(rest, "?")
	return strings.Contains(path+fragment, "@"), strings.Contains(query, "@")
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

// urlStrategies are the strategies a URL can name with strategy=, the
// first the default, and urlLayers those it can put in front of them.
func urlStrategies() []strategy.URLStrategy {
	return []strategy.URLStrategy{strategy.Multiplexed{}, strategy.Pool{}, strategy.SlotGrouped{}}
}

func urlLayers() []strategy.URLLayer { return []strategy.URLLayer{localcache.Near{}} }

// parseParams reads the query into o's plain fields and returns the
// strategy it names, whose own parameters the strategy reads itself
// (strategy.URLStrategy).
func parseParams(o *Options, q url.Values) (strategy.Strategy, error) {
	p := strategy.ReadURLParams(q)
	name, err := p.String("strategy")
	if err != nil {
		return nil, err
	}
	strategies := urlStrategies()
	if name == "" {
		name = strategies[0].URLName()
	}
	i := slices.IndexFunc(strategies, func(s strategy.URLStrategy) bool { return s.URLName() == name })
	if i < 0 {
		var names []string
		for _, s := range strategies {
			names = append(names, s.URLName())
		}
		return nil, fmt.Errorf("%w: strategy=%q in URL, want %s", ErrInvalidArgument, name, strings.Join(names, ", "))
	}
	addrs, err := p.Take("addr", true)
	if err != nil {
		return nil, err
	}
	for _, a := range addrs {
		if _, _, e := net.SplitHostPort(a); e != nil {
			return nil, fmt.Errorf("%w: addr=%q in URL is not host:port", ErrInvalidArgument, a)
		}
		o.Addrs = append(o.Addrs, a)
	}
	if o.ClientName, err = p.String("client_name"); err != nil {
		return nil, err
	}
	for _, f := range []struct {
		name string
		dst  *time.Duration
	}{
		{"dial_timeout", &o.DialTimeout}, {"read_timeout", &o.ReadTimeout}, {"write_timeout", &o.WriteTimeout},
		{"stale_while_revalidate", &o.StaleWhileRevalidate}, {"load_timeout", &o.LoadTimeout},
		{"max_conn_age", &o.MaxConnAge}, {"retry_min_backoff", &o.Retry.MinBackoff}, {"retry_max_backoff", &o.Retry.MaxBackoff},
	} {
		if err := p.Duration(f.name, f.dst); err != nil {
			return nil, err
		}
	}
	if err := p.Fraction("ttl_jitter", &o.TTLJitter); err != nil {
		return nil, err
	}
	if err := p.Count("retry_max_attempts", &o.Retry.MaxAttempts); err != nil {
		return nil, err
	}
	if err := p.Count("pubsub_buffer", &o.PubSubBuffer); err != nil {
		return nil, err
	}
	if o.ReadFrom, err = parseReadFrom(p); err != nil {
		return nil, err
	}
	s, err := strategies[i].FromURL(p)
	if err != nil {
		return nil, err
	}
	for _, l := range urlLayers() {
		if !p.Has(l.URLName()) {
			continue
		}
		ls, err := l.FromURL(p)
		if err != nil {
			return nil, err
		}
		s = ls.(strategy.URLLayer).WithURLInner(s)
	}
	if left := p.Left(); len(left) > 0 {
		return nil, misplaced(left[0], name)
	}
	return s, nil
}

// misplaced is the error of a parameter that the URL's strategy (name)
// and layers did not read.
func misplaced(param, name string) error {
	for _, s := range urlStrategies() {
		if slices.Contains(s.URLKeys(), param) {
			return fmt.Errorf("%w: %s= in URL applies to strategy=%s, not %s", ErrInvalidArgument, param, s.URLName(), name)
		}
	}
	for _, l := range urlLayers() {
		if slices.Contains(l.URLKeys(), param) {
			return fmt.Errorf("%w: %s= in URL needs %s=<size>", ErrInvalidArgument, param, l.URLName())
		}
	}
	return fmt.Errorf("%w: unknown URL parameter %q", ErrInvalidArgument, param)
}

func defaultTLS() *tls.Config { return &tls.Config{MinVersion: tls.VersionTLS12} }
