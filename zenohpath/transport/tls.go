package transport

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"time"
)

// TLSConfig configures tls/ links (zenoh-mesh-auth.md §4). Field names follow
// zenohd's transport.link.tls keys; every certificate and key is a PEM file
// path. The zero value is a TLS server that has no certificate (refused by
// Listen) and a client that trusts the system roots only.
//
// Framing on a TLS link is the TCP framing (u16 little-endian length
// prefix per batch) inside the TLS stream; no ALPN is offered or required
// (zenohd sets none).
type TLSConfig struct {
	// RootCACertificate (root_ca_certificate) is a PEM bundle of CA
	// certificates. A client trusts them in addition to the system roots
	// (as zenohd); a server with EnableMTLS verifies client certificates
	// against them only (required then).
	RootCACertificate string
	// ListenCertificate and ListenPrivateKey (listen_certificate,
	// listen_private_key) are the server's certificate chain and key
	// (PKCS#1, PKCS#8 or SEC1 PEM). Required to listen.
	ListenCertificate string
	ListenPrivateKey  string
	// EnableMTLS (enable_mtls): a server requires and verifies a client
	// certificate; a client presents ConnectCertificate. Both sides then
	// use TLS 1.3 only (as zenohd).
	EnableMTLS bool
	// ConnectCertificate and ConnectPrivateKey (connect_certificate,
	// connect_private_key) are the client's certificate and key, used only
	// with EnableMTLS (required then).
	ConnectCertificate string
	ConnectPrivateKey  string
	// VerifyNameOnConnect (verify_name_on_connect): a client checks the
	// server certificate against the endpoint's host (DNS name or IP SAN).
	// nil means true (zenohd's default); false still verifies the chain
	// against the trust store.
	VerifyNameOnConnect *bool
}

// TLS configuration keys, as zenohd names them under transport.link.tls
// (and, with a _file suffix for the paths, in an endpoint's #config).
const (
	KeyRootCA             = "root_ca_certificate"
	KeyListenCertificate  = "listen_certificate"
	KeyListenPrivateKey   = "listen_private_key"
	KeyEnableMTLS         = "enable_mtls"
	KeyConnectCertificate = "connect_certificate"
	KeyConnectPrivateKey  = "connect_private_key"
	KeyVerifyName         = "verify_name_on_connect"
)

// TLSConfigError is a TLS configuration problem: Key is the configuration
// key (KeyRootCA, ...), File the file it names ("" when none), Err the cause.
type TLSConfigError struct {
	Key  string
	File string
	Err  error
}

func (e *TLSConfigError) Error() string {
	if e.File == "" {
		return fmt.Sprintf("tls %s: %v", e.Key, e.Err)
	}
	return fmt.Sprintf("tls %s %q: %v", e.Key, e.File, e.Err)
}

func (e *TLSConfigError) Unwrap() error { return e.Err }

// verifyName reports VerifyNameOnConnect with its default (true).
func (c *TLSConfig) verifyName() bool {
	return c == nil || c.VerifyNameOnConnect == nil || *c.VerifyNameOnConnect
}

// withParams returns c with the endpoint's #config keys applied over it
// (zenohd: the endpoint's own configuration wins): root_ca_certificate_file,
// listen_certificate_file, listen_private_key_file, connect_certificate_file,
// connect_private_key_file, enable_mtls, verify_name_on_connect.
func (c *TLSConfig) withParams(p map[string]string) (*TLSConfig, error) {
	var out TLSConfig
	if c != nil {
		out = *c
	}
	for k, v := range p {
		var err error
		switch k {
		case KeyRootCA + "_file":
			out.RootCACertificate = v
		case KeyListenCertificate + "_file":
			out.ListenCertificate = v
		case KeyListenPrivateKey + "_file":
			out.ListenPrivateKey = v
		case KeyConnectCertificate + "_file":
			out.ConnectCertificate = v
		case KeyConnectPrivateKey + "_file":
			out.ConnectPrivateKey = v
		case KeyEnableMTLS:
			out.EnableMTLS, err = strconv.ParseBool(v)
		case KeyVerifyName:
			var b bool
			b, err = strconv.ParseBool(v)
			out.VerifyNameOnConnect = &b
		}
		if err != nil {
			return nil, &TLSConfigError{Key: k, Err: fmt.Errorf("%q: want true or false", v)}
		}
	}
	return &out, nil
}

func readPEM(key, file string) ([]byte, error) {
	if file == "" {
		return nil, &TLSConfigError{Key: key, Err: errors.New("not set")}
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, &TLSConfigError{Key: key, File: file, Err: err}
	}
	return b, nil
}

func loadPool(key, file string, pool *x509.CertPool) (*x509.CertPool, error) {
	b, err := readPEM(key, file)
	if err != nil {
		return nil, err
	}
	if pool == nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(b) {
		return nil, &TLSConfigError{Key: key, File: file, Err: errors.New("no PEM certificate in the file")}
	}
	return pool, nil
}

func loadKeyPair(certKey, certFile, keyKey, keyFile string) (tls.Certificate, error) {
	cb, err := readPEM(certKey, certFile)
	if err != nil {
		return tls.Certificate{}, err
	}
	kb, err := readPEM(keyKey, keyFile)
	if err != nil {
		return tls.Certificate{}, err
	}
	cert, err := tls.X509KeyPair(cb, kb)
	if err != nil {
		return tls.Certificate{}, &TLSConfigError{Key: certKey + "/" + keyKey, File: certFile + ", " + keyFile, Err: err}
	}
	return cert, nil
}

// ServerConfig builds the crypto/tls server configuration: the listen
// certificate and key (required), and with EnableMTLS the client CA pool
// (RootCACertificate, required) and TLS 1.3 only. A missing or unreadable
// file, or one without PEM content, gives a *TLSConfigError naming the key
// and the file.
func (c *TLSConfig) ServerConfig() (*tls.Config, error) {
	if c == nil {
		c = &TLSConfig{}
	}
	cert, err := loadKeyPair(KeyListenCertificate, c.ListenCertificate, KeyListenPrivateKey, c.ListenPrivateKey)
	if err != nil {
		return nil, err
	}
	tc := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if c.EnableMTLS {
		if c.RootCACertificate == "" {
			return nil, &TLSConfigError{Key: KeyRootCA, Err: errors.New("required when enable_mtls is true (client certificates are verified against it)")}
		}
		pool, err := loadPool(KeyRootCA, c.RootCACertificate, nil)
		if err != nil {
			return nil, err
		}
		tc.ClientCAs = pool
		tc.ClientAuth = tls.RequireAndVerifyClientCert
		tc.MinVersion = tls.VersionTLS13
	}
	return tc, nil
}

// ClientConfig builds the crypto/tls client configuration for a server
// named host (the endpoint's host: a DNS name, sent as SNI, or an IP
// literal, matched against IP SANs): trust store = system roots plus
// RootCACertificate; with EnableMTLS the connect certificate and key
// (required) and TLS 1.3 only; with VerifyNameOnConnect false the chain
// is verified but not the name. Errors are *TLSConfigError.
func (c *TLSConfig) ClientConfig(host string) (*tls.Config, error) {
	if c == nil {
		c = &TLSConfig{}
	}
	roots, err := x509.SystemCertPool()
	if err != nil || roots == nil {
		roots = x509.NewCertPool()
	}
	if c.RootCACertificate != "" {
		if roots, err = loadPool(KeyRootCA, c.RootCACertificate, roots); err != nil {
			return nil, err
		}
	}
	tc := &tls.Config{RootCAs: roots, ServerName: host, MinVersion: tls.VersionTLS12}
	if c.EnableMTLS {
		cert, err := loadKeyPair(KeyConnectCertificate, c.ConnectCertificate, KeyConnectPrivateKey, c.ConnectPrivateKey)
		if err != nil {
			return nil, err
		}
		tc.Certificates = []tls.Certificate{cert}
		tc.MinVersion = tls.VersionTLS13
	}
	if !c.verifyName() {
		// Chain against the trust store, any name (zenohd's
		// WebPkiVerifierAnyServerName).
		tc.InsecureSkipVerify = true
		tc.VerifyConnection = func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("tls: server sent no certificate")
			}
			inter := x509.NewCertPool()
			for _, ic := range cs.PeerCertificates[1:] {
				inter.AddCert(ic)
			}
			_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter})
			return err
		}
	}
	return tc, nil
}

// Identity is what authentication established about the remote end of a
// session: the link protocol, the peer certificate's subject common name
// and subject alternative names (TLS; on a server only with mutual TLS),
// and the usrpwd user name. The zero value is an anonymous tcp/udp peer.
type Identity struct {
	// LinkProtocol is "tcp", "udp" or "tls".
	LinkProtocol string
	// CertCommonName is the subject CN of the peer's leaf certificate
	// (zenohd's auth id for ACL cert_common_names).
	CertCommonName string
	// CertNames are the leaf certificate's SAN DNS names, e-mail addresses
	// and URIs.
	CertNames []string
	// User is the usrpwd user name the peer authenticated as ("" = none).
	User string
}

// Names returns the names that may identify the peer as a device, most
// specific first: User, CertCommonName, then CertNames (empty ones left out).
func (id Identity) Names() []string {
	var out []string
	for _, n := range append([]string{id.User, id.CertCommonName}, id.CertNames...) {
		if n != "" {
			out = append(out, n)
		}
	}
	return out
}

// certIdentity fills the certificate fields of id from a finished handshake.
func certIdentity(id *Identity, cs tls.ConnectionState) {
	if len(cs.PeerCertificates) == 0 {
		return
	}
	leaf := cs.PeerCertificates[0]
	id.CertCommonName = leaf.Subject.CommonName
	id.CertNames = append(id.CertNames, leaf.DNSNames...)
	id.CertNames = append(id.CertNames, leaf.EmailAddresses...)
	for _, u := range leaf.URIs {
		id.CertNames = append(id.CertNames, u.String())
	}
}

// errTLSHandshake marks a failed TLS handshake on an accepted link
// (counted as handshake_failures_total{reason="tls"}).
var errTLSHandshake = errors.New("tls handshake failed")

// serverHandshake runs the TLS handshake of an accepted link before
// INIT/OPEN, bounded by deadline. A client that presents no certificate,
// or one the root CA did not sign, fails here: only that link is closed.
func serverHandshake(tc *tls.Conn, deadline time.Time) error {
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	if err := tc.HandshakeContext(ctx); err != nil {
		return fmt.Errorf("%w: %w", errTLSHandshake, err)
	}
	return nil
}

// dialTLS wraps the dialled connection c in a TLS client (ClientConfig)
// and runs the handshake within ctx.
func dialTLS(ctx context.Context, c net.Conn, tc *tls.Config) (*tls.Conn, error) {
	conn := tls.Client(c, tc)
	if err := conn.HandshakeContext(ctx); err != nil {
		return nil, fmt.Errorf("%w: %w", errTLSHandshake, err)
	}
	return conn, nil
}

// netConnOf unwraps a TLS connection to its TCP connection (socket
// options, TCP_INFO); other connections are returned as they are.
func netConnOf(c net.Conn) net.Conn {
	if tc, ok := c.(*tls.Conn); ok {
		return tc.NetConn()
	}
	return c
}

// Identity is what authentication established about the peer (link
// protocol, TLS certificate names, usrpwd user). Fixed for the session's life.
func (s *Session) Identity() Identity { return s.p.ident }
