// Package testpki makes throw-away X.509 certificates for tests at run
// time (crypto/x509, ECDSA P-256, PKCS#8 PEM keys), so that no private key
// is ever committed. Nothing here is for production use.
package testpki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// CA is a self-signed certificate authority.
type CA struct {
	Cert *x509.Certificate
	Key  *ecdsa.PrivateKey
	// File is the CA certificate as a PEM file (in the test's temp dir).
	File string
	dir  string
}

// NewCA makes a CA named cn and writes its certificate to a PEM file in
// t.TempDir().
func NewCA(t testing.TB, cn string) *CA {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber:          serial(t),
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatalf("testpki: CA: %v", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatalf("testpki: CA: %v", err)
	}
	ca := &CA{Cert: cert, Key: key, dir: t.TempDir()}
	ca.File = ca.write(t, safe(cn)+"-ca.pem", pemBlock("CERTIFICATE", der))
	return ca
}

// Leaf is an issued certificate and its key, as PEM files.
type Leaf struct {
	CertFile, KeyFile string
}

// Issue makes a certificate for subject common name cn, usable for both
// TLS server and client authentication, with the given subject alternative
// names: IP literals become IP SANs, "uri:..." URI SANs, the rest DNS names.
func (ca *CA) Issue(t testing.TB, cn string, sans ...string) Leaf {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber: serial(t),
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	for _, s := range sans {
		if ip := net.ParseIP(s); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else if u, ok := strings.CutPrefix(s, "uri:"); ok {
			pu, err := url.Parse(u)
			if err != nil {
				t.Fatalf("testpki: SAN %q: %v", s, err)
			}
			tmpl.URIs = append(tmpl.URIs, pu)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, s)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.Key)
	if err != nil {
		t.Fatalf("testpki: issue %s: %v", cn, err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatalf("testpki: key: %v", err)
	}
	n := safe(cn) + "-" + serialString(tmpl.SerialNumber)
	return Leaf{
		CertFile: ca.write(t, n+"-cert.pem", pemBlock("CERTIFICATE", der)),
		KeyFile:  ca.write(t, n+"-key.pem", pemBlock("PRIVATE KEY", kder)),
	}
}

func (ca *CA) write(t testing.TB, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(ca.dir, name)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatalf("testpki: %v", err)
	}
	return p
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("testpki: key: %v", err)
	}
	return k
}

func serial(t testing.TB) *big.Int {
	t.Helper()
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		t.Fatalf("testpki: serial: %v", err)
	}
	return n
}

func serialString(n *big.Int) string { return n.Text(36) }

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

func safe(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '.' {
			return r
		}
		return '_'
	}, s)
}
