package transport

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// Endpoint is a parsed Zenoh locator "proto/address" (tcp/127.0.0.1:7447,
// udp/[::1]:7447). Metadata after '?' or '#' is ignored.
type Endpoint struct {
	Proto string // "tcp" or "udp"
	Addr  string // host:port
}

func (e Endpoint) String() string { return e.Proto + "/" + e.Addr }

// ParseEndpoint parses "tcp/host:port" or "udp/host:port".
func ParseEndpoint(s string) (Endpoint, error) {
	if i := strings.IndexAny(s, "?#"); i >= 0 {
		s = s[:i]
	}
	proto, addr, ok := strings.Cut(s, "/")
	if !ok || addr == "" {
		return Endpoint{}, fmt.Errorf("transport: endpoint %q: want proto/host:port", s)
	}
	switch proto {
	case "tcp", "udp":
	default:
		return Endpoint{}, fmt.Errorf("transport: endpoint %q: unsupported protocol %q (tcp, udp)", s, proto)
	}
	if !strings.Contains(addr, ":") {
		return Endpoint{}, fmt.Errorf("transport: endpoint %q: missing port (want proto/host:port)", s)
	}
	if _, port, err := net.SplitHostPort(addr); err != nil {
		return Endpoint{}, fmt.Errorf("transport: endpoint %q: %w", s, err)
	} else if n, err := strconv.ParseUint(port, 10, 16); err != nil || (n == 0 && port != "0") {
		return Endpoint{}, fmt.Errorf("transport: endpoint %q: port %q: want 0 to 65535", s, port)
	}
	return Endpoint{Proto: proto, Addr: addr}, nil
}
