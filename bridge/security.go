package bridge

import (
	"errors"
	"strings"

	"github.com/picobridge/picobridge/zenohpath"
	"github.com/picobridge/picobridge/zenohpath/transport"
)

// Security is the gateway's link security and access control, built from
// the configuration (Config.Security): what zenohpath.RouterConfig takes.
type Security struct {
	TLS    *transport.TLSConfig    // tls/ endpoints
	UsrPwd *transport.UsrPwdConfig // nil: no usrpwd
	ACL    *zenohpath.ACL          // nil: no access control
}

func (t TLSConfig) transport() *transport.TLSConfig {
	v := t.VerifyNameOnConnect
	return &transport.TLSConfig{
		RootCACertificate: t.RootCACertificate, ListenCertificate: t.ListenCertificate, ListenPrivateKey: t.ListenPrivateKey,
		EnableMTLS: t.EnableMTLS, ConnectCertificate: t.ConnectCertificate, ConnectPrivateKey: t.ConnectPrivateKey,
		VerifyNameOnConnect: &v,
	}
}

// Security loads and compiles the security settings: reads the usrpwd
// dictionary file and compiles access_control (its devices subjects know
// the ZIDs of devices.list). Validate has checked them; an error here means
// a file changed since.
func (c *Config) Security() (Security, error) {
	s := Security{TLS: c.Transport.Link.TLS.transport()}
	u := c.Transport.Auth.UsrPwd
	up := &transport.UsrPwdConfig{User: u.User, Password: u.Password}
	if err := up.Validate(); err != nil {
		return s, err
	}
	if u.DictionaryFile != "" {
		d, err := transport.LoadUsrPwdDictionary(u.DictionaryFile)
		if err != nil {
			return s, err
		}
		up.Dictionary = d
	}
	if up.User != "" || up.Dictionary != nil {
		s.UsrPwd = up
	}
	ac := c.AccessControl
	ac.DeviceZIDs = map[string]string{}
	for _, d := range c.Devices.List {
		if d.ZID != "" {
			ac.DeviceZIDs[d.Name] = d.ZID
		}
	}
	acl, err := zenohpath.NewACL(ac)
	if err != nil {
		return s, err
	}
	s.ACL = acl
	return s, nil
}

// validateSecurity checks the security settings fail-closed: with a tls/
// listen endpoint the certificate and key must load; the dictionary file
// must parse; access_control must compile. Problems name the key and file.
func (c *Config) validateSecurity(at func(key, format string, args ...any)) {
	u := c.Transport.Auth.UsrPwd
	if (u.User == "") != (u.Password == "") {
		at("transport.auth.usrpwd.user", "user and password must be set together")
	}
	if u.DictionaryFile != "" {
		if _, err := transport.LoadUsrPwdDictionary(u.DictionaryFile); err != nil {
			at("transport.auth.usrpwd.dictionary_file", "%v", err)
		}
	}
	// A tls/ endpoint needs its files at start: a listen endpoint its
	// certificate and key, a connect endpoint its trust store (and with mTLS
	// its certificate). A missing file is a configuration error, not a dial
	// that fails and is retried forever.
	tlsNeeds := func(key string, eps []string, build func() error) {
		for i, ep := range eps {
			if !strings.HasPrefix(ep, "tls/") {
				continue
			}
			if err := build(); err != nil {
				k := "transport.link.tls"
				var te *transport.TLSConfigError
				if errors.As(err, &te) {
					k += "." + strings.SplitN(te.Key, "/", 2)[0]
				}
				at(k, "%v (needed by %s[%d] %s)", err, key, i, ep)
				return
			}
		}
	}
	tc := c.Transport.Link.TLS.transport()
	tlsNeeds("zenoh.listen", c.Zenoh.Listen, func() error { _, err := tc.ServerConfig(); return err })
	tlsNeeds("zenoh.connect", c.Zenoh.Connect, func() error { _, err := tc.ClientConfig(""); return err })
	if _, err := zenohpath.NewACL(c.AccessControl); err != nil {
		var ae *zenohpath.ACLError
		if errors.As(err, &ae) {
			at(ae.Key, "%s", ae.Msg)
		} else {
			at("access_control", "%v", err)
		}
	}
}
