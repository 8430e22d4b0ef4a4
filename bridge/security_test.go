package bridge

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/internal/testpki"
)

// TestSecurityConfigFailsClosed: a tls/ listen endpoint without a usable
// certificate, a bad dictionary, a half-set user, a bad access_control and
// a quic/ endpoint are refused, each naming its key (and file).
func TestSecurityConfigFailsClosed(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing.pem")
	bad := filepath.Join(t.TempDir(), "dict.txt")
	require.NoError(t, os.WriteFile(bad, []byte("x\n"), 0o600))
	for name, tc := range map[string]struct{ yaml, want string }{
		"no cert":     {"zenoh: {listen: [tls/127.0.0.1:0]}\n", "transport.link.tls.listen_certificate: tls listen_certificate: not set (needed by zenoh.listen[0] tls/127.0.0.1:0)"},
		"missing":     {"zenoh: {listen: [tls/127.0.0.1:0]}\ntransport: {link: {tls: {listen_certificate: " + missing + ", listen_private_key: " + missing + "}}}\n", "transport.link.tls.listen_certificate: tls listen_certificate \"" + missing + "\""},
		"dict":        {"transport: {auth: {usrpwd: {dictionary_file: " + bad + "}}}\n", "transport.auth.usrpwd.dictionary_file: usrpwd dictionary_file " + bad + ":1"},
		"half":        {"transport: {auth: {usrpwd: {user: dev}}}\n", "transport.auth.usrpwd.user: user and password must be set together"},
		"acl":         {"access_control: {enabled: true, rules: [{id: r, permission: maybe}]}\n", `access_control.rules[0].permission: "maybe" (allowed: allow, deny)`},
		"acl unknown": {"access_control: {enabled: true, rulez: []}\n", "access_control.rulez: unknown key"},
		"quic":        {"zenoh: {listen: [quic/127.0.0.1:7447]}\n", "zenoh.listen[0]: QUIC links are not supported"},
	} {
		_, err := ParseConfig("pb.yaml", []byte(tc.yaml))
		require.ErrorContains(t, err, tc.want, name)
	}
}

func TestSecurityConfig(t *testing.T) {
	ca := testpki.NewCA(t, "bridge CA")
	srv := ca.Issue(t, "gateway", "127.0.0.1")
	dict := filepath.Join(t.TempDir(), "users.txt")
	require.NoError(t, os.WriteFile(dict, []byte("arm:pw\n"), 0o600))
	y := "zenoh: {listen: [tls/127.0.0.1:0]}\n" +
		"transport: {link: {tls: {root_ca_certificate: " + ca.File + ", listen_certificate: " + srv.CertFile + ", listen_private_key: " + srv.KeyFile + ", enable_mtls: true}}, auth: {usrpwd: {dictionary_file: " + dict + "}}}\n" +
		"devices: {list: [{name: arm, zid: 0a0b}]}\n" +
		"access_control: {enabled: true, default_permission: deny, rules: [{id: r, permission: allow, messages: [put], key_exprs: ['arm/**']}], subjects: [{id: s, devices: [arm]}], policies: [{rules: [r], subjects: [s]}]}\n"
	c, err := ParseConfig("pb.yaml", []byte(y))
	require.NoError(t, err)
	sec, err := c.Security()
	require.NoError(t, err)
	require.True(t, sec.TLS.EnableMTLS)
	require.Equal(t, srv.CertFile, sec.TLS.ListenCertificate)
	require.True(t, *sec.TLS.VerifyNameOnConnect, "verify_name_on_connect defaults to true")
	require.Equal(t, map[string]string{"arm": "pw"}, sec.UsrPwd.Dictionary)
	require.NotNil(t, sec.ACL)

	d, err := DefaultConfig().Security()
	require.NoError(t, err)
	require.Nil(t, d.UsrPwd)
	require.Nil(t, d.ACL)
}
