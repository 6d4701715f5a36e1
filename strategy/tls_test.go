package strategy_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"testing"
	"time"

	"github.com/redisx-go/kit/internal/launcher"
	"github.com/redisx-go/kit/redisx"
	"github.com/redisx-go/kit/strategy"
)

// startTLSServer starts a redis-server of the test's own with a TLS port
// (a throwaway CA and a certificate for 127.0.0.1 from launcher.NewTLS)
// next to its plain one, and returns the TLS address and the CA for
// clients. The plain port stays open because the launcher's readiness
// check speaks plain RESP to it. launcher.Private skips the test when
// redis-server was built without TLS.
func startTLSServer(t *testing.T) (string, *x509.CertPool) {
	t.Helper()
	creds, err := launcher.NewTLS(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	srv := launcher.Private(t, launcher.Options{TLS: creds})
	return srv.TLSAddr(), creds.Roots
}

func TestTLS(t *testing.T) {
	addr, roots := startTLSServer(t)
	for _, tc := range []struct {
		name string
		s    strategy.Strategy
	}{
		{"multiplexed", strategy.Multiplexed{}},
		{"multiplexed-conns=2", strategy.Multiplexed{Conns: 2}},
		{"pool", strategy.Pool{Size: 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			c, err := redisx.New(ctx, redisx.Options{
				Addrs:    []string{addr},
				Strategy: tc.s,
				TLS:      &tls.Config{RootCAs: roots},
			})
			if err != nil {
				t.Fatalf("New over TLS: %v", err)
			}
			defer c.Close()
			kv := map[string][]byte{}
			keys := []string{"tls:" + tc.name + ":a", "tls:" + tc.name + ":b", "tls:" + tc.name + ":missing"}
			for _, k := range keys[:2] {
				kv[k] = []byte("v-" + k)
				if err := c.Set(ctx, k, kv[k], time.Minute); err != nil {
					t.Fatalf("Set(%q): %v", k, err)
				}
				if v, err := c.Get(ctx, k); err != nil || string(v) != string(kv[k]) {
					t.Fatalf("Get(%q) = %q, %v; want %q, nil", k, v, err, kv[k])
				}
			}
			vs, err := c.MGet(ctx, keys...)
			if err != nil {
				t.Fatalf("MGet: %v", err)
			}
			if len(vs) != 3 || string(vs[0]) != string(kv[keys[0]]) || string(vs[1]) != string(kv[keys[1]]) || vs[2] != nil {
				t.Fatalf("MGet(%q) = %q; want [%q %q nil]", keys, vs, kv[keys[0]], kv[keys[1]])
			}
		})
	}
}

func TestTLSUnknownAuthority(t *testing.T) {
	addr, _ := startTLSServer(t)
	for _, tc := range []struct {
		name string
		s    strategy.Strategy
	}{
		{"multiplexed", strategy.Multiplexed{}},
		{"pool", strategy.Pool{Size: 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			start := time.Now()
			c, err := redisx.New(ctx, redisx.Options{
				Addrs:    []string{addr},
				Strategy: tc.s,
				TLS:      &tls.Config{RootCAs: x509.NewCertPool()}, // trusts nobody
			})
			if err == nil {
				c.Close()
				t.Fatal("New with an empty RootCAs pool succeeded")
			}
			if !errors.Is(err, redisx.ErrConnection) {
				t.Errorf("New with an empty RootCAs pool = %v; want ErrConnection", err)
			}
			var unknown x509.UnknownAuthorityError
			if !errors.As(err, &unknown) {
				t.Errorf("New with an empty RootCAs pool = %v; want an x509.UnknownAuthorityError inside", err)
			}
			t.Logf("refused after %v: %v", time.Since(start).Round(time.Microsecond), err)
		})
	}
}
