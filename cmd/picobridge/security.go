package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/picobridge/picobridge/zenohpath"
	"github.com/picobridge/picobridge/zenohpath/transport"
)

// Security --cfg keys of `picobridge router`, named as zenohd's
// configuration names them (docs/security.md): the TLS link settings
// (transport/link/tls/...), usrpwd (transport/auth/usrpwd/...) and the
// access_control section as one JSON object.

// securityConfig is what the security keys configure.
type securityConfig struct {
	tls      transport.TLSConfig
	usrpwd   transport.UsrPwdConfig
	dictFile string
	acl      zenohpath.ACLConfig
	aclSet   bool
}

func boolValue(dst *bool) func(string) error {
	return func(v string) error {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("want true or false")
		}
		*dst = b
		return nil
	}
}

// securityKeys maps each key to its setter on c.
func securityKeys(c *securityConfig) map[string]func(string) error {
	str := func(dst *string) func(string) error { return func(v string) error { *dst = v; return nil } }
	return map[string]func(string) error{
		"transport/link/tls/" + transport.KeyRootCA:             str(&c.tls.RootCACertificate),
		"transport/link/tls/" + transport.KeyListenCertificate:  str(&c.tls.ListenCertificate),
		"transport/link/tls/" + transport.KeyListenPrivateKey:   str(&c.tls.ListenPrivateKey),
		"transport/link/tls/" + transport.KeyConnectCertificate: str(&c.tls.ConnectCertificate),
		"transport/link/tls/" + transport.KeyConnectPrivateKey:  str(&c.tls.ConnectPrivateKey),
		"transport/link/tls/" + transport.KeyEnableMTLS:         boolValue(&c.tls.EnableMTLS),
		"transport/link/tls/" + transport.KeyVerifyName: func(v string) error {
			var b bool
			if err := boolValue(&b)(v); err != nil {
				return err
			}
			c.tls.VerifyNameOnConnect = &b
			return nil
		},
		"transport/auth/usrpwd/user":            str(&c.usrpwd.User),
		"transport/auth/usrpwd/password":        str(&c.usrpwd.Password),
		"transport/auth/usrpwd/dictionary_file": str(&c.dictFile),
		"access_control": func(v string) error {
			d := json.NewDecoder(strings.NewReader(v))
			d.DisallowUnknownFields()
			if err := d.Decode(&c.acl); err != nil {
				return fmt.Errorf("want a JSON object with enabled, default_permission, rules, subjects, policies: %v", err)
			}
			c.aclSet = true
			return nil
		},
	}
}

func securityKeyNames() []string {
	var ks []string
	for k := range securityKeys(&securityConfig{}) {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func isSecurityKey(k string) bool {
	_, ok := securityKeys(&securityConfig{})[k]
	return ok
}

// routerSecurity is the router's security configuration from --cfg, loaded
// and checked fail-closed: the dictionary file is read, the access control
// compiled, and with a tls/ listen endpoint the certificate and key are
// loaded, so that a missing or unreadable file refuses the start with the
// key and the file named.
type routerSecurity struct {
	tls    *transport.TLSConfig
	usrpwd *transport.UsrPwdConfig
	acl    *zenohpath.ACL
}

func (o *routerOptions) security() (routerSecurity, error) {
	var c securityConfig
	keys := securityKeys(&c)
	for _, kv := range o.cfg {
		k, v, ok := strings.Cut(kv, ":")
		if !ok {
			continue // scouting() names the problem
		}
		key := routerKey(k)
		set, ok := keys[key]
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		if key != "access_control" {
			if uq, err := strconv.Unquote(v); err == nil {
				v = uq
			}
		}
		if err := set(v); err != nil {
			return routerSecurity{}, fmt.Errorf("--cfg %s: %q: %w", key, v, err)
		}
	}
	var s routerSecurity
	s.tls = &c.tls
	if err := c.usrpwd.Validate(); err != nil {
		return s, fmt.Errorf("--cfg transport/auth/usrpwd/user and password: %w", err)
	}
	if c.dictFile != "" {
		d, err := transport.LoadUsrPwdDictionary(c.dictFile)
		if err != nil {
			return s, fmt.Errorf("--cfg transport/auth/usrpwd/dictionary_file: %w", err)
		}
		c.usrpwd.Dictionary = d
	}
	if c.usrpwd.User != "" || c.usrpwd.Dictionary != nil {
		s.usrpwd = &c.usrpwd
	}
	if c.aclSet {
		acl, err := zenohpath.NewACL(c.acl)
		if err != nil {
			return s, fmt.Errorf("--cfg %w", err)
		}
		s.acl = acl
	}
	for _, ep := range o.listen {
		e, err := transport.ParseEndpoint(ep)
		if err != nil || e.Proto != "tls" {
			continue
		}
		if err := checkTLSListen(s.tls, e); err != nil {
			return s, fmt.Errorf("--listen %s: %w", ep, err)
		}
	}
	return s, nil
}

// checkTLSListen loads the server certificate of a tls/ endpoint (the
// endpoint's #config over the --cfg keys), so that the start fails before
// anything listens. The error names the --cfg key and the file.
func checkTLSListen(c *transport.TLSConfig, e transport.Endpoint) error {
	cfg := *c
	for k, v := range e.Params {
		switch k {
		case transport.KeyListenCertificate + "_file":
			cfg.ListenCertificate = v
		case transport.KeyListenPrivateKey + "_file":
			cfg.ListenPrivateKey = v
		case transport.KeyRootCA + "_file":
			cfg.RootCACertificate = v
		case transport.KeyEnableMTLS:
			cfg.EnableMTLS = v == "true"
		}
	}
	if _, err := cfg.ServerConfig(); err != nil {
		if te, ok := err.(*transport.TLSConfigError); ok {
			return fmt.Errorf("--cfg transport/link/tls/%s: %w", strings.SplitN(te.Key, "/", 2)[0], err)
		}
		return err
	}
	return nil
}
