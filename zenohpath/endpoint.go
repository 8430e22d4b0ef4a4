package zenohpath

import (
	"errors"
	"fmt"
	"net"

	"github.com/picobridge/picobridge/zenohpath/transport"
)

// ErrMulticastEndpoint is returned (wrapped) for a UDP endpoint on a
// multicast group, e.g. "udp/224.0.0.224:7447#iface=eth0": that is Zenoh's
// multicast transport (JOIN, zenoh-wire.md §4.8, peers sharing one group),
// which this router does not implement. Multicast scouting (finding the
// router) is separate: see ScoutingConfig.
var ErrMulticastEndpoint = errors.New("UDP multicast endpoints (the Zenoh multicast transport) are not supported")

// CheckEndpoint validates an endpoint to listen on or connect to:
// transport.ParseEndpoint's syntax (tcp/HOST:PORT, udp/HOST:PORT,
// tls/HOST:PORT; quic/ gives transport.ErrQUICUnsupported), and no UDP
// multicast group (ErrMulticastEndpoint, with the endpoint and what is
// supported in the message).
func CheckEndpoint(endpoint string) error {
	e, err := transport.ParseEndpoint(endpoint)
	if err != nil {
		return err
	}
	if e.Proto == "udp" {
		if host, _, err := net.SplitHostPort(e.Addr); err == nil {
			if ip := net.ParseIP(host); ip != nil && ip.IsMulticast() {
				return fmt.Errorf("endpoint %q: %w; supported: tcp/HOST:PORT and udp/HOST:PORT with a unicast address "+
					"(zenoh-pico devices connect as clients, e.g. -m client -e tcp/ROUTER:7447, or find the router with scouting.multicast)",
					endpoint, ErrMulticastEndpoint)
			}
		}
	}
	return nil
}
