package transport

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
)

// Endpoint is a parsed Zenoh locator "proto/address" (tcp/127.0.0.1:7447,
// udp/[::1]:7447, tls/host:7447). Metadata after '?' is ignored; the
// endpoint configuration after '#' (key=value pairs separated by ';', as
// zenohd writes tls/h:p#root_ca_certificate_file=ca.pem) is kept in Params.
type Endpoint struct {
	Proto string // "tcp", "udp" or "tls"
	Addr  string // host:port
	// Params is the endpoint configuration after '#' (nil when none). A
	// tls/ endpoint takes the TLSConfig keys from it (TLSConfig.withParams);
	// other keys are ignored.
	Params map[string]string
}

func (e Endpoint) String() string { return e.Proto + "/" + e.Addr }

// ErrQUICUnsupported is returned (wrapped) for a quic/ endpoint: zenohd
// offers QUIC links, picobridge does not (use tls/ for an encrypted link).
var ErrQUICUnsupported = errors.New("QUIC links are not supported (use tls/<host>:<port> for an encrypted link)")

// ParseEndpoint parses "tcp/host:port", "udp/host:port" or
// "tls/host:port[#key=value;...]". A quic/ endpoint gives
// ErrQUICUnsupported.
func ParseEndpoint(s string) (Endpoint, error) {
	var params map[string]string
	if i := strings.IndexByte(s, '#'); i >= 0 {
		params = parseEndpointParams(s[i+1:])
		s = s[:i]
	}
	if i := strings.IndexByte(s, '?'); i >= 0 {
		s = s[:i]
	}
	proto, addr, ok := strings.Cut(s, "/")
	if !ok || addr == "" {
		return Endpoint{}, fmt.Errorf("transport: endpoint %q: want proto/host:port", s)
	}
	switch proto {
	case "tcp", "udp", "tls":
	case "quic":
		return Endpoint{}, fmt.Errorf("transport: endpoint %q: %w", s, ErrQUICUnsupported)
	default:
		return Endpoint{}, fmt.Errorf("transport: endpoint %q: unsupported protocol %q (tcp, udp, tls)", s, proto)
	}
	if !strings.Contains(addr, ":") {
		return Endpoint{}, fmt.Errorf("transport: endpoint %q: missing port (want proto/host:port)", s)
	}
	if _, port, err := net.SplitHostPort(addr); err != nil {
		return Endpoint{}, fmt.Errorf("transport: endpoint %q: %w", s, err)
	} else if n, err := strconv.ParseUint(port, 10, 16); err != nil || (n == 0 && port != "0") {
		return Endpoint{}, fmt.Errorf("transport: endpoint %q: port %q: want 0 to 65535", s, port)
	}
	return Endpoint{Proto: proto, Addr: addr, Params: params}, nil
}

// parseEndpointParams splits "k1=v1;k2=v2" (zenohd's endpoint
// configuration); a pair without '=' gets the empty value.
func parseEndpointParams(s string) map[string]string {
	m := map[string]string{}
	for _, kv := range strings.Split(s, ";") {
		if kv = strings.TrimSpace(kv); kv == "" {
			continue
		}
		k, v, _ := strings.Cut(kv, "=")
		m[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return m
}
