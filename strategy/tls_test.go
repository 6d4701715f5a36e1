package strategy_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redisx-go/kit/internal/launcher"
	"github.com/redisx-go/kit/redisx"
	"github.com/redisx-go/kit/strategy"
)

// tlsFiles are a throwaway CA and a server certificate for 127.0.0.1
// signed by it, as PEM files, and the CA as a pool for clients.
type tlsFiles struct {
	caFile, certFile, keyFile string
	roots                     *x509.CertPool
}

// newTLSFiles generates an ECDSA P-256 CA and server certificate valid for
// 127.0.0.1 and localhost, and writes them to a temporary directory.
func newTLSFiles(t *testing.T) tlsFiles {
	t.Helper()
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "redisx test CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}

	srvKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	srvTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:     []string{"localhost"},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	srvDER, err := x509.CreateCertificate(rand.Reader, srvTmpl, ca, &srvKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(srvKey)
	if err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	f := tlsFiles{
		caFile:   filepath.Join(dir, "ca.crt"),
		certFile: filepath.Join(dir, "server.crt"),
		keyFile:  filepath.Join(dir, "server.key"),
		roots:    x509.NewCertPool(),
	}
	f.roots.AddCert(ca)
	for path, block := range map[string]*pem.Block{
		f.caFile:   {Type: "CERTIFICATE", Bytes: caDER},
		f.certFile: {Type: "CERTIFICATE", Bytes: srvDER},
		f.keyFile:  {Type: "PRIVATE KEY", Bytes: keyDER},
	} {
		if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// startTLSServer starts a redis-server with a TLS port next to its plain
// one and returns the TLS address. The plain port stays open because the
// launcher's readiness check speaks plain RESP to it (with --port 0 Start
// would wait for a port that never opens). It skips the test when
// redis-server was built without TLS.
func startTLSServer(t *testing.T, f tlsFiles) string {
	t.Helper()
	if err := launcher.Available(); err != nil {
		if launcher.External() || os.Getenv("REDISX_SKIP_NO_REDIS") == "1" {
			t.Skipf("needs a server of its own: %v", err)
		}
		t.Fatal(err)
	}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		// The TLS port is picked here, so another process may take it
		// before redis-server binds it: retry with another.
		port, err := launcher.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		srv, err := launcher.Start(ctx, launcher.Options{Args: []string{
			"--tls-port", strconv.Itoa(port),
			"--tls-cert-file", f.certFile,
			"--tls-key-file", f.keyFile,
			"--tls-ca-cert-file", f.caFile,
			"--tls-auth-clients", "no",
		}})
		cancel()
		if err == nil {
			t.Cleanup(func() {
				if err := srv.Stop(); err != nil {
					t.Error(err)
				}
			})
			return net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		}
		lastErr = err
		msg := err.Error()
		switch {
		case strings.Contains(msg, "TLS") && (strings.Contains(msg, "not available") ||
			strings.Contains(msg, "not supported") || strings.Contains(msg, "Bad directive")):
			t.Skipf("redis-server was built without TLS support: %v", err)
		case strings.Contains(msg, "in use"):
			continue
		}
		break
	}
	t.Fatalf("start redis-server with TLS: %v", lastErr)
	return ""
}

func TestTLS(t *testing.T) {
	f := newTLSFiles(t)
	addr := startTLSServer(t, f)
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
				TLS:      &tls.Config{RootCAs: f.roots},
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
	f := newTLSFiles(t)
	addr := startTLSServer(t, f)
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
