package launcher

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// TLS is a throwaway certificate authority and a server certificate it
// signed for 127.0.0.1 and localhost, as PEM files, for servers started
// with [Options.TLS] or [ClusterOptions.TLS]. One TLS may serve any number
// of servers. Make one with [NewTLS].
type TLS struct {
	// CAFile, CertFile and KeyFile are the CA certificate, the server
	// certificate and the server's private key (PKCS #8), PEM-encoded.
	CAFile, CertFile, KeyFile string
	// Roots holds the CA, for a client's tls.Config.RootCAs.
	Roots *x509.CertPool
}

// NewTLS generates an ECDSA P-256 CA and a server certificate valid for a
// day, for the IP address 127.0.0.1 and the name localhost, and writes them
// to dir (ca.crt, server.crt, server.key), which must exist.
func NewTLS(dir string) (*TLS, error) {
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("launcher: TLS: %w", err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "redisx launcher CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("launcher: TLS: CA: %w", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, fmt.Errorf("launcher: TLS: CA: %w", err)
	}
	srvKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("launcher: TLS: %w", err)
	}
	srvTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:     []string{"localhost"},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		// Cluster nodes also use the certificate as clients, on the bus
		// and for replication (tls-cluster, tls-replication).
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	srvDER, err := x509.CreateCertificate(rand.Reader, srvTmpl, ca, &srvKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("launcher: TLS: server certificate: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(srvKey)
	if err != nil {
		return nil, fmt.Errorf("launcher: TLS: %w", err)
	}
	t := &TLS{
		CAFile:   filepath.Join(dir, "ca.crt"),
		CertFile: filepath.Join(dir, "server.crt"),
		KeyFile:  filepath.Join(dir, "server.key"),
		Roots:    x509.NewCertPool(),
	}
	t.Roots.AddCert(ca)
	for _, f := range []struct {
		path string
		b    *pem.Block
	}{
		{t.CAFile, &pem.Block{Type: "CERTIFICATE", Bytes: caDER}},
		{t.CertFile, &pem.Block{Type: "CERTIFICATE", Bytes: srvDER}},
		{t.KeyFile, &pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}},
	} {
		if err := os.WriteFile(f.path, pem.EncodeToMemory(f.b), 0o600); err != nil {
			return nil, fmt.Errorf("launcher: TLS: %w", err)
		}
	}
	return t, nil
}

// ClientConfig returns a new tls.Config that trusts the CA.
func (t *TLS) ClientConfig() *tls.Config {
	return &tls.Config{RootCAs: t.Roots, MinVersion: tls.VersionTLS12}
}

// args returns the directives that make a server listen for TLS on port
// with t's certificate; clients are not asked for certificates.
func (t *TLS) args(port int) []string {
	return []string{
		"--tls-port", strconv.Itoa(port),
		"--tls-cert-file", t.CertFile,
		"--tls-key-file", t.KeyFile,
		"--tls-ca-cert-file", t.CAFile,
		"--tls-auth-clients", "no",
	}
}
