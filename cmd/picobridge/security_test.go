package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/internal/interop"
	"github.com/picobridge/picobridge/internal/testpki"
	"github.com/picobridge/picobridge/zenohpath"
	"github.com/picobridge/picobridge/zenohpath/transport"
)

// TestRouterTLSUsrPwdACL: `picobridge router -l tls/...` with mutual TLS,
// usrpwd and access control from --cfg; a device with the right certificate
// and password publishes, one with a wrong password is refused, a put the
// ACL denies is dropped.
func TestRouterTLSUsrPwdACL(t *testing.T) {
	ca := testpki.NewCA(t, "cmd CA")
	srv := ca.Issue(t, "gateway", "127.0.0.1")
	dev := ca.Issue(t, "dev-7")
	dict := filepath.Join(t.TempDir(), "users.txt")
	require.NoError(t, os.WriteFile(dict, []byte("dev-7:pw\n"), 0o600))
	o := routerOptions{listen: []string{"tls/127.0.0.1:0"}, lease: 10 * time.Second, batch: 65535, maxMsg: 1 << 20, logLevel: "info",
		cfg: []string{
			"transport/link/tls/root_ca_certificate:" + ca.File,
			"transport/link/tls/listen_certificate:" + srv.CertFile,
			`transport/link/tls/listen_private_key:"` + srv.KeyFile + `"`,
			"transport/link/tls/enable_mtls:true",
			"transport.auth.usrpwd.dictionary_file:" + dict,
			`access_control:{"enabled":true,"default_permission":"allow","rules":[{"id":"r","permission":"deny","messages":["put"],"key_exprs":["robot/cmd/**"]}],` +
				`"subjects":[{"id":"dev","cert_common_names":["dev-7"],"usernames":["dev-7"]}],"policies":[{"rules":["r"],"subjects":["dev"]}]}`,
		}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	readyCh := make(chan *zenohpath.Router, 1)
	epCh := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- runRouter(ctx, o, &interop.SyncBuffer{}, func(r *zenohpath.Router, eps []string) { readyCh <- r; epCh <- eps[0] })
	}()
	var r *zenohpath.Router
	select {
	case r = <-readyCh:
	case err := <-done:
		t.Fatalf("router exited: %v", err)
	}
	ep := <-epCh
	open := func(pw string) (*zenohpath.Session, error) {
		c, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		return zenohpath.Open(c, zenohpath.Config{Connect: []string{ep},
			TLS:    &transport.TLSConfig{RootCACertificate: ca.File, EnableMTLS: true, ConnectCertificate: dev.CertFile, ConnectPrivateKey: dev.KeyFile},
			UsrPwd: &transport.UsrPwdConfig{User: "dev-7", Password: pw}})
	}
	_, err := open("wrong")
	require.ErrorContains(t, err, "CLOSE")
	s, err := open("pw")
	require.NoError(t, err)
	defer s.Close()
	local, err := zenohpath.Open(ctx, zenohpath.Config{Router: r})
	require.NoError(t, err)
	defer local.Close()
	sub, err := local.DeclareSubscriberChan("robot/**", 4)
	require.NoError(t, err)
	pub, err := s.DeclarePublisher("robot/state", zenohpath.PublisherOptions{})
	require.NoError(t, err)
	for !pub.HasMatchingSubscribers() {
		time.Sleep(5 * time.Millisecond)
	}
	require.NoError(t, s.Put("robot/cmd/vel", []byte("denied"), nil))
	require.NoError(t, pub.Put([]byte("allowed"), nil))
	select {
	case smp := <-sub.Samples():
		require.Equal(t, "robot/state", smp.KeyExpr())
	case <-time.After(10 * time.Second):
		t.Fatal("no sample")
	}
	var auth string
	for _, f := range r.Faces() {
		if f.AuthID != "" {
			auth = f.AuthID
		}
	}
	require.Equal(t, "dev-7", auth)
	cancel()
	require.NoError(t, <-done)
}

// TestRouterSecurityFlagsFailClosed: every bad security setting refuses
// the start, naming the key (and the file).
func TestRouterSecurityFlagsFailClosed(t *testing.T) {
	ca := testpki.NewCA(t, "cmd CA")
	srv := ca.Issue(t, "gateway", "127.0.0.1")
	missing := filepath.Join(t.TempDir(), "missing.pem")
	badDict := filepath.Join(t.TempDir(), "bad.txt")
	require.NoError(t, os.WriteFile(badDict, []byte("nopassword\n"), 0o600))
	base := routerOptions{listen: []string{"tls/127.0.0.1:0"}, lease: 10 * time.Second, batch: 65535, maxMsg: 1 << 20, logLevel: "info"}
	for name, tc := range map[string]struct {
		listen []string
		cfg    []string
		want   []string
	}{
		"no certificate":  {nil, nil, []string{"--cfg transport/link/tls/listen_certificate", "not set"}},
		"missing cert":    {nil, []string{"transport/link/tls/listen_certificate:" + missing, "transport/link/tls/listen_private_key:" + srv.KeyFile}, []string{"listen_certificate", missing, "no such file"}},
		"missing key":     {nil, []string{"transport/link/tls/listen_certificate:" + srv.CertFile, "transport/link/tls/listen_private_key:" + missing}, []string{"listen_private_key", missing}},
		"mtls without CA": {nil, []string{"transport/link/tls/listen_certificate:" + srv.CertFile, "transport/link/tls/listen_private_key:" + srv.KeyFile, "transport/link/tls/enable_mtls:true"}, []string{"root_ca_certificate"}},
		"endpoint param":  {[]string{"tls/127.0.0.1:0#listen_certificate_file=" + missing}, []string{"transport/link/tls/listen_private_key:" + srv.KeyFile}, []string{"listen_certificate", missing}},
		"bad bool":        {[]string{"tcp/127.0.0.1:0"}, []string{"transport/link/tls/enable_mtls:yes please"}, []string{"enable_mtls", "true or false"}},
		"half usrpwd":     {[]string{"tcp/127.0.0.1:0"}, []string{"transport/auth/usrpwd/user:dev"}, []string{"usrpwd", "together"}},
		"missing dict":    {[]string{"tcp/127.0.0.1:0"}, []string{"transport/auth/usrpwd/dictionary_file:" + missing}, []string{"dictionary_file", missing}},
		"bad dict":        {[]string{"tcp/127.0.0.1:0"}, []string{"transport/auth/usrpwd/dictionary_file:" + badDict}, []string{badDict + ":1", "user:password"}},
		"acl json":        {[]string{"tcp/127.0.0.1:0"}, []string{"access_control:{enabled:true}"}, []string{"access_control", "JSON object"}},
		"acl unknown key": {[]string{"tcp/127.0.0.1:0"}, []string{`access_control:{"enabled":true,"rulez":[]}`}, []string{"access_control", "rulez"}},
		"acl bad rule":    {[]string{"tcp/127.0.0.1:0"}, []string{`access_control:{"enabled":true,"rules":[{"id":"x","permission":"deny","messages":["pub"],"key_exprs":["a"]}]}`}, []string{"access_control.rules[0].messages[0]", `"pub"`, "allowed: put"}},
		"quic":            {[]string{"quic/127.0.0.1:7447"}, nil, []string{"QUIC links are not supported", "tls/"}},
	} {
		t.Run(name, func(t *testing.T) {
			o := base
			if tc.listen != nil {
				o.listen = tc.listen
			}
			o.cfg = tc.cfg
			err := runRouter(context.Background(), o, &interop.SyncBuffer{}, func(*zenohpath.Router, []string) { t.Fatal("router started") })
			require.Error(t, err)
			for _, w := range tc.want {
				require.ErrorContains(t, err, w)
			}
		})
	}
}
