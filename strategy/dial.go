package strategy

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"time"

	"github.com/gomodule/redigo/redis"
)

// dial opens one authenticated connection to addr. redigo does the
// handshake (AUTH with an ACL user, SELECT, CLIENT SETNAME); the TLS
// layer and the TCP dial are ours so that the net.Conn it speaks over can
// be kept. redigo's own reader has consumed exactly the handshake's replies
// when DialContext returns, so the stream is clean for package resp from
// then on.
func dial(ctx context.Context, cfg *Config, addr string) (net.Conn, error) {
	if cfg.DialTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cfg.DialTimeout)
		defer cancel()
	}
	var nc net.Conn
	opts := []redis.DialOption{
		redis.DialContextFunc(func(ctx context.Context, network, addr string) (net.Conn, error) {
			d := net.Dialer{KeepAlive: 30 * time.Second}
			c, err := d.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			if cfg.TLS != nil {
				tc := tls.Client(c, tlsConfigFor(cfg.TLS, addr))
				if err := tc.HandshakeContext(ctx); err != nil {
					c.Close()
					return nil, err
				}
				c = tc
			}
			nc = c
			return c, nil
		}),
		redis.DialDatabase(cfg.DB),
	}
	if cfg.Password != "" {
		opts = append(opts, redis.DialPassword(cfg.Password))
		if cfg.Username != "" {
			opts = append(opts, redis.DialUsername(cfg.Username))
		}
	}
	if cfg.ClientName != "" {
		opts = append(opts, redis.DialClientName(cfg.ClientName))
	}
	rc, err := redis.DialContext(ctx, "tcp", addr, opts...)
	if err == nil && cfg.Password == "" && cfg.ClientName == "" && cfg.DB == 0 {
		// The handshake sent nothing, so nothing yet proves that a Redis
		// server answers (Strategy.Open must verify it): any TCP listener
		// would do. PING does; redigo reads exactly its reply.
		_, err = redis.DoContext(rc, ctx, "PING")
	}
	if err == nil {
		// redigo leaves the read deadline of its last handshake command
		// on the connection. The strategies manage deadlines themselves;
		// a stale one fails a read DialTimeout after the dial (Multiplexed
		// then drops the connection, Pool with ReadTimeout < 0 fails the
		// call).
		err = nc.SetDeadline(time.Time{})
	}
	if err != nil {
		if nc != nil {
			nc.Close()
		}
		return nil, fmt.Errorf("%w: dial %s: %w", ErrConnection, addr, err)
	}
	return nc, nil
}

func tlsConfigFor(c *tls.Config, addr string) *tls.Config {
	c = c.Clone()
	if c.ServerName == "" {
		if host, _, err := net.SplitHostPort(addr); err == nil {
			c.ServerName = host
		}
	}
	return c
}

// connError wraps a network or protocol failure on addr.
func connError(addr string, err error) error {
	return fmt.Errorf("%w: %s: %w", ErrConnection, addr, err)
}
