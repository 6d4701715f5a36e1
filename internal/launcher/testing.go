package launcher

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	// envAddr names an external Redis server to use instead of starting one.
	envAddr = "REDISX_TEST_ADDR"
	// envSkip, when "1", makes Standalone skip rather than fail the test when
	// redis-server is not installed.
	envSkip = "REDISX_SKIP_NO_REDIS"
)

// External reports whether tests use an external Redis server named by the
// environment variable REDISX_TEST_ADDR instead of servers they start.
// Tests that Kill or Restart a server should call tb.Skip when it is true.
func External() bool {
	return os.Getenv(envAddr) != ""
}

// Standalone returns a Redis server for tb.
//
// When REDISX_TEST_ADDR is set, it returns a *Server whose Addr is that value
// and whose Kill and Restart return an error; o.Password is then used only by
// CLI, and o's other fields are ignored. Otherwise it starts a new server with
// [Start] and stops it with tb.Cleanup.
//
// When redis-server or redis-cli is missing, Standalone calls tb.Skip with the
// [Available] message if REDISX_SKIP_NO_REDIS=1, and tb.Fatal otherwise. It
// calls tb.Fatal when the server cannot be started.
func Standalone(tb testing.TB, o Options) *Server {
	tb.Helper()
	if addr := os.Getenv(envAddr); addr != "" {
		s, err := external(addr, o.Password)
		if err != nil {
			tb.Fatal(err)
		}
		return s
	}
	return Private(tb, o)
}

// Private returns a Redis server of tb's own, configured by o, even when
// REDISX_TEST_ADDR names an external one (whose password, ACL users, TLS
// settings or life the test cannot choose): a test that kills it, or
// needs o honoured, uses it. It skips tb on an external setup or with
// REDISX_SKIP_NO_REDIS=1 when redis-server is missing, fails it
// otherwise, skips tb when o.TLS is set and redis-server was built
// without TLS, and stops the server with tb.Cleanup.
func Private(tb testing.TB, o Options) *Server {
	tb.Helper()
	if err := Available(); err != nil {
		if External() || os.Getenv(envSkip) == "1" {
			tb.Skipf("needs a server of its own: %v", err)
		}
		tb.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := Start(ctx, o)
	if err != nil {
		if o.TLS != nil && withoutTLS(err) {
			tb.Skipf("redis-server was built without TLS support: %v", err)
		}
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := s.Stop(); err != nil {
			tb.Error(err)
		}
	})
	return s
}

// withoutTLS reports whether err, from starting a server with TLS, says
// that redis-server was built without it.
func withoutTLS(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "TLS") && (strings.Contains(msg, "not available") ||
		strings.Contains(msg, "not supported") || strings.Contains(msg, "Bad directive"))
}

// external returns a Server for an existing server at addr ("host:port").
func external(addr, password string) (*Server, error) {
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("launcher: %s=%q: %w", envAddr, addr, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port <= 0 || port > 65535 {
		return nil, fmt.Errorf("launcher: %s=%q: invalid port", envAddr, addr)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	return &Server{addr: addr, host: host, port: port, password: password, external: true}, nil
}

// SentinelForTest starts a sentinel group for tb with [StartSentinel],
// bounded by 60 s, and stops it with tb.Cleanup. There is no external
// form: a group's master is killed and failed over by the tests that use
// it, so each has its own.
//
// When redis-server, redis-cli or redis-sentinel is missing,
// SentinelForTest calls tb.Skip if REDISX_SKIP_NO_REDIS=1, and tb.Fatal
// otherwise. It calls tb.Fatal when the group cannot be started.
func SentinelForTest(tb testing.TB, o SentinelOptions) *SentinelGroup {
	tb.Helper()
	if err := sentinelAvailable(); err != nil {
		if os.Getenv(envSkip) == "1" {
			tb.Skip(err)
		}
		tb.Fatal(err)
	}
	g, err := StartSentinel(context.Background(), o)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := g.Stop(); err != nil {
			tb.Error(err)
		}
	})
	return g
}

// SharedCluster is one Redis Cluster for the tests of a package that
// only read and write keys on it — no node killed, no slot moved, no
// configuration changed: creating one costs about 2 s (a master
// reports cluster_state:ok no sooner than 2 s after it started), which
// every such test would otherwise pay. The first [SharedCluster.Get]
// starts it; the package's TestMain stops it with [SharedCluster.Stop]
// after m.Run. Tests that share it use keys of their own.
type SharedCluster struct {
	o    ClusterOptions
	once sync.Once
	c    *Cluster
	err  error
}

// NewSharedCluster returns a SharedCluster that starts its cluster with o
// on first use.
func NewSharedCluster(o ClusterOptions) *SharedCluster {
	return &SharedCluster{o: o}
}

// Get returns the shared cluster, starting it on the first call, as
// [ClusterForTest] does — the cluster REDISX_TEST_CLUSTER names when it
// is set, tb skipped or failed when redis-server is missing or the
// cluster cannot be started — but not stopped when tb ends.
func (s *SharedCluster) Get(tb testing.TB) *Cluster {
	tb.Helper()
	if os.Getenv(envCluster) != "" {
		return ClusterForTest(tb, s.o)
	}
	if err := Available(); err != nil {
		if os.Getenv(envSkip) == "1" {
			tb.Skip(err)
		}
		tb.Fatal(err)
	}
	s.once.Do(func() { s.c, s.err = StartCluster(context.Background(), s.o) })
	if s.err != nil {
		if s.o.TLS != nil && withoutTLS(s.err) {
			tb.Skipf("redis-server was built without TLS support: %v", s.err)
		}
		tb.Fatal(s.err)
	}
	return s.c
}

// Stop stops the cluster if Get started one. It is for TestMain, after
// m.Run; the tests must not use the cluster after it.
func (s *SharedCluster) Stop() error {
	if s.c == nil {
		return nil
	}
	return s.c.Stop()
}

// Run runs the package's tests, m.Run, then stops the cluster, and
// returns the code for os.Exit: m.Run's, or 1 if the stop failed. It is
// the whole of a TestMain whose package shares s:
//
//	func TestMain(m *testing.M) { os.Exit(sharedCluster.Run(m)) }
func (s *SharedCluster) Run(m *testing.M) int {
	code := m.Run()
	if err := s.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = max(code, 1)
	}
	return code
}
