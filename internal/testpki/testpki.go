// Package testpki makes throw-away X.509 certificates for tests and
// benchmarks at run time (crypto/x509, ECDSA P-256, PKCS#8 PEM keys), so
// that no private key is ever committed. Nothing here is for production use.
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

// TB is the part of testing.TB the helpers use. Taking it, not testing.TB,
// keeps the testing package out of the binaries that use NewCAIn and IssueE
// (eval/zbench, eval/runner).
type TB interface {
	Helper()
	TempDir() string
	Fatalf(format string, args ...any)
}

// NewCA makes a CA named cn and writes its certificate to a PEM file in
// t.TempDir().
func NewCA(t TB, cn string) *CA {
	t.Helper()
	ca, err := NewCAIn(t.TempDir(), cn)
	if err != nil {
		t.Fatalf("testpki: %v", err)
	}
	return ca
}

// NewCAIn is NewCA writing into dir, for code that is not a test.
func NewCAIn(dir, cn string) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	sn, err := serial()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          sn,
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	ca := &CA{Cert: cert, Key: key, dir: dir}
	if ca.File, err = ca.write(safe(cn)+"-ca.pem", pemBlock("CERTIFICATE", der)); err != nil {
		return nil, err
	}
	return ca, nil
}

// Leaf is an issued certificate and its key, as PEM files.
type Leaf struct {
	CertFile, KeyFile string
}

// Issue makes a certificate for subject common name cn, usable for both
// TLS server and client authentication, with the given subject alternative
// names: IP literals become IP SANs, "uri:..." URI SANs, the rest DNS names.
func (ca *CA) Issue(t TB, cn string, sans ...string) Leaf {
	t.Helper()
	l, err := ca.IssueE(cn, sans...)
	if err != nil {
		t.Fatalf("testpki: issue %s: %v", cn, err)
	}
	return l
}

// IssueE is Issue returning its error, for code that is not a test.
func (ca *CA) IssueE(cn string, sans ...string) (Leaf, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Leaf{}, err
	}
	sn, err := serial()
	if err != nil {
		return Leaf{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: sn,
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
				return Leaf{}, err
			}
			tmpl.URIs = append(tmpl.URIs, pu)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, s)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.Key)
	if err != nil {
		return Leaf{}, err
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return Leaf{}, err
	}
	n := safe(cn) + "-" + serialString(tmpl.SerialNumber)
	var l Leaf
	if l.CertFile, err = ca.write(n+"-cert.pem", pemBlock("CERTIFICATE", der)); err != nil {
		return Leaf{}, err
	}
	if l.KeyFile, err = ca.write(n+"-key.pem", pemBlock("PRIVATE KEY", kder)); err != nil {
		return Leaf{}, err
	}
	return l, nil
}

func (ca *CA) write(name string, data []byte) (string, error) {
	p := filepath.Join(ca.dir, name)
	return p, os.WriteFile(p, data, 0o600)
}

func serial() (*big.Int, error) {
	return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
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
