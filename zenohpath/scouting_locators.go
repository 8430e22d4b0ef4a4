package zenohpath

import (
	"net"
	"strings"
)

// ifAddr is one address of a network interface.
type ifAddr struct {
	ip       net.IP
	net      *net.IPNet
	loopback bool
}

// hostAddrs lists the addresses of the interfaces that are up (nil on error).
func hostAddrs() []ifAddr {
	ifs, err := net.Interfaces()
	if err != nil {
		return nil
	}
	var out []ifAddr
	for _, ifi := range ifs {
		if ifi.Flags&net.FlagUp == 0 {
			continue
		}
		as, err := ifi.Addrs()
		if err != nil {
			continue
		}
		for _, a := range as {
			if n, ok := a.(*net.IPNet); ok {
				out = append(out, ifAddr{ip: n.IP, net: n, loopback: ifi.Flags&net.FlagLoopback != 0 || n.IP.IsLoopback()})
			}
		}
	}
	return out
}

// helloLocators is what a HELLO to a scout at src carries: the router's
// listening endpoints (Endpoints, ports resolved) in listening order.
func (r *Router) helloLocators(src net.IP) []string {
	return expandLocators(r.Endpoints(), src, hostAddrs())
}

// expandLocators turns listening endpoints into locators a scout can dial,
// as zenohd does for its HELLO: an endpoint on a wildcard address (0.0.0.0:
// every IPv4 address; [::]: every IPv4 and IPv6 address, Go listens
// dual-stack) becomes one locator per interface address; other endpoints are
// kept as they are. For each endpoint the addresses on the scout's own
// network (src inside the interface's prefix) come first, since zenoh-pico
// dials the first locator; loopback addresses are listed only to a scout on
// loopback (or from 0.0.0.0, a local process) or when there is no other address; IPv6 link-local addresses are
// left out (they need a zone). Duplicates are removed.
func expandLocators(endpoints []string, src net.IP, addrs []ifAddr) []string {
	// a source of 0.0.0.0 is a process on this host (zenoh-pico's SCOUT over lo
	// arrives so): it is answered as a loopback scout
	srcLoop := src != nil && (src.IsLoopback() || src.IsUnspecified())
	onlyLoop := true
	for _, a := range addrs {
		if !a.loopback {
			onlyLoop = false
		}
	}
	var out []string
	seen := map[string]bool{}
	add := func(l string) {
		if !seen[l] {
			seen[l] = true
			out = append(out, l)
		}
	}
	for _, ep := range endpoints {
		proto, rest, ok := strings.Cut(ep, "/")
		if !ok {
			continue
		}
		hostport, suffix := rest, ""
		if i := strings.IndexAny(rest, "?#"); i >= 0 {
			hostport, suffix = rest[:i], rest[i:]
		}
		host, port, err := net.SplitHostPort(hostport)
		ip := net.ParseIP(host)
		if err != nil || ip == nil || !ip.IsUnspecified() {
			add(ep)
			continue
		}
		v6 := ip.To4() == nil
		var near, far []string
		for _, a := range addrs {
			if a.ip.To4() == nil && (!v6 || a.ip.IsLinkLocalUnicast()) {
				continue
			}
			if a.loopback && !srcLoop && !onlyLoop {
				continue
			}
			l := proto + "/" + net.JoinHostPort(a.ip.String(), port) + suffix
			if src != nil && (a.net != nil && a.net.Contains(src) || src.IsUnspecified() && a.loopback) {
				near = append(near, l)
			} else {
				far = append(far, l)
			}
		}
		for _, l := range append(near, far...) {
			add(l)
		}
	}
	return out
}
