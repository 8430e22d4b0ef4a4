package zbench

import (
	"strings"

	"github.com/picobridge/picobridge/internal/testpki"
	"github.com/picobridge/picobridge/zenohpath/transport"
)

// TLS runs (Options.TLS): one CA and one certificate for 127.0.0.1, made at
// start into the run's temp dir; both routers present it, every client
// trusts the CA (system roots are not needed on loopback).

func (b *bench) makeCerts() error {
	ca, err := testpki.NewCAIn(b.dir, "zbench CA")
	if err != nil {
		return err
	}
	cert, err := ca.IssueE("zbench router", "127.0.0.1")
	if err != nil {
		return err
	}
	b.ca, b.cert = ca, cert
	return nil
}

// freeEndpoint is a free loopback endpoint, tls/ when the run is TLS.
func (b *bench) freeEndpoint() (string, error) {
	ep, err := freeEndpoint()
	if err != nil || !b.o.TLS {
		return ep, err
	}
	return "tls/" + strings.TrimPrefix(ep, "tcp/"), nil
}

func (b *bench) clientTLS() *transport.TLSConfig {
	if !b.o.TLS {
		return nil
	}
	return &transport.TLSConfig{RootCACertificate: b.ca.File}
}

func (b *bench) childTLSEnv() []string {
	if !b.o.TLS {
		return nil
	}
	return []string{TLSCertEnv + "=" + b.cert.CertFile, TLSKeyEnv + "=" + b.cert.KeyFile}
}

// routerTLSFlags are the `picobridge router` flags of the same settings.
func (b *bench) routerTLSFlags() []string {
	if !b.o.TLS {
		return nil
	}
	return []string{"--cfg", "transport/link/tls/listen_certificate:" + b.cert.CertFile,
		"--cfg", "transport/link/tls/listen_private_key:" + b.cert.KeyFile}
}

// pyTLSFlags are zbench.py's: the router uses the certificate, the
// clients the CA.
func (b *bench) pyTLSFlags() []string {
	if !b.o.TLS {
		return nil
	}
	return []string{"--tls-ca", b.ca.File, "--tls-cert", b.cert.CertFile, "--tls-key", b.cert.KeyFile}
}
