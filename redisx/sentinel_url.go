package redisx

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// sentinelScheme is the scheme of a URL naming a deployment managed by
// Redis Sentinel.
const sentinelScheme = "redis-sentinel"

// isSentinelURL reports whether raw has the redis-sentinel scheme (in any
// case, as net/url reads schemes). ParseURL asks before it parses raw as a
// redis URL: net/url reads no comma-separated list of hosts whose last one
// has no port, or any of which is an IPv6 literal.
func isSentinelURL(raw string) bool {
	p := sentinelScheme + "://"
	return len(raw) >= len(p) && strings.EqualFold(raw[:len(p)], p)
}

// defaultSentinelPort is the port of a sentinel address written without
// one.
const defaultSentinelPort = "26379"

// parseSentinelURL is ParseURL for the redis-sentinel scheme:
//
//	redis-sentinel://[[user]:password@]host[:port][,host[:port]…]/master[?param=value&…]
//
// The hosts are the sentinels (port 26379 by default; IPv6 literals in
// brackets); the path is the name the sentinels monitor the master under; the user and
// password are the data nodes' (Options.Username and Password). Besides
// every parameter of a redis:// URL but addr, it takes
//
//	db                 Options.DB (a redis:// URL has it in its path)
//	read_from          Options.ReadFrom: primary (default), replica or nearest
//	sentinel_username  Options.Sentinel.Username
//	sentinel_password  Options.Sentinel.Password
//
// The URL is read by ParseURL as the redis:// URL with the same user info
// and parameters, db in its path, so that both read every parameter alike.
func parseSentinelURL(raw string) (Options, error) {
	var o Options
	after := raw[len(sentinelScheme+"://"):] // isSentinelURL(raw)
	end := strings.IndexAny(after, "/?#")
	if end < 0 {
		end = len(after)
	}
	auth, rest := after[:end], after[end:]
	u, err := url.Parse("redis://sentinel" + rest)
	if err != nil {
		return o, fmt.Errorf("%w: malformed redis-sentinel URL after the hosts", ErrInvalidArgument)
	}
	userinfo, hosts := "", auth
	if i := strings.LastIndexByte(auth, '@'); i >= 0 {
		userinfo, hosts = auth[:i+1], auth[i+1:]
	}
	addrs, err := sentinelAddrs(hosts)
	if err != nil {
		return o, err
	}
	master, err := url.PathUnescape(strings.TrimPrefix(u.EscapedPath(), "/"))
	if err != nil || master == "" || strings.Contains(strings.TrimPrefix(u.EscapedPath(), "/"), "/") {
		return o, fmt.Errorf("%w: a redis-sentinel URL's path is the master's name, one non-empty segment: redis-sentinel://host:26379/mymaster", ErrInvalidArgument)
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return o, fmt.Errorf("%w: malformed query in redis-sentinel URL", ErrInvalidArgument)
	}
	if _, ok := q["addr"]; ok {
		return o, fmt.Errorf("%w: addr in a redis-sentinel URL: list the sentinels as its hosts, the sentinels name the master", ErrInvalidArgument)
	}
	take := func(name string) (string, error) {
		vs := q[name]
		delete(q, name)
		if len(vs) > 1 {
			return "", fmt.Errorf("%w: parameter %s given %d times in URL", ErrInvalidArgument, name, len(vs))
		}
		if len(vs) == 0 {
			return "", nil
		}
		return vs[0], nil
	}
	s := &SentinelOptions{Master: master, Addrs: addrs}
	var db, readFrom string
	for _, p := range []struct {
		name string
		to   *string
	}{{"db", &db}, {"read_from", &readFrom}, {"sentinel_username", &s.Username}, {"sentinel_password", &s.Password}} {
		if *p.to, err = take(p.name); err != nil {
			return o, err
		}
	}
	if s.Username != "" && s.Password == "" {
		return o, fmt.Errorf("%w: sentinel_username without sentinel_password in URL", ErrInvalidArgument)
	}
	if db != "" {
		if n, err := strconv.Atoi(db); err != nil || n < 0 || strconv.Itoa(n) != db {
			return o, fmt.Errorf("%w: db=%q in URL is not a non-negative integer", ErrInvalidArgument, db)
		}
		db = "/" + db
	}
	plain := "redis://" + userinfo + "127.0.0.1:6379" + db
	if len(q) > 0 {
		plain += "?" + q.Encode()
	}
	if o, err = ParseURL(plain); err != nil {
		return Options{}, err
	}
	o.Addrs, o.Sentinel = nil, s
	if o.ReadFrom, err = readFromOf(readFrom); err != nil {
		return Options{}, err
	}
	return o, nil
}

// sentinelAddrs reads the comma-separated sentinel hosts of a
// redis-sentinel URL, adding the default port where none is written.
func sentinelAddrs(hosts string) ([]string, error) {
	var addrs []string
	for h := range strings.SplitSeq(hosts, ",") {
		if h == "" {
			return nil, fmt.Errorf("%w: redis-sentinel URL: an empty sentinel address (give host:port, comma-separated)", ErrInvalidArgument)
		}
		host, port, err := net.SplitHostPort(h)
		if err != nil {
			// No port: a host name, an IPv4 address, or a bracketed IPv6
			// literal.
			host, port = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]"), defaultSentinelPort
			bracketed := strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]")
			if strings.HasSuffix(h, ":") || strings.ContainsAny(host, "[]") || strings.Contains(host, ":") && !bracketed {
				return nil, fmt.Errorf("%w: redis-sentinel URL: sentinel address %q is not host[:port]", ErrInvalidArgument, h)
			}
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || host == "" {
			return nil, fmt.Errorf("%w: redis-sentinel URL: sentinel address %q is not host[:port] with a port in 1..65535", ErrInvalidArgument, h)
		}
		hp := net.JoinHostPort(host, port)
		if back, err := url.Parse("redis://" + hp); err != nil || back.Host != hp {
			return nil, fmt.Errorf("%w: redis-sentinel URL: sentinel address %q cannot be the host of a URL", ErrInvalidArgument, h)
		}
		addrs = append(addrs, hp)
	}
	return addrs, nil
}
