package zenohpath_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/internal/interop"
	"github.com/picobridge/picobridge/internal/testpki"
	"github.com/picobridge/picobridge/zenohpath"
	"github.com/picobridge/picobridge/zenohpath/transport"
)

// Security interop with real Rust Zenoh (Python eclipse-zenoh): TLS, mutual
// TLS and usrpwd in both directions, and the refusals (wrong CA, missing
// client certificate, wrong password). Certificates are made at run time.

// pki is a CA with a server certificate for 127.0.0.1/localhost, a client
// certificate for device "dev-7", and an unrelated CA.
type pki struct {
	ca, other      *testpki.CA
	server, dev    testpki.Leaf
	otherDev       testpki.Leaf
	serverTLS      transport.TLSConfig
	mtlsServerTLS  transport.TLSConfig
	pyTLS, pyMTLS  []string // zpeer --cfg flags for a Python client
	pyOtherCA      []string
	pyMTLSOtherDev []string
}

func newPKI(t *testing.T) *pki {
	p := &pki{ca: testpki.NewCA(t, "interop CA"), other: testpki.NewCA(t, "other CA")}
	p.server = p.ca.Issue(t, "gateway", "127.0.0.1", "localhost")
	p.dev = p.ca.Issue(t, "dev-7", "dev-7.fleet")
	p.otherDev = p.other.Issue(t, "dev-7")
	p.serverTLS = transport.TLSConfig{RootCACertificate: p.ca.File, ListenCertificate: p.server.CertFile, ListenPrivateKey: p.server.KeyFile}
	p.mtlsServerTLS = p.serverTLS
	p.mtlsServerTLS.EnableMTLS = true
	q := strconv.Quote
	p.pyTLS = []string{"--cfg", "transport/link/tls/root_ca_certificate=" + q(p.ca.File)}
	p.pyOtherCA = []string{"--cfg", "transport/link/tls/root_ca_certificate=" + q(p.other.File)}
	mtls := func(l testpki.Leaf) []string {
		return append(append([]string{}, p.pyTLS...),
			"--cfg", "transport/link/tls/enable_mtls=true",
			"--cfg", "transport/link/tls/connect_certificate="+q(l.CertFile),
			"--cfg", "transport/link/tls/connect_private_key="+q(l.KeyFile))
	}
	p.pyMTLS = mtls(p.dev)
	p.pyMTLSOtherDev = mtls(p.otherDev)
	return p
}

func secureRouter(t *testing.T, tcfg transport.Config, ep string) (*zenohpath.Router, string) {
	t.Helper()
	r := zenohpath.NewRouter(zenohpath.RouterConfig{Logger: testLogger(t), Transport: tcfg})
	t.Cleanup(func() { require.NoError(t, r.Close()) })
	ln, err := r.Listen(context.Background(), ep)
	require.NoError(t, err)
	return r, ln.Endpoint()
}

// pySubGoPub checks that n samples from a Go in-process session reach a
// Python subscriber connected with extra flags.
func pySubGoPub(t *testing.T, r *zenohpath.Router, ep string, extra ...string) {
	t.Helper()
	pySubGoPubWhile(t, r, ep, nil, extra...)
}

// pySubGoPubWhile is pySubGoPub that calls connected, when not nil, once the
// Python subscriber's declaration has reached the router and before the first
// put: its face is certain to exist then (it goes when the subscriber exits,
// which may be a millisecond after the last put).
func pySubGoPubWhile(t *testing.T, r *zenohpath.Router, ep string, connected func(), extra ...string) {
	t.Helper()
	const n = 200
	key := "sec/" + strings.ReplaceAll(t.Name(), "/", "_")
	args := append([]string{"sub", key, "--connect", ep, "--count", strconv.Itoa(n), "--timeout", interop.Seconds(30 * time.Second), "--quiet"}, extra...)
	sub := interop.StartReady(t, args...)
	s, err := zenohpath.Open(context.Background(), zenohpath.Config{Router: r})
	require.NoError(t, err)
	defer s.Close()
	pub, err := s.DeclarePublisher(key, zenohpath.PublisherOptions{CongestionControl: zenohpath.CongestionControlBlock})
	require.NoError(t, err)
	eventually(t, "python subscriber", 10*time.Second, pub.HasMatchingSubscribers)
	if connected != nil {
		connected()
	}
	for i := range n {
		require.NoError(t, pub.Put(zpqPayload(uint64(i), 64), nil))
	}
	var sum interop.SubSummary
	require.NoError(t, sub.WaitEvent("done", 30*time.Second).Decode(&sum))
	require.True(t, sum.Complete, "%+v", sum)
	require.Equal(t, n, sum.Unique)
}

// pyRefused checks that a Python client with these flags cannot open a
// session to ep (zenoh.open fails: the router refused it).
func pyRefused(t *testing.T, ep string, extra ...string) string {
	t.Helper()
	p := interop.Start(t, append([]string{"sub", "sec/refused", "--connect", ep, "--count", "1", "--timeout", "5"}, extra...)...)
	e := p.WaitEvent("error", 30*time.Second)
	var ev struct{ Msg string }
	require.NoError(t, e.Decode(&ev))
	require.Contains(t, ev.Msg, "open:", "refused where the session opens")
	require.Zero(t, p.Count("ready"))
	return ev.Msg
}

func TestInteropTLS(t *testing.T) {
	skipShort(t)
	interop.FindPython(t)
	p := newPKI(t)

	t.Run("tls", func(t *testing.T) {
		r, ep := secureRouter(t, transport.Config{TLS: &p.serverTLS}, "tls/127.0.0.1:0")
		pySubGoPub(t, r, ep, p.pyTLS...)
		// The same by name: localhost is a DNS SAN of the server certificate.
		pySubGoPub(t, r, strings.Replace(ep, "127.0.0.1", "localhost", 1), p.pyTLS...)
		t.Logf("wrong CA: %s", pyRefused(t, ep, p.pyOtherCA...))
		require.Empty(t, r.Faces())
	})

	t.Run("mtls", func(t *testing.T) {
		r, ep := secureRouter(t, transport.Config{TLS: &p.mtlsServerTLS}, "tls/127.0.0.1:0")
		// While the Python subscriber is connected, its face carries the
		// certificate's CN.
		pySubGoPubWhile(t, r, ep, func() {
			var ids []string
			for _, f := range r.Faces() {
				ids = append(ids, f.AuthID)
			}
			require.Contains(t, ids, "dev-7", "no face with the client certificate's CN dev-7")
		}, p.pyMTLS...)
		t.Logf("no client certificate: %s", pyRefused(t, ep, p.pyTLS...))
		t.Logf("client certificate from another CA: %s", pyRefused(t, ep, p.pyMTLSOtherDev...))
	})

	t.Run("go_client_python_tls_router", func(t *testing.T) {
		ep := fmt.Sprintf("tls/127.0.0.1:%d", interop.FreePort(t))
		cfg := []string{
			"--cfg", "transport/link/tls/listen_certificate=" + strconv.Quote(p.server.CertFile),
			"--cfg", "transport/link/tls/listen_private_key=" + strconv.Quote(p.server.KeyFile),
			"--cfg", "transport/link/tls/root_ca_certificate=" + strconv.Quote(p.ca.File),
			"--cfg", "transport/link/tls/enable_mtls=true",
		}
		interop.StartReady(t, append([]string{"router", "--listen", ep}, cfg...)...)
		sub := interop.StartReady(t, append([]string{"sub", "sec/gotls", "--connect", ep, "--count", "1", "--timeout", interop.Seconds(30 * time.Second)}, p.pyMTLS...)...)
		ctx, cancel := context.WithTimeout(context.Background(), interop.Scale(10*time.Second))
		defer cancel()
		cc := transport.TLSConfig{RootCACertificate: p.ca.File, EnableMTLS: true, ConnectCertificate: p.dev.CertFile, ConnectPrivateKey: p.dev.KeyFile}
		s, err := zenohpath.Open(ctx, zenohpath.Config{Connect: []string{ep}, TLS: &cc})
		require.NoError(t, err)
		defer s.Close()
		pub, err := s.DeclarePublisher("sec/gotls", zenohpath.PublisherOptions{})
		require.NoError(t, err)
		eventually(t, "python subscriber", 10*time.Second, pub.HasMatchingSubscribers)
		require.NoError(t, pub.Put([]byte("over tls"), nil))
		sub.WaitEvent("sample", 10*time.Second)
		// The Rust router refuses the Go client without a certificate.
		ctx2, cancel2 := context.WithTimeout(context.Background(), interop.Scale(10*time.Second))
		defer cancel2()
		noCert := transport.TLSConfig{RootCACertificate: p.ca.File}
		_, err = zenohpath.Open(ctx2, zenohpath.Config{Connect: []string{ep}, TLS: &noCert})
		require.Error(t, err)
		t.Logf("Go client without certificate: %v", err)
	})
}

func writeDict(t *testing.T, lines string) string {
	p := filepath.Join(t.TempDir(), "dict.txt")
	require.NoError(t, os.WriteFile(p, []byte(lines), 0o600))
	return p
}

func TestInteropUsrPwd(t *testing.T) {
	skipShort(t)
	interop.FindPython(t)
	creds := func(u, pw string) []string {
		return []string{"--cfg", "transport/auth/usrpwd/user=" + strconv.Quote(u), "--cfg", "transport/auth/usrpwd/password=" + strconv.Quote(pw)}
	}

	t.Run("python_client_go_router", func(t *testing.T) {
		dict, err := transport.LoadUsrPwdDictionary(writeDict(t, "dev-7:s3cret:x\nops:pw\n"))
		require.NoError(t, err)
		r, ep := secureRouter(t, transport.Config{UsrPwd: &transport.UsrPwdConfig{Dictionary: dict}}, "tcp/127.0.0.1:0")
		pySubGoPub(t, r, ep, creds("dev-7", "s3cret:x")...)
		t.Logf("wrong password: %s", pyRefused(t, ep, creds("dev-7", "wrong")...))
		t.Logf("unknown user: %s", pyRefused(t, ep, creds("mallory", "s3cret:x")...))
		t.Logf("no credentials: %s", pyRefused(t, ep))
	})

	t.Run("go_client_python_router", func(t *testing.T) {
		ep := interop.FreeEndpoint(t)
		dict := writeDict(t, "robot:pw1\n")
		interop.StartReady(t, "router", "--listen", ep, "--cfg", "transport/auth/usrpwd/dictionary_file="+strconv.Quote(dict))
		sub := interop.StartReady(t, append([]string{"sub", "sec/gousr", "--connect", ep, "--count", "1", "--timeout", interop.Seconds(30 * time.Second)}, creds("robot", "pw1")...)...)
		open := func(pw string) (*zenohpath.Session, error) {
			ctx, cancel := context.WithTimeout(context.Background(), interop.Scale(10*time.Second))
			defer cancel()
			return zenohpath.Open(ctx, zenohpath.Config{Connect: []string{ep}, UsrPwd: &transport.UsrPwdConfig{User: "robot", Password: pw}})
		}
		s, err := open("pw1")
		require.NoError(t, err)
		defer s.Close()
		// Put only once the router has declared the Python subscriber to
		// this session: "ready" says the subscriber was declared on its
		// own session, not that the router has it yet, and a put the
		// router routes before that reaches nobody (failed 3 times at load
		// 4 without this wait, as the TLS case above already waits).
		pub, err := s.DeclarePublisher("sec/gousr", zenohpath.PublisherOptions{})
		require.NoError(t, err)
		eventually(t, "python subscriber", 10*time.Second, pub.HasMatchingSubscribers)
		require.NoError(t, pub.Put([]byte("authenticated"), nil))
		sub.WaitEvent("sample", 10*time.Second)
		_, err = open("pw2")
		require.ErrorContains(t, err, "CLOSE")
		t.Logf("Go client, wrong password: %v", err)
	})
}
