package redisx

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/redisx-go/kit/strategy"
)

// ParseURL turns a URL into Options, so that a configuration file can pick
// the server, the credentials and the strategy without a code change:
//
//	redis://[[user]:password@]host[:port][/db][?param=value&…]
//	rediss://…  (TLS, verified against the host name)
//
// The port defaults to 6379, the database to 0. Parameters:
//
//	strategy        multiplexed (default) or pool
//	conns           Multiplexed.Conns
//	max_pending     Multiplexed.MaxPending
//	size            Pool.Size
//	min_idle        Pool.MinIdle
//	max_idle_time   Pool.MaxIdleTime (a Go duration, "30m")
//	max_lifetime    Pool.MaxLifetime
//	dial_timeout, read_timeout, write_timeout   (Go durations)
//	client_name     CLIENT SETNAME
//	addr            another seed node host:port (repeatable)
//
// Unknown parameters, and parameters of the other strategy, are errors.
// Errors never repeat the URL, which may hold a password.
func ParseURL(raw string) (Options, error) {
	var o Options
	u, err := url.Parse(raw)
	if err != nil {
		// url.Parse's error quotes the whole URL, password included.
		return o, fmt.Errorf("%w: malformed redis URL", ErrInvalidArgument)
	}
	switch u.Scheme {
	case "redis":
	case "rediss":
		o.TLS = &tls.Config{MinVersion: tls.VersionTLS12}
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
		port = "6379"
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return o, fmt.Errorf("%w: port %q in URL outside 1..65535", ErrInvalidArgument, port)
	}
	o.Addrs = []string{net.JoinHostPort(host, port)}
	if p := strings.Trim(u.Path, "/"); p != "" {
		db, err := strconv.Atoi(p)
		if err != nil || db < 0 {
			return o, fmt.Errorf("%w: database %q in URL path is not a non-negative integer", ErrInvalidArgument, p)
		}
		o.DB = db
	}

	q := u.Query()
	var mux strategy.Multiplexed
	var pool strategy.Pool
	kind := q.Get("strategy")
	if kind == "" {
		kind = "multiplexed"
	}
	if kind != "multiplexed" && kind != "pool" {
		return o, fmt.Errorf("%w: strategy=%q in URL, want multiplexed or pool", ErrInvalidArgument, kind)
	}
	for name, vals := range q {
		v := vals[len(vals)-1]
		var err error
		switch name {
		case "strategy":
		case "addr":
			for _, a := range vals {
				if _, _, e := net.SplitHostPort(a); e != nil {
					return o, fmt.Errorf("%w: addr=%q in URL is not host:port", ErrInvalidArgument, a)
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
		case "conns", "max_pending":
			if kind != "multiplexed" {
				return o, fmt.Errorf("%w: %s= in URL applies to strategy=multiplexed, not %s", ErrInvalidArgument, name, kind)
			}
			if name == "conns" {
				mux.Conns, err = parseCount(v)
			} else {
				mux.MaxPending, err = parseCount(v)
			}
		case "size", "min_idle", "max_idle_time", "max_lifetime":
			if kind != "pool" {
				return o, fmt.Errorf("%w: %s= in URL applies to strategy=pool, not %s", ErrInvalidArgument, name, kind)
			}
			switch name {
			case "size":
				pool.Size, err = parseCount(v)
			case "min_idle":
				pool.MinIdle, err = parseCount(v)
			case "max_idle_time":
				pool.MaxIdleTime, err = parseDuration(v)
			case "max_lifetime":
				pool.MaxLifetime, err = parseDuration(v)
			}
		default:
			return o, fmt.Errorf("%w: unknown URL parameter %q", ErrInvalidArgument, name)
		}
		if err != nil {
			return o, fmt.Errorf("%w: %s=%q in URL: %v", ErrInvalidArgument, name, v, err)
		}
	}
	if kind == "pool" {
		o.Strategy = pool
	} else {
		o.Strategy = mux
	}
	return o, nil
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
