package launcher_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redisx-go/kit/internal/launcher"
)

// dialTLS connects to addr over TLS trusting roots.
func dialTLS(t *testing.T, addr string, roots *x509.CertPool) (redis.Conn, error) {
	t.Helper()
	return redis.Dial("tcp", addr, redis.DialUseTLS(true),
		redis.DialTLSConfig(&tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}),
		redis.DialConnectTimeout(2*time.Second), redis.DialReadTimeout(2*time.Second))
}

// skipWithoutTLS skips t when redis-server was built without TLS.
func skipWithoutTLS(t *testing.T, err error) {
	t.Helper()
	if msg := err.Error(); strings.Contains(msg, "TLS") && (strings.Contains(msg, "not available") ||
		strings.Contains(msg, "not supported") || strings.Contains(msg, "Bad directive")) {
		t.Skipf("redis-server was built without TLS support: %v", err)
	}
}

func TestStartTLS(t *testing.T) {
	t.Parallel()
	requireRedis(t)
	tl, err := launcher.NewTLS(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s, err := launcher.Start(t.Context(), launcher.Options{TLS: tl})
	if err != nil {
		skipWithoutTLS(t, err)
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Error(err)
		}
	})
	if s.TLSAddr() == "" || s.TLSAddr() == s.Addr() {
		t.Fatalf("TLSAddr = %q, Addr = %q; want a TLS port of its own", s.TLSAddr(), s.Addr())
	}
	if got := mustCLI(t, s, "ping"); got != "PONG" {
		t.Errorf("plain PING = %q, want PONG", got)
	}
	check := func() {
		t.Helper()
		c, err := dialTLS(t, s.TLSAddr(), tl.Roots)
		if err != nil {
			t.Fatalf("dial %s over TLS: %v", s.TLSAddr(), err)
		}
		defer c.Close()
		if pong, err := redis.String(c.Do("PING")); err != nil || pong != "PONG" {
			t.Errorf("PING over TLS = %q, %v; want PONG", pong, err)
		}
	}
	check()
	if c, err := dialTLS(t, s.TLSAddr(), x509.NewCertPool()); err == nil {
		c.Close()
		t.Error("a TLS client trusting nobody connected")
	}
	if err := s.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := s.Restart(t.Context()); err != nil {
		t.Fatal(err)
	}
	check() // the same TLS port after a restart
	if (&launcher.Server{}).TLSAddr() != "" {
		t.Error("TLSAddr of a server without TLS is not empty")
	}
}

// TestClusterTLS starts a cluster speaking TLS to clients, on its bus and
// for replication, checks which ports Redis announces to TLS and plain
// clients (what ClusterOptions.TLS documents), and fails a master over to
// its replica.
func TestClusterTLS(t *testing.T) {
	if os.Getenv("REDISX_TEST_CLUSTER") != "" {
		t.Skip("starts a cluster of its own")
	}
	requireRedis(t)
	tl, err := launcher.NewTLS(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cl, err := launcher.StartCluster(t.Context(), launcher.ClusterOptions{Replicas: 1, TLS: tl})
	if err != nil {
		skipWithoutTLS(t, err)
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cl.Stop(); err != nil {
			t.Error(err)
		}
	})
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	tlsAddrs := cl.TLSAddrs()
	if len(tlsAddrs) != 6 {
		t.Fatalf("TLSAddrs = %v; want 6", tlsAddrs)
	}
	masters, err := cl.Masters(ctx)
	if err != nil || len(masters) != 3 {
		t.Fatalf("Masters = %v, %v", masters, err)
	}

	t.Run("Ports", func(t *testing.T) {
		c, err := dialTLS(t, tlsAddrs[0], tl.Roots)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		slots, err := redis.Values(c.Do("CLUSTER", "SLOTS"))
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range slots {
			entry, _ := redis.Values(e, nil)
			node, _ := redis.Values(entry[2], nil)
			host, _ := redis.String(node[0], nil)
			port, _ := redis.Int(node[1], nil)
			got = append(got, host+":"+strconv.Itoa(port))
		}
		var want []string
		for _, m := range masters {
			want = append(want, m.TLSAddr())
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("CLUSTER SLOTS over TLS lists masters %v; want their TLS addresses %v", got, want)
		}
		shards, err := masters[0].CLI(ctx, "CLUSTER", "SHARDS")
		if err != nil || !strings.Contains(shards, "tls-port") {
			t.Errorf("CLUSTER SHARDS over a plain connection = %q, %v; want tls-port listed", shards, err)
		}
	})

	t.Run("Failover", func(t *testing.T) {
		m := masters[0]
		replicas, err := cl.ReplicasOf(ctx, m)
		if err != nil || len(replicas) != 1 {
			t.Fatalf("ReplicasOf(%s) = %v, %v; want one", m.Addr(), replicas, err)
		}
		r := replicas[0]
		if err := cl.Failover(ctx, m); err == nil {
			t.Error("Failover of a master succeeded")
		}
		if err := cl.Failover(ctx, r); err != nil {
			t.Fatal(err)
		}
		if s, err := cl.MasterOf(ctx, 0); err != nil || s != r {
			t.Errorf("MasterOf(0) after the failover = %v, %v; want %s", s, err, r.Addr())
		}
		if back, err := cl.ReplicasOf(ctx, r); err != nil || !slices.Contains(back, m) {
			t.Errorf("ReplicasOf(new master) = %v, %v; want the former master %s", back, err, m.Addr())
		}
	})
}
