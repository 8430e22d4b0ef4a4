package transport

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/internal/testpki"
	"github.com/picobridge/picobridge/zenohpath/wire"
)

// tlsFixture is a CA, a server certificate for 127.0.0.1 / localhost and
// a device client certificate (CN dev-7, SAN dev-7.fleet).
type tlsFixture struct {
	ca           *testpki.CA
	server, dev  testpki.Leaf
	other        *testpki.CA // an unrelated CA
	otherDev     testpki.Leaf
	serverConfig TLSConfig
}

func newTLSFixture(t *testing.T) *tlsFixture {
	f := &tlsFixture{ca: testpki.NewCA(t, "picobridge test CA"), other: testpki.NewCA(t, "other CA")}
	f.server = f.ca.Issue(t, "gateway", "127.0.0.1", "localhost")
	f.dev = f.ca.Issue(t, "dev-7", "dev-7.fleet")
	f.otherDev = f.other.Issue(t, "dev-7", "dev-7.fleet")
	f.serverConfig = TLSConfig{RootCACertificate: f.ca.File, ListenCertificate: f.server.CertFile, ListenPrivateKey: f.server.KeyFile}
	return f
}

func (f *tlsFixture) mtlsServer() TLSConfig {
	c := f.serverConfig
	c.EnableMTLS = true
	return c
}

func (f *tlsFixture) client(leaf *testpki.Leaf) TLSConfig {
	c := TLSConfig{RootCACertificate: f.ca.File}
	if leaf != nil {
		c.EnableMTLS = true
		c.ConnectCertificate, c.ConnectPrivateKey = leaf.CertFile, leaf.KeyFile
	}
	return c
}

// tlsListen starts a tls/ Listener that hands every accepted session to
// the returned channel.
func tlsListen(t *testing.T, sc TLSConfig, m *Metrics) (*Listener, chan *Session) {
	t.Helper()
	lc := testConfig()
	lc.TLS = &sc
	lc.Metrics = m
	acc := make(chan *Session, 4)
	ln, err := Listen(context.Background(), "tls/127.0.0.1:0", lc, func(s *Session) Handler {
		acc <- s
		return newRecorder()
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	require.True(t, strings.HasPrefix(ln.Endpoint(), "tls/127.0.0.1:"), ln.Endpoint())
	return ln, acc
}

func tlsDial(ep string, cc TLSConfig, h Handler) (*Session, error) {
	dc := testConfig()
	dc.WhatAmI = wire.WhatAmIClient
	dc.TLS = &cc
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return Dial(ctx, ep, dc, h)
}

func TestTLSSessionCarriesMessages(t *testing.T) {
	f := newTLSFixture(t)
	ln, acc := tlsListen(t, f.serverConfig, nil)
	crec := newRecorder()
	c, err := tlsDial(ln.Endpoint(), f.client(nil), crec)
	require.NoError(t, err)
	defer func() { _ = c.Close(ReasonShutdown); <-c.Done() }()
	s := <-acc
	// Plain TLS: the server knows no client certificate; the client knows
	// the server's.
	require.Equal(t, Identity{LinkProtocol: "tls"}, s.Identity())
	require.Equal(t, "gateway", c.Identity().CertCommonName)
	require.Equal(t, []string{"localhost"}, c.Identity().CertNames)
	require.Equal(t, "tls", c.Identity().LinkProtocol)
	// Messages both ways, a large one fragmented.
	big := make([]byte, 200_000)
	for i := range big {
		big[i] = byte(i)
	}
	require.NoError(t, s.Send(push("a/b", []byte("hello")), SendOptions{Reliable: true}))
	require.NoError(t, s.Send(push("a/big", big), SendOptions{Reliable: true}))
	m := crec.next(t, 5*time.Second)
	require.Equal(t, "a/b", m.key)
	require.Equal(t, []byte("hello"), m.payload)
	m = crec.next(t, 5*time.Second)
	require.Equal(t, "a/big", m.key)
	require.Equal(t, big, m.payload)
	// The session's socket is still reachable for TCP_INFO.
	_, ok := s.TCPConn()
	require.True(t, ok)
}

func TestMutualTLSIdentifiesTheClient(t *testing.T) {
	f := newTLSFixture(t)
	ln, acc := tlsListen(t, f.mtlsServer(), nil)
	c, err := tlsDial(ln.Endpoint(), f.client(&f.dev), newRecorder())
	require.NoError(t, err)
	defer func() { _ = c.Close(ReasonShutdown); <-c.Done() }()
	s := <-acc
	require.Equal(t, Identity{LinkProtocol: "tls", CertCommonName: "dev-7", CertNames: []string{"dev-7.fleet"}}, s.Identity())
	require.Equal(t, []string{"dev-7", "dev-7.fleet"}, s.Identity().Names())
}

// TestMutualTLSRefusesBadClients: no client certificate, or one from
// another CA, fails that link's TLS handshake (counted reason tls); the
// listener goes on serving a good client.
func TestMutualTLSRefusesBadClients(t *testing.T) {
	f := newTLSFixture(t)
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	require.NoError(t, err)
	ln, acc := tlsListen(t, f.mtlsServer(), m)

	noCert := f.client(nil)
	_, err = tlsDial(ln.Endpoint(), noCert, newRecorder())
	require.Error(t, err, "mTLS server accepted a client without a certificate")
	wrongCA := f.client(&f.otherDev)
	_, err = tlsDial(ln.Endpoint(), wrongCA, newRecorder())
	require.Error(t, err, "mTLS server accepted a certificate from another CA")

	require.Eventually(t, func() bool {
		return testutil.ToFloat64(m.hsFailed.WithLabelValues(hsTLS)) == 2
	}, 10*time.Second, 10*time.Millisecond)
	require.Empty(t, acc)

	c, err := tlsDial(ln.Endpoint(), f.client(&f.dev), newRecorder())
	require.NoError(t, err)
	_ = c.Close(ReasonShutdown)
	<-c.Done()
	require.Equal(t, "dev-7", (<-acc).Identity().CertCommonName)
}

func TestTLSClientVerifiesServer(t *testing.T) {
	f := newTLSFixture(t)
	ln, _ := tlsListen(t, f.serverConfig, nil)
	// A client that trusts another CA refuses the server.
	_, err := tlsDial(ln.Endpoint(), TLSConfig{RootCACertificate: f.other.File}, newRecorder())
	require.ErrorIs(t, err, errTLSHandshake)
	require.ErrorContains(t, err, "certificate")

	// Name check: the server's certificate does not name 127.0.0.2.
	wrongName := f.ca.Issue(t, "gateway", "gateway.example")
	sc := f.serverConfig
	sc.ListenCertificate, sc.ListenPrivateKey = wrongName.CertFile, wrongName.KeyFile
	ln2, acc := tlsListen(t, sc, nil)
	_, err = tlsDial(ln2.Endpoint(), f.client(nil), newRecorder())
	require.ErrorContains(t, err, "127.0.0.1")
	// verify_name_on_connect=false: the chain is still checked, the name not.
	noName := false
	cc := f.client(nil)
	cc.VerifyNameOnConnect = &noName
	c, err := tlsDial(ln2.Endpoint(), cc, newRecorder())
	require.NoError(t, err)
	_ = c.Close(ReasonShutdown)
	<-c.Done()
	<-acc
	cc.RootCACertificate = f.other.File
	_, err = tlsDial(ln2.Endpoint(), cc, newRecorder())
	require.ErrorContains(t, err, "unknown authority")
	// The endpoint's #config overrides the global configuration (zenohd).
	c, err = tlsDial(ln2.Endpoint()+"#verify_name_on_connect=false;root_ca_certificate_file="+f.ca.File, f.client(nil), newRecorder())
	require.NoError(t, err)
	_ = c.Close(ReasonShutdown)
	<-c.Done()
}

// TestTLSListenFailsClosed: without a usable certificate or key there is
// no listener, and the error names the key and the file.
func TestTLSListenFailsClosed(t *testing.T) {
	f := newTLSFixture(t)
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.pem")
	require.NoError(t, os.WriteFile(garbage, []byte("not a certificate\n"), 0o600))
	missing := filepath.Join(dir, "missing.pem")
	for name, tc := range map[string]struct {
		cfg  *TLSConfig
		ep   string
		want []string
	}{
		"no config":        {nil, "tls/127.0.0.1:0", []string{"listen_certificate", "not set"}},
		"missing cert":     {&TLSConfig{ListenCertificate: missing, ListenPrivateKey: f.server.KeyFile}, "tls/127.0.0.1:0", []string{"listen_certificate", missing, "no such file"}},
		"missing key":      {&TLSConfig{ListenCertificate: f.server.CertFile, ListenPrivateKey: missing}, "tls/127.0.0.1:0", []string{"listen_private_key", missing}},
		"cert is a dir":    {&TLSConfig{ListenCertificate: dir, ListenPrivateKey: f.server.KeyFile}, "tls/127.0.0.1:0", []string{"listen_certificate", dir}},
		"garbage key":      {&TLSConfig{ListenCertificate: f.server.CertFile, ListenPrivateKey: garbage}, "tls/127.0.0.1:0", []string{"listen_private_key", garbage}},
		"key of other":     {&TLSConfig{ListenCertificate: f.server.CertFile, ListenPrivateKey: f.dev.KeyFile}, "tls/127.0.0.1:0", []string{"listen_certificate", "private key does not match"}},
		"mtls without CA":  {&TLSConfig{ListenCertificate: f.server.CertFile, ListenPrivateKey: f.server.KeyFile, EnableMTLS: true}, "tls/127.0.0.1:0", []string{"root_ca_certificate", "enable_mtls"}},
		"mtls garbage CA":  {&TLSConfig{ListenCertificate: f.server.CertFile, ListenPrivateKey: f.server.KeyFile, EnableMTLS: true, RootCACertificate: garbage}, "tls/127.0.0.1:0", []string{"root_ca_certificate", garbage, "no PEM certificate"}},
		"bad mtls param":   {&f.serverConfig, "tls/127.0.0.1:0#enable_mtls=maybe", []string{"enable_mtls", "maybe", "true or false"}},
		"param names file": {&f.serverConfig, "tls/127.0.0.1:0#listen_certificate_file=" + missing, []string{"listen_certificate", missing}},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := testConfig()
			cfg.TLS = tc.cfg
			ln, err := Listen(context.Background(), tc.ep, cfg, func(*Session) Handler { return newRecorder() })
			if ln != nil {
				_ = ln.Close()
			}
			require.Error(t, err)
			for _, w := range tc.want {
				require.ErrorContains(t, err, w)
			}
		})
	}
	// The client side refuses too: mTLS without a certificate, before any I/O.
	_, err := tlsDial("tls/127.0.0.1:1", TLSConfig{EnableMTLS: true}, newRecorder())
	require.ErrorContains(t, err, "connect_certificate")
}

// TestTLSHandshakeBoundedByOpenTimeout: a client that connects and never
// starts TLS is dropped after OpenTimeout (counted as timeout).
func TestTLSHandshakeBoundedByOpenTimeout(t *testing.T) {
	f := newTLSFixture(t)
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	require.NoError(t, err)
	lc := testConfig()
	sc := f.serverConfig
	lc.TLS, lc.Metrics, lc.OpenTimeout = &sc, m, 200*time.Millisecond
	ln, err := Listen(context.Background(), "tls/127.0.0.1:0", lc, func(*Session) Handler { return newRecorder() })
	require.NoError(t, err)
	defer ln.Close()
	c, err := (netDialer{}).dial(ln.Addr().String())
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(10*time.Second)))
	_, err = c.Read(make([]byte, 1))
	require.Error(t, err, "the listener kept a silent TLS client")
	require.Eventually(t, func() bool { return testutil.ToFloat64(m.hsFailed.WithLabelValues(hsTimeout)) == 1 },
		10*time.Second, 10*time.Millisecond)
}
