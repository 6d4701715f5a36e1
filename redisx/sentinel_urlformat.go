package redisx

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// formatSentinelURL is FormatURL (and RedactedURL, without credentials)
// for Options whose Sentinel is set: a redis-sentinel:// URL (see
// parseSentinelURL) with the sentinels as its hosts, the master's name as
// its path, and the parameters of the redis:// URL of the same Options,
// followed by db, read_from, sentinel_username and sentinel_password. Addrs, which
// New ignores beside Sentinel, are not written. TLS is refused: the
// redis-sentinel scheme has no TLS form.
func formatSentinelURL(o Options, credentials bool) (string, error) {
	s := o.Sentinel
	switch {
	case o.ReadFrom > ReadNearest:
		return "", fmt.Errorf("%w: %v is not ReadPrimary, ReadReplicaPreferred nor ReadNearest", ErrInvalidArgument, o.ReadFrom)
	case s.Master == "":
		return "", fmt.Errorf("%w: Sentinel.Master is empty", ErrInvalidArgument)
	case len(s.Addrs) == 0:
		return "", fmt.Errorf("%w: Sentinel.Addrs is empty", ErrInvalidArgument)
	case o.TLS != nil:
		return "", fmt.Errorf("%w: a redis-sentinel URL holds no TLS settings", ErrInvalidArgument)
	case o.DB < 0:
		return "", fmt.Errorf("%w: DB %d is negative", ErrInvalidArgument, o.DB)
	}
	for _, a := range s.Addrs {
		host, port, err := net.SplitHostPort(a)
		if err != nil || host == "" {
			return "", fmt.Errorf("%w: sentinel address %q is not host:port", ErrInvalidArgument, a)
		}
		if _, err := sentinelAddrs(net.JoinHostPort(host, port)); err != nil || strings.Contains(a, ",") {
			return "", fmt.Errorf("%w: sentinel address %q cannot be the host of a URL", ErrInvalidArgument, a)
		}
	}
	plain := o
	plain.Sentinel, plain.Addrs, plain.DB, plain.ReadFrom = nil, nil, 0, ReadPrimary
	p, err := formatURL(plain, credentials)
	if err != nil {
		return "", err
	}
	u, err := url.Parse(p)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrInvalidArgument, err) // formatURL writes URLs that parse
	}
	var b strings.Builder
	b.WriteString(sentinelScheme + "://")
	if u.User != nil {
		b.WriteString(u.User.String() + "@")
	}
	b.WriteString(strings.Join(s.Addrs, ","))
	// PathEscape leaves an '@', which ParseURL refuses after the hosts.
	b.WriteString("/" + strings.ReplaceAll(url.PathEscape(s.Master), "@", "%40"))
	q := u.RawQuery
	add := func(name, value string, ok bool) {
		if !ok {
			return
		}
		if q != "" {
			q += "&"
		}
		q += name + "=" + url.QueryEscape(value)
	}
	add("db", strconv.Itoa(o.DB), o.DB > 0)
	add("read_from", o.ReadFrom.String(), o.ReadFrom != ReadPrimary)
	if credentials {
		if s.Password == "" && s.Username != "" {
			return "", fmt.Errorf("%w: Sentinel.Username without Sentinel.Password", ErrInvalidArgument)
		}
		add("sentinel_username", s.Username, s.Username != "")
		add("sentinel_password", s.Password, s.Password != "")
	}
	if q != "" {
		b.WriteString("?" + q)
	}
	return b.String(), nil
}
