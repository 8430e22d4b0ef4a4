package linkemu

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
)

// ErrNotLoopback is returned for an address outside 127.0.0.0/8: the
// emulator only ever touches the host's own loopback traffic.
var ErrNotLoopback = errors.New("not a loopback address (only 127.0.0.0/8 is allowed)")

// CheckLoopback accepts host:port when host is an IPv4 literal in
// 127.0.0.0/8 (normally 127.0.0.1). Host names are refused: they could
// resolve anywhere.
func CheckLoopback(hostport string) error {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		return fmt.Errorf("address %q: %w", hostport, err)
	}
	ip, err := netip.ParseAddr(host)
	if err != nil || !ip.Is4() || !ip.IsLoopback() {
		return fmt.Errorf("address %q: %w", hostport, ErrNotLoopback)
	}
	return nil
}

// ParseEndpoint splits a Zenoh-style locator "tcp/127.0.0.1:7447" or
// "udp/127.0.0.1:7447" into its protocol and address, and checks that the
// address is loopback.
func ParseEndpoint(s string) (proto, hostport string, err error) {
	proto, hostport, ok := strings.Cut(s, "/")
	if !ok || (proto != "tcp" && proto != "udp") {
		return "", "", fmt.Errorf("endpoint %q: want tcp/<ip>:<port> or udp/<ip>:<port>", s)
	}
	if err := CheckLoopback(hostport); err != nil {
		return "", "", fmt.Errorf("endpoint %q: %w", s, err)
	}
	return proto, hostport, nil
}

// NewProxy starts a UDP or TCP proxy from Zenoh-style locators
// ("tcp/127.0.0.1:17447", "udp/127.0.0.1:17447"); both must use the same
// protocol and loopback addresses.
func NewProxy(listen, upstream string, cfg Config) (Proxy, error) {
	lproto, laddr, err := ParseEndpoint(listen)
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	uproto, uaddr, err := ParseEndpoint(upstream)
	if err != nil {
		return nil, fmt.Errorf("upstream: %w", err)
	}
	if lproto != uproto {
		return nil, fmt.Errorf("listen is %s but upstream is %s: both must use the same protocol", lproto, uproto)
	}
	if lproto == "udp" {
		return NewUDPProxy(laddr, uaddr, cfg)
	}
	return NewTCPProxy(laddr, uaddr, cfg)
}
