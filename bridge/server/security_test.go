package server

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/internal/testpki"
	"github.com/picobridge/picobridge/zenohpath"
	"github.com/picobridge/picobridge/zenohpath/transport"
)

// TestDeviceNamedByAuthentication: over mutual TLS with usrpwd, a session
// whose user (arm-1) or certificate CN (cam-2) is a devices.list name is
// attached as that device, without a probe responder or a configured ZID;
// a session with no such name stays a plain client.
func TestDeviceNamedByAuthentication(t *testing.T) {
	ca := testpki.NewCA(t, "server CA")
	srv := ca.Issue(t, "gateway", "127.0.0.1")
	cam := ca.Issue(t, "cam-2")
	other := ca.Issue(t, "laptop")
	dict := filepath.Join(t.TempDir(), "users.txt")
	require.NoError(t, os.WriteFile(dict, []byte("arm-1:pw\nops:pw\n"), 0o600))
	s := startTestServer(t, `
zenoh:
  listen: [tls/127.0.0.1:0]
transport:
  link:
    tls: {root_ca_certificate: `+ca.File+`, listen_certificate: `+srv.CertFile+`, listen_private_key: `+srv.KeyFile+`, enable_mtls: true}
  auth:
    usrpwd: {dictionary_file: `+dict+`}
devices:
  list: [{name: arm-1, platform: generic}, {name: cam-2, platform: generic}]
metrics:
  listen: ""
`)
	ep := s.Endpoints()[0]
	open := func(leaf testpki.Leaf, user string) *zenohpath.Session {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		z, err := zenohpath.Open(ctx, zenohpath.Config{Connect: []string{ep},
			TLS:    &transport.TLSConfig{RootCACertificate: ca.File, EnableMTLS: true, ConnectCertificate: leaf.CertFile, ConnectPrivateKey: leaf.KeyFile},
			UsrPwd: &transport.UsrPwdConfig{User: user, Password: "pw"}})
		require.NoError(t, err)
		t.Cleanup(func() { _ = z.Close() })
		return z
	}
	open(other, "arm-1") // user names the device, the certificate does not
	open(cam, "ops")     // the certificate CN names the device
	open(other, "ops")   // neither: a plain client
	eventually(t, "both devices attached", func() bool {
		return s.Gateway().Device("arm-1") != nil && s.Gateway().Device("cam-2") != nil
	})
	eventually(t, "three faces", func() bool { return len(s.Router().Faces()) >= 5 })
	time.Sleep(50 * time.Millisecond)
	require.Len(t, s.Gateway().Devices(), 2)
}
