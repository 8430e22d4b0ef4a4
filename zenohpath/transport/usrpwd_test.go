package transport

import (
	"context"
	"encoding/hex"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/zenohpath/wire"
)

// TestUsrPwdWireBytes pins the encodings of zenoh-mesh-auth.md §3.2 (the
// constructed example: user usr1, password pwd1, nonce 0x0123456789abcdef).
func TestUsrPwdWireBytes(t *testing.T) {
	const nonce = 0x0123456789abcdef
	mac := usrpwdMAC(nonce, "pwd1")
	require.Equal(t, "37ac82a6c0840fc41cf1a88b0c40aa800834cd9ffd8a8ebb408026b4810b3a42", hex.EncodeToString(mac))
	enc := func(e wire.Ext) string { return hex.EncodeToString(e.Append(nil, false)) }
	require.Equal(t, "430102", enc(authExt(wire.Ext{Header: wire.ExtAuthUsrPwd})))
	require.Equal(t, "430a22ef9bafcdf8acd19101", enc(authExt(wire.Ext{Header: wire.ExtAuthUsrPwdNonce, Value: nonce})))
	body := appendUsrPwdOpen(nil, "usr1", mac)
	require.Equal(t, "4328422604757372312"+"0"+hex.EncodeToString(mac), enc(authExt(wire.Ext{Header: wire.ExtAuthUsrPwdOpen, Body: body})))

	user, err := checkUsrPwd(map[string]string{"usr1": "pwd1"}, nonce, body)
	require.NoError(t, err)
	require.Equal(t, "usr1", user)
	_, err = checkUsrPwd(map[string]string{"usr1": "other"}, nonce, body)
	require.ErrorContains(t, err, `wrong password for user "usr1"`)
	_, err = checkUsrPwd(map[string]string{"usr1": "pwd1"}, nonce+1, body)
	require.ErrorContains(t, err, "wrong password")
	_, err = checkUsrPwd(map[string]string{"usr2": "pwd1"}, nonce, body)
	require.ErrorContains(t, err, `unknown user "usr1"`)
}

func TestParseUsrPwdOpenRefuses(t *testing.T) {
	mac := make([]byte, 32)
	for name, b := range map[string][]byte{
		"empty":         nil,
		"empty user":    appendUsrPwdOpen(nil, "", mac),
		"short mac":     appendUsrPwdOpen(nil, "u", mac[:31]),
		"long mac":      wire.AppendBytes(wire.AppendBytes(nil, []byte("u")), make([]byte, 33)),
		"trailing":      append(appendUsrPwdOpen(nil, "u", mac), 0),
		"user too long": appendUsrPwdOpen(nil, string(make([]byte, 256)), mac),
		"length lie":    {0x05, 'u'},
		"vle overflow":  {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
	} {
		_, _, err := parseUsrPwdOpen(b)
		require.Error(t, err, name)
	}
}

func TestParseUsrPwdDictionary(t *testing.T) {
	d, err := ParseUsrPwdDictionary("dict.txt", []byte("  dev-7 : s3cr:et \n\n\r\nadmin:pw\n"))
	require.NoError(t, err)
	require.Equal(t, map[string]string{"dev-7": "s3cr:et", "admin": "pw"}, d)
	d, err = ParseUsrPwdDictionary("empty.txt", nil)
	require.NoError(t, err)
	require.NotNil(t, d)
	require.Empty(t, d)
	for _, bad := range []string{"nocolon\n", ":pw\n", "user:\n", "ok:1\nuser: \n"} {
		_, err := ParseUsrPwdDictionary("dict.txt", []byte(bad))
		require.ErrorContains(t, err, "dict.txt:", bad)
	}
	_, err = LoadUsrPwdDictionary("/nonexistent/dict.txt")
	require.ErrorContains(t, err, "/nonexistent/dict.txt")
	require.ErrorContains(t, (&UsrPwdConfig{User: "u"}).Validate(), "together")
	require.ErrorContains(t, (&UsrPwdConfig{Password: "p"}).Validate(), "together")
	require.NoError(t, (*UsrPwdConfig)(nil).Validate())
}

func usrpwdListen(t *testing.T, auth *UsrPwdConfig, m *Metrics) (*Listener, chan *Session) {
	t.Helper()
	lc := testConfig()
	lc.UsrPwd, lc.Metrics = auth, m
	acc := make(chan *Session, 4)
	ln, err := Listen(context.Background(), "tcp/127.0.0.1:0", lc, func(s *Session) Handler {
		acc <- s
		return newRecorder()
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	return ln, acc
}

func usrpwdDial(ep string, auth *UsrPwdConfig) (*Session, error) {
	dc := testConfig()
	dc.WhatAmI = wire.WhatAmIClient
	dc.UsrPwd = auth
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return Dial(ctx, ep, dc, newRecorder())
}

func TestUsrPwdHandshake(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	require.NoError(t, err)
	ln, acc := usrpwdListen(t, &UsrPwdConfig{Dictionary: map[string]string{"dev-7": "right"}}, m)

	c, err := usrpwdDial(ln.Endpoint(), &UsrPwdConfig{User: "dev-7", Password: "right"})
	require.NoError(t, err)
	s := <-acc
	require.Equal(t, "dev-7", s.Identity().User)
	require.Equal(t, "tcp", s.Identity().LinkProtocol)
	require.Equal(t, []string{"dev-7"}, s.Identity().Names())
	_ = c.Close(ReasonShutdown)
	<-c.Done()

	// Refused: the opener learns it from the CLOSE; the listener counts
	// each one with reason auth and accepts nothing.
	for name, tc := range map[string]struct {
		auth *UsrPwdConfig
		step string
	}{
		"wrong password": {&UsrPwdConfig{User: "dev-7", Password: "wrong"}, "OpenAck"},
		"unknown user":   {&UsrPwdConfig{User: "dev-8", Password: "right"}, "OpenAck"},
		"no credentials": {nil, "InitAck"},
	} {
		_, err := usrpwdDial(ln.Endpoint(), tc.auth)
		var he *HandshakeError
		require.ErrorAs(t, err, &he, name)
		require.Equal(t, tc.step, he.Step, name)
		require.Equal(t, ReasonRemoteClose, he.Reason, name)
		require.ErrorContains(t, err, "CLOSE(GENERIC)", name)
	}
	require.Eventually(t, func() bool { return testutil.ToFloat64(m.hsFailed.WithLabelValues("auth")) == 3 },
		10*time.Second, 10*time.Millisecond)
	require.Empty(t, acc)

	// An opener with credentials refuses a peer that does not ask for them
	// (as Rust does).
	plain, _ := usrpwdListen(t, nil, nil)
	_, err = usrpwdDial(plain.Endpoint(), &UsrPwdConfig{User: "dev-7", Password: "right"})
	var he *HandshakeError
	require.ErrorAs(t, err, &he)
	require.Equal(t, ReasonAuth, he.Reason)
	require.ErrorContains(t, err, "does not ask for credentials")

	// An empty dictionary refuses everyone.
	none, _ := usrpwdListen(t, &UsrPwdConfig{Dictionary: map[string]string{}}, nil)
	_, err = usrpwdDial(none.Endpoint(), &UsrPwdConfig{User: "dev-7", Password: "right"})
	require.ErrorContains(t, err, "CLOSE(GENERIC)")

	// Half-set credentials are refused before any I/O.
	_, err = usrpwdDial(ln.Endpoint(), &UsrPwdConfig{User: "dev-7"})
	require.ErrorContains(t, err, "together")
}

// TestUsrPwdOverTLS: usrpwd and mutual TLS together give both names.
func TestUsrPwdOverTLS(t *testing.T) {
	f := newTLSFixture(t)
	lc := testConfig()
	sc := f.mtlsServer()
	lc.TLS, lc.UsrPwd = &sc, &UsrPwdConfig{Dictionary: map[string]string{"robot": "pw"}}
	acc := make(chan *Session, 1)
	ln, err := Listen(context.Background(), "tls/127.0.0.1:0", lc, func(s *Session) Handler { acc <- s; return newRecorder() })
	require.NoError(t, err)
	defer ln.Close()
	dc := testConfig()
	dc.WhatAmI = wire.WhatAmIClient
	cc := f.client(&f.dev)
	dc.TLS, dc.UsrPwd = &cc, &UsrPwdConfig{User: "robot", Password: "pw"}
	c, err := Dial(context.Background(), ln.Endpoint(), dc, newRecorder())
	require.NoError(t, err)
	defer func() { _ = c.Close(ReasonShutdown); <-c.Done() }()
	require.Equal(t, []string{"robot", "dev-7", "dev-7.fleet"}, (<-acc).Identity().Names())
}

func FuzzUsrPwdOpen(f *testing.F) {
	f.Add(appendUsrPwdOpen(nil, "usr1", make([]byte, 32)))
	f.Add([]byte{})
	f.Add([]byte{0x01, 'u', 0x20})
	f.Fuzz(func(t *testing.T, b []byte) {
		user, mac, err := parseUsrPwdOpen(b)
		if err != nil {
			return
		}
		if len(mac) != usrpwdMACLen || user == "" || len(user) > maxUserLen {
			t.Fatalf("accepted user %q mac %d bytes", user, len(mac))
		}
		// A VLE length may come non-minimal (0xa0 0x00 for 32): Zenoh's
		// zint decoder reads it, and so do we, so the input need not be
		// canonical; its canonical encoding must decode to the same fields
		// and be no longer (seed 5cfe51a11e5d5953, found by the campaign).
		got := appendUsrPwdOpen(nil, user, mac)
		if len(got) > len(b) {
			t.Fatalf("re-encodes to %x, longer than %x", got, b)
		}
		u2, m2, err := parseUsrPwdOpen(got)
		if err != nil || u2 != user || string(m2) != string(mac) {
			t.Fatalf("canonical %x decodes to %q %x (%v), want %q %x", got, u2, m2, err, user, mac)
		}
	})
}
