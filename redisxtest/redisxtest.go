// Package redisxtest starts real redis-server processes for tests, after
// net/http/httptest. It starts a standalone server or a Redis Cluster on
// free loopback ports, with a password, an ACL user or TLS when asked,
// stopped when the test ends.
//
//	func TestCache(t *testing.T) {
//		srv := redisxtest.Start(t, redisxtest.Options{})
//		c, err := redisx.New(ctx, srv.Options())
//		…
//	}
//
// Start and StartCluster skip the test, with a message that says how to
// install it, when redis-server is not on PATH (Debian and Ubuntu: `apt-get
// install redis-server`; macOS: `brew install redis`). NewServer and
// NewCluster are the forms for programs other than tests, such as examples
// that start their own server when given no address.
//
// Servers listen on 127.0.0.1 only, keep no data on disk and are killed
// with the test binary should it die.
//
// # Conformance
//
// RunConformance is the behaviour suite every strategy of this module
// passes, exposed as testing/slogtest exposes its suite for slog
// handlers, so that a strategy of your own is held to the same contract:
//
//	func TestMyStrategy(t *testing.T) {
//		srv := redisxtest.Start(t, redisxtest.Options{})
//		o := srv.Options()
//		o.Strategy = mystrategy.Strategy{}
//		redisxtest.RunConformance(t, o)
//	}
package redisxtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redisx-go/kit/internal/launcher"
	"github.com/redisx-go/kit/redisx"
)

// Options configures a server. The zero value is a server without
// authentication.
type Options struct {
	// Password, when set, is required from every client: the default
	// user's password, or Username's when Username is set too.
	Password string
	// Username, when set with Password, is an ACL user with every
	// permission; the default user then has a password of its own that
	// no client knows, so a client that does not name the user is
	// refused.
	Username string
	// TLS makes the server listen for TLS, with a certificate for
	// 127.0.0.1 signed by a CA made for it; Options then returns the TLS
	// address and a tls.Config that trusts that CA. (The plain port stays
	// open too, for the harness's own checks.)
	TLS bool
	// Args are extra redis-server configuration directives, such as
	// []string{"--maxmemory", "10mb"}.
	Args []string

	// Replicas and Sentinels size a group started by StartSentinel: the
	// replicas of the master (zero: 2) and the sentinels monitoring it
	// (zero: 3). Start and NewServer refuse them.
	Replicas  int
	Sentinels int
}

// startTimeout bounds starting one server or a cluster.
const startTimeout = 60 * time.Second

func (o Options) launcherOptions() (launcher.Options, error) {
	lo := launcher.Options{Args: append([]string(nil), o.Args...)}
	switch {
	case o.Replicas != 0 || o.Sentinels != 0:
		return lo, fmt.Errorf("redisxtest: Replicas and Sentinels are for StartSentinel")
	case o.Username != "" && o.Password == "":
		return lo, fmt.Errorf("redisxtest: Username %q without Password", o.Username)
	case o.Username != "":
		// The launcher's readiness probe (and Restart's) authenticates as
		// the default user: give it a secret of its own.
		var secret [16]byte
		if _, err := rand.Read(secret[:]); err != nil {
			return lo, wrap(err)
		}
		lo.Password = hex.EncodeToString(secret[:])
		lo.Args = append(lo.Args, "--user", o.Username, "on", ">"+o.Password, "~*", "&*", "+@all")
	default:
		lo.Password = o.Password
	}
	return lo, nil
}

// Server is a running redis-server. Its methods are safe for concurrent
// use.
type Server struct {
	srv  *launcher.Server
	opts Options
	tls  *launcher.TLS // nil without Options.TLS
	dir  string        // the TLS files, removed by Close
}

// NewServer starts a redis-server and waits until it answers, within ctx.
// The caller must Close it.
func NewServer(ctx context.Context, o Options) (*Server, error) {
	lo, err := o.launcherOptions()
	if err != nil {
		return nil, err
	}
	s := &Server{opts: o}
	if o.TLS {
		if s.dir, s.tls, err = newTLS(); err != nil {
			return nil, err
		}
		lo.TLS = s.tls
	}
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	if s.srv, err = launcher.Start(ctx, lo); err != nil {
		os.RemoveAll(s.dir)
		return nil, wrap(err)
	}
	return s, nil
}

// wrap makes err, from the package that runs the servers, an error of
// this package: one "redisxtest:" prefix and no internal package's name,
// while errors.Is and errors.As still reach the cause. A nil err stays nil.
func wrap(err error) error {
	if err == nil {
		return nil
	}
	return &wrapped{msg: "redisxtest: " + strings.ReplaceAll(err.Error(), "launcher: ", ""), err: err}
}

type wrapped struct {
	msg string
	err error
}

func (e *wrapped) Error() string { return e.msg }
func (e *wrapped) Unwrap() error { return e.err }

// newTLS makes a CA and a server certificate in a new directory.
func newTLS() (string, *launcher.TLS, error) {
	dir, err := os.MkdirTemp("", "redisxtest-tls-")
	if err != nil {
		return "", nil, wrap(err)
	}
	t, err := launcher.NewTLS(dir)
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, wrap(err)
	}
	return dir, t, nil
}

// Start starts a redis-server for t and stops it when t ends. It skips t
// when redis-server is not installed, and fails t when the server cannot
// be started.
func Start(t testing.TB, o Options) *Server {
	t.Helper()
	skipWithoutRedis(t)
	s, err := NewServer(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func skipWithoutRedis(t testing.TB) {
	t.Helper()
	if err := launcher.Available(); err != nil {
		t.Skipf("redisxtest: redis-server is not installed, so this test cannot run: "+
			"install it (Debian/Ubuntu: sudo apt-get install -y redis-server; macOS: brew install redis): %v", err)
	}
}

// Addr returns the server's address, "127.0.0.1:port": its TLS address
// when it was started with Options.TLS.
func (s *Server) Addr() string {
	if s.tls != nil {
		return s.srv.TLSAddr()
	}
	return s.srv.Addr()
}

// Options returns client options for the server: its address,
// credentials and TLS configuration, and the default strategy. Set
// Strategy (or any other field) on the result before passing it to
// redisx.New.
func (s *Server) Options() redisx.Options {
	o := redisx.Options{Addrs: []string{s.Addr()}, Username: s.opts.Username, Password: s.opts.Password}
	if s.tls != nil {
		o.TLS = s.tls.ClientConfig()
	}
	return o
}

// Kill kills the server abruptly (SIGKILL), as a crash would: clients see
// their connections reset. Restart brings it back on the same address.
// Kill is idempotent.
func (s *Server) Kill() error { return wrap(s.srv.Kill()) }

// Stop stops the server gracefully (SHUTDOWN, or SIGTERM, as an operator
// does: the server closes its clients' connections), waiting up to 5 s
// before it kills it. Restart brings it back on the same address; Close after
// Stop only removes the server's files. Stop is idempotent.
func (s *Server) Stop() error { return wrap(s.srv.Stop()) }

// Restart restarts the server on the same address, with the same options,
// and returns once it answers, within ctx: a running server is stopped
// first (as Stop does); a killed or stopped one is started again. The
// server keeps no data on disk, so it comes back empty. Clients opened on
// it reconnect on their own.
func (s *Server) Restart(ctx context.Context) error {
	if err := s.srv.Stop(); err != nil {
		return wrap(err)
	}
	return wrap(s.srv.Restart(ctx))
}

// Close stops the server and removes its files. It is idempotent.
func (s *Server) Close() error {
	err := s.srv.Stop()
	if s.dir != "" {
		os.RemoveAll(s.dir)
	}
	return wrap(err)
}

// ClusterOptions configures a cluster. The zero value is 3 masters
// without replicas.
type ClusterOptions struct {
	// Masters is the number of masters; zero: 3, the fewest Redis allows.
	Masters int
	// Replicas per master; zero: none.
	Replicas int
	// NodeTimeout is cluster-node-timeout, how long before a silent master
	// is failed over to its replica. Zero: 2 s.
	NodeTimeout time.Duration
	// TLS makes every node speak TLS, to clients and to each other
	// (tls-cluster); Options then returns the TLS addresses and a
	// tls.Config that trusts the cluster's CA.
	TLS bool
	// Args are extra configuration directives for every node.
	Args []string
}

// Cluster is a running Redis Cluster. Its methods are safe for concurrent
// use.
type Cluster struct {
	c   *launcher.Cluster
	tls *launcher.TLS
	dir string
}

// NewCluster starts a cluster and waits until every slot is served,
// within ctx. The caller must Close it.
func NewCluster(ctx context.Context, o ClusterOptions) (*Cluster, error) {
	cl := &Cluster{}
	lo := launcher.ClusterOptions{Masters: o.Masters, Replicas: o.Replicas, NodeTimeout: o.NodeTimeout, Args: o.Args}
	if o.TLS {
		var err error
		if cl.dir, cl.tls, err = newTLS(); err != nil {
			return nil, err
		}
		lo.TLS = cl.tls
	}
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	c, err := launcher.StartCluster(ctx, lo)
	if err != nil {
		os.RemoveAll(cl.dir)
		return nil, wrap(err)
	}
	cl.c = c
	return cl, nil
}

// StartCluster starts a cluster for t and stops it when t ends. It skips t
// when redis-server is not installed.
func StartCluster(t testing.TB, o ClusterOptions) *Cluster {
	t.Helper()
	skipWithoutRedis(t)
	c, err := NewCluster(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// Addrs returns the address of every node (its TLS address with
// ClusterOptions.TLS), the masters it was started with first.
func (c *Cluster) Addrs() []string {
	if c.tls != nil {
		return c.c.TLSAddrs()
	}
	return c.c.Addrs()
}

// Options returns client options naming every node as a seed, with the
// TLS configuration when the cluster speaks TLS.
func (c *Cluster) Options() redisx.Options {
	o := redisx.Options{Addrs: c.Addrs()}
	if c.tls != nil {
		o.TLS = c.tls.ClientConfig()
	}
	return o
}

// Close stops every node. It is idempotent.
func (c *Cluster) Close() error {
	err := c.c.Stop()
	if c.dir != "" {
		os.RemoveAll(c.dir)
	}
	return wrap(err)
}
