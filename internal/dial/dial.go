// Package dial opens the transports' connections to a server. That is TCP,
// TLS, credentials and the handshake (AUTH, SELECT, CLIENT SETNAME, and the
// checks that a Redis server, a master, answers); it also reads what the
// kernel knows of one (Acks).
package dial

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/redisx-go/kit/backend"
	"github.com/redisx-go/kit/internal/failure"
)

// Dial opens one authenticated connection to addr. redigo does the
// handshake (AUTH with an ACL user, SELECT, CLIENT SETNAME); the TLS
// layer and the TCP dial are ours so that the net.Conn it speaks over can
// be kept. redigo's own reader has consumed exactly the handshake's replies
// when DialContext returns, so the stream is clean for package resp from
// then on.
//
// ctx and cfg.DialTimeout bound the dial, and its error says which ended
// it: the end of ctx gives an error wrapping ErrConnection and ctx's
// error (see DialEnded), DialTimeout one wrapping ErrConnection alone — a
// failure to connect that another attempt may not meet. So a caller that
// bounds a dial by DialTimeout passes its own context, not one with that
// timeout added.
func Dial(ctx context.Context, cfg *backend.Config, addr string) (net.Conn, error) {
	return dial(ctx, cfg, addr, false)
}

// DialData is Dial for a connection that may serve reads — a shared or
// pooled one, not a dedicated, blocking or Pub/Sub one: once the
// handshake is done, cfg.OnConnect, when set, runs on it within the
// dial's deadline (see strategy.Config.OnConnect). Its error is returned
// as it is, marked unsent.
func DialData(ctx context.Context, cfg *backend.Config, addr string) (net.Conn, error) {
	return dial(ctx, cfg, addr, true)
}

func dial(ctx context.Context, cfg *backend.Config, addr string, data bool) (net.Conn, error) {
	caller := ctx
	if cfg.DialTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cfg.DialTimeout)
		defer cancel()
	}
	username, password := cfg.Username, cfg.Password
	if cfg.Credentials != nil {
		var err error
		if username, password, err = cfg.Credentials(ctx); err != nil {
			// The function's error is the user's: it is wrapped, and had
			// better not hold the secret it failed to produce.
			return nil, failure.MarkUnsent(fmt.Errorf("%w: credentials for %s: %w", backend.ErrConnection, addr, err))
		}
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
	if password != "" {
		opts = append(opts, redis.DialPassword(password))
		if username != "" {
			opts = append(opts, redis.DialUsername(username))
		}
	}
	if cfg.ClientName != "" {
		opts = append(opts, redis.DialClientName(cfg.ClientName))
	}
	rc, err := redis.DialContext(ctx, "tcp", addr, opts...)
	if err == nil && cfg.Sentinel != nil {
		// The sentinels named addr as the master, but that may have
		// changed since, or they may be wrong (Lettuce#661): the
		// connection must reach a master, or no caller may use it. ROLE
		// proves too that a Redis server answers.
		var role []any
		if role, err = redis.Values(redis.DoContext(rc, ctx, "ROLE")); err == nil && roleOf(role) != "master" {
			nc.Close()
			return nil, failure.MarkUnsent(fmt.Errorf("%w: dial %s: %w (ROLE %s)", backend.ErrConnection, addr, ErrNotMaster, roleOf(role)))
		}
	} else if err == nil && cfg.ReadFrom != backend.ReadPrimary {
		// A Redis Cluster whose reads may go to replicas: a replica
		// serves its slots' reads only on a READONLY connection (a master
		// answers OK and ignores it). The reply proves a Redis server too.
		var ok string
		if ok, err = redis.String(redis.DoContext(rc, ctx, "READONLY")); err == nil && ok != "OK" {
			err = errNotRedis
		}
	} else if err == nil && password == "" && cfg.ClientName == "" && cfg.DB == 0 {
		// The handshake sent nothing, so nothing yet proves that a Redis
		// server answers (Strategy.Open must verify it): any TCP listener
		// would do. PING does; redigo reads exactly its reply.
		var pong string
		if pong, err = redis.String(redis.DoContext(rc, ctx, "PING")); err == nil && pong != "PONG" {
			err = errNotRedis
		}
	}
	if err == nil && data && cfg.OnConnect != nil {
		if err := onConnect(ctx, cfg, addr, nc); err != nil {
			nc.Close()
			// The caller's context ended during the set-up: say so, as
			// for the handshake.
			if ended := endedBy(caller, err); ended != nil {
				return nil, failure.MarkUnsent(failure.DialEnded(addr, ended))
			}
			return nil, failure.MarkUnsent(err)
		}
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
		// Nothing but the handshake was written: no caller's request.
		if ended := endedBy(caller, err); ended != nil {
			return nil, failure.MarkUnsent(failure.DialEnded(addr, ended))
		}
		return nil, failure.MarkUnsent(handshakeError(cfg, addr, err, nc != nil))
	}
	return nc, nil
}

// onConnect runs cfg.OnConnect on nc, under ctx's deadline: a hook that
// waits for a server that does not answer returns when the dial's
// deadline passes, with an error wrapping ErrConnection.
func onConnect(ctx context.Context, cfg *backend.Config, addr string, nc net.Conn) error {
	if d, ok := ctx.Deadline(); ok {
		nc.SetDeadline(d)
	}
	stop := context.AfterFunc(ctx, func() { nc.SetDeadline(time.Unix(1, 0)) })
	err := cfg.OnConnect(ctx, addr, nc)
	if !stop() && err != nil && !errors.Is(err, backend.ErrConnection) && !errors.Is(err, backend.ErrAuth) {
		return fmt.Errorf("%w: dial %s: set-up not done within the dial's deadline (DialTimeout %v): %w", backend.ErrConnection, addr, cfg.DialTimeout, err)
	}
	return err
}

// ErrNotMaster is wrapped in the error of a dial, with Config.Sentinel set,
// that reached a server which is not a master (a replica, or a master the
// sentinels demoted since they named it), and of a write a server refused
// as a replica (READONLY). The sentinels are asked again.
var ErrNotMaster = errors.New("not a master")

// roleOf returns the role in a ROLE reply: "master", "slave" or "sentinel".
func roleOf(reply []any) string {
	if len(reply) == 0 {
		return "?"
	}
	b, _ := reply[0].([]byte)
	return string(b)
}

// errNotRedis stands for a handshake reply that is not RESP, or not the
// reply a Redis server gives.
var errNotRedis = errors.New("not a Redis reply")

// handshakeError says why the dial of addr failed with err, in terms a
// user can act on; connected tells that the TCP (and TLS) connection was
// up, so that err came from the handshake's replies. It never holds what
// the peer sent, which may echo the password.
func handshakeError(cfg *backend.Config, addr string, err error, connected bool) error {
	var re redis.Error
	switch {
	case authRefused(err):
		return fmt.Errorf("%w: dial %s: %w", backend.ErrAuth, addr, err)
	case settingRefused(err):
		// SELECT, CLIENT SETNAME or READONLY refused: the same dial
		// gets the same answer, so it is not a connection failure.
		return fmt.Errorf("%w: dial %s: the server refuses %s: %w", backend.ErrInvalidArgument, addr, settings(cfg), err)
	case errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
		// DialTimeout, not the dial's context (endedBy found it alive): a
		// failure to connect, which another attempt may not meet — not a
		// context's end, which would stop the retries.
		return fmt.Errorf("%w: dial %s: no answer within DialTimeout %v", backend.ErrConnection, addr, cfg.DialTimeout)
	case !connected || errors.As(err, &re) || errors.Is(err, context.Canceled):
		return fmt.Errorf("%w: dial %s: %w", backend.ErrConnection, addr, err)
	case errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE):
		hint := ""
		if cfg.TLS == nil {
			hint = " (does it require TLS?)"
		}
		return fmt.Errorf("%w: %s closed the connection during the handshake%s: %w", backend.ErrConnection, addr, hint, err)
	}
	var ne net.Error
	if errors.Is(err, errNotRedis) || !errors.As(err, &ne) {
		// Not the network's failure, nor the server's error reply: a
		// reply redigo could not parse as RESP (an HTTP or SSH server
		// answering), or a PING answered with something else.
		return fmt.Errorf("%w: %s did not answer as a Redis server", backend.ErrConnection, addr)
	}
	return fmt.Errorf("%w: dial %s: %w", backend.ErrConnection, addr, err)
}

// authRefused reports whether err is the server refusing a handshake for
// its credentials. Redis 6+ answers a wrong password or user with
// WRONGPASS, older servers with "ERR invalid password"; a command before
// AUTH on a server that needs it gets NOAUTH; AUTH on a server without a
// password "ERR AUTH <password> called without any password configured"
// (the literal "<password>", not the one sent); a command the ACL user may
// not run, NOPERM.
func authRefused(err error) bool {
	var re redis.Error
	if !errors.As(err, &re) {
		return false
	}
	msg := string(re)
	for _, p := range []string{"WRONGPASS", "NOAUTH", "NOPERM"} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	msg = strings.ToLower(msg)
	return strings.Contains(msg, "invalid password") ||
		strings.Contains(msg, "invalid username-password pair") ||
		strings.Contains(msg, "without any password configured")
}

// settingRefused reports whether err is the server refusing a setting of
// the handshake — "ERR DB index is out of range", "ERR SELECT is not
// allowed in cluster mode", a client name it does not take — rather than
// a state that passes: "ERR max number of clients reached", or LOADING,
// BUSY, MASTERDOWN, which are not ERR replies.
func settingRefused(err error) bool {
	var re redis.Error
	if !errors.As(err, &re) {
		return false
	}
	msg := string(re)
	return strings.HasPrefix(msg, "ERR ") && !strings.Contains(strings.ToLower(msg), "max number of clients")
}

// settings names what the handshake of cfg set: the database, the client
// name.
func settings(cfg *backend.Config) string {
	var set []string
	if cfg.DB != 0 {
		set = append(set, fmt.Sprintf("DB %d", cfg.DB))
	}
	if cfg.ClientName != "" {
		set = append(set, fmt.Sprintf("client name %q", cfg.ClientName))
	}
	if len(set) == 0 {
		return "the handshake"
	}
	return "the connection's " + strings.Join(set, ", ")
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

// endedBy returns the error of ctx, the context a dial was called with,
// when ctx ended and err, the dial's failure, is the kind its end causes
// (a cancellation, a deadline, a network timeout); otherwise nil. A
// deadline that has passed counts as ended before its timer fires: a
// socket's deadline, set from it, may expire first.
func endedBy(ctx context.Context, err error) error {
	if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) && !isTimeout(err) {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
		return context.DeadlineExceeded
	}
	return nil
}

// isTimeout reports a network timeout: a read or write of the handshake
// that ran into the dial's deadline.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
