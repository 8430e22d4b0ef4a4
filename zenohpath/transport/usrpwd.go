package transport

import (
	"crypto/hmac"
	"crypto/sha3"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"os"
	"strings"

	"github.com/picobridge/picobridge/zenohpath/wire"
)

// UsrPwdConfig is Zenoh's user/password authentication
// (transport.auth.usrpwd; zenoh-mesh-auth.md §3), negotiated inside the
// INIT/OPEN Auth extension (0x43) exactly as Rust Zenoh's usrpwd
// authenticator does it, so it interoperates with zenohd and the Rust
// clients in both directions:
//
//	InitSyn  Auth{0x02}            the opener has credentials
//	InitAck  Auth{0x22 nonce}      random u64 (here: the cookie's nonce)
//	OpenSyn  Auth{0x42 user, mac}  mac = HMAC-SHA3-256(key = nonce LE, password)
//	OpenAck  Auth{0x02}
//
// Any failure closes that link with CLOSE(GENERIC) and counts
// handshake_failures_total{reason="auth"}.
type UsrPwdConfig struct {
	// User and Password are what we present when we open a session (both
	// or neither; Validate). With them, a peer that does not ask for
	// usrpwd is refused (as Rust does).
	User     string
	Password string
	// Dictionary holds the users we accept (user → password). Non-nil
	// (even empty) makes usrpwd required on every session a Listener
	// accepts. Unlike zenohd, User/Password alone do not turn it on.
	Dictionary map[string]string
}

// Validate checks that User and Password are both set or both empty (the
// rule of zenohd's validator).
func (c *UsrPwdConfig) Validate() error {
	if c == nil {
		return nil
	}
	if (c.User == "") != (c.Password == "") {
		return errors.New("usrpwd: user and password must be set together")
	}
	return nil
}

func (c *UsrPwdConfig) opener() bool   { return c != nil && c.User != "" }
func (c *UsrPwdConfig) acceptor() bool { return c != nil && c.Dictionary != nil }

// LoadUsrPwdDictionary reads a zenohd usrpwd dictionary file
// (transport.auth.usrpwd.dictionary_file): ParseUsrPwdDictionary over the
// file's bytes; errors name the file.
func LoadUsrPwdDictionary(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("usrpwd dictionary_file: %w", err)
	}
	return ParseUsrPwdDictionary(path, b)
}

// ParseUsrPwdDictionary parses zenohd's dictionary format: UTF-8 text, one
// user:password per line; each line is trimmed and empty lines skipped; the
// split is at the first ':' (passwords may contain ':'); user and password
// are trimmed and must not be empty; no comments. Errors name file and line.
func ParseUsrPwdDictionary(file string, data []byte) (map[string]string, error) {
	out := map[string]string{}
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		u, p, ok := strings.Cut(line, ":")
		u, p = strings.TrimSpace(u), strings.TrimSpace(p)
		if !ok || u == "" || p == "" {
			return nil, fmt.Errorf("usrpwd dictionary_file %s:%d: want user:password, both non-empty", file, i+1)
		}
		out[u] = p
	}
	return out, nil
}

// usrpwdMAC is HMAC-SHA3-256 keyed with the 8 little-endian bytes of the
// nonce over the password (Rust zenoh-crypto hmac::sign).
func usrpwdMAC(nonce uint64, password string) []byte {
	var key [8]byte
	binary.LittleEndian.PutUint64(key[:], nonce)
	m := hmac.New(func() hash.Hash { return sha3.New256() }, key[:])
	m.Write([]byte(password))
	return m.Sum(nil)
}

// usrpwdMACLen is the length of the HMAC in OpenSyn, in bytes.
const usrpwdMACLen = 32

// maxUserLen bounds the user name accepted in OpenSyn, in bytes.
const maxUserLen = 255

// authExt wraps sub-extensions into an INIT/OPEN Auth extension.
func authExt(sub ...wire.Ext) wire.Ext {
	return wire.Ext{Header: wire.ExtInitAuth, Body: wire.AppendExtChain(nil, sub)}
}

// findAuthSub returns the sub-extension with header h inside the Auth
// extension of exts. A malformed Auth body is an error.
func findAuthSub(exts []wire.Ext, h byte) (wire.Ext, bool, error) {
	a, ok := wire.FindExt(exts, wire.ExtInitAuth)
	if !ok {
		return wire.Ext{}, false, nil
	}
	subs, err := wire.ParseExtChain(a.Body)
	if err != nil {
		return wire.Ext{}, false, fmt.Errorf("auth extension: %w", err)
	}
	e, ok := wire.FindExt(subs, h)
	return e, ok, nil
}

// appendUsrPwdOpen encodes the OpenSyn usrpwd body: user and mac, each
// with a VLE length.
func appendUsrPwdOpen(b []byte, user string, mac []byte) []byte {
	b = wire.AppendBytes(b, []byte(user))
	return wire.AppendBytes(b, mac)
}

// parseUsrPwdOpen decodes the OpenSyn usrpwd body (FuzzUsrPwdOpen): a user
// of 1..maxUserLen bytes and a 32-byte MAC, nothing after.
func parseUsrPwdOpen(b []byte) (user string, mac []byte, err error) {
	u, rest, err := wire.ParseBytes(b, maxUserLen)
	if err != nil {
		return "", nil, fmt.Errorf("usrpwd user: %w", err)
	}
	if len(u) == 0 {
		return "", nil, errors.New("usrpwd: empty user")
	}
	mac, rest, err = wire.ParseBytes(rest, usrpwdMACLen)
	if err != nil {
		return "", nil, fmt.Errorf("usrpwd hmac: %w", err)
	}
	if len(mac) != usrpwdMACLen {
		return "", nil, fmt.Errorf("usrpwd: hmac of %d bytes, want %d", len(mac), usrpwdMACLen)
	}
	if len(rest) != 0 {
		return "", nil, fmt.Errorf("usrpwd: %d bytes after the hmac", len(rest))
	}
	return string(u), mac, nil
}

// checkUsrPwd verifies an OpenSyn usrpwd body against the dictionary and
// returns the user. Unknown user and wrong password give different errors
// (for our log; the peer sees CLOSE(GENERIC) either way).
func checkUsrPwd(dict map[string]string, nonce uint64, body []byte) (string, error) {
	user, mac, err := parseUsrPwdOpen(body)
	if err != nil {
		return "", err
	}
	pw, ok := dict[user]
	if !ok {
		return "", fmt.Errorf("usrpwd: unknown user %q", user)
	}
	if !hmac.Equal(mac, usrpwdMAC(nonce, pw)) {
		return "", fmt.Errorf("usrpwd: wrong password for user %q", user)
	}
	return user, nil
}

// cookieNonce is the usrpwd nonce of a cookie: its first 8 bytes (random,
// and covered by the cookie's MAC), little-endian.
func cookieNonce(c []byte) uint64 { return binary.LittleEndian.Uint64(c[:8]) }
