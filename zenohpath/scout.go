package zenohpath

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"golang.org/x/net/ipv4"

	"github.com/picobridge/picobridge/zenohpath/wire"
)

// DefaultScoutTimeout is how long Scout listens for HELLOs: zenoh-pico's
// scouting timeout (zenoh-wire.md §6, 1000 ms).
const DefaultScoutTimeout = time.Second

// ScoutOptions configures Scout. The zero value scouts for routers and peers
// on DefaultScoutingAddress for DefaultScoutTimeout, the way z_scout does.
type ScoutOptions struct {
	// Address is where the SCOUT goes, host:port: an IPv4 multicast group
	// ("" = DefaultScoutingAddress) or a unicast address (a router's
	// scouting.unicast.address).
	Address string
	// Interface is the interface a multicast SCOUT leaves by; "" lets the
	// system route it. Ignored for a unicast Address.
	Interface string
	// What is the bitmap of roles asked for; 0 = router|peer (z_scout).
	What wire.WhatMask
	// Timeout is how long HELLOs are collected; 0 = DefaultScoutTimeout.
	Timeout time.Duration
	// TTL is the multicast hop limit; 0 = 1 (the local network only).
	TTL int
	// ZID is sent in the SCOUT; zero = a random one.
	ZID wire.ZID
}

// Hello is one answer to Scout.
type Hello struct {
	ZID      wire.ZID
	WhatAmI  wire.WhatAmI
	Locators []string
	From     string // source host:port of the HELLO
}

// String formats h as z_scout prints a HELLO.
func (h Hello) String() string {
	return fmt.Sprintf("Hello { zid: %s, whatami: %s, locators: %v }", h.ZID, h.WhatAmI, h.Locators)
}

// scoutResends is how many times Scout sends its SCOUT within Timeout (at
// 0, 1/4 and 1/2 of it), so that one lost datagram does not hide a router.
const scoutResends = 3

// Scout sends a SCOUT (zenoh-wire.md §7) and calls fn, on the calling
// goroutine, for the first HELLO of each zid that answers within the
// timeout; it returns when the timeout passes or ctx is done (ctx's error
// then). Datagrams that are not a HELLO are ignored. Errors: an invalid
// Address or Interface, a socket that cannot be opened or written.
func Scout(ctx context.Context, o ScoutOptions, fn func(Hello)) error {
	if o.Address == "" {
		o.Address = DefaultScoutingAddress
	}
	if o.What == 0 {
		o.What = wire.WhatRouter | wire.WhatPeer
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultScoutTimeout
	}
	if o.TTL <= 0 {
		o.TTL = 1
	}
	if o.ZID.IsZero() {
		o.ZID = RandomZID()
	}
	dst, err := scoutDestination(o.Address)
	if err != nil {
		return fmt.Errorf("zenohpath: scout address %w", err)
	}
	network := "udp4"
	if dst.IP.To4() == nil {
		network = "udp6"
	}
	pc, err := net.ListenPacket(network, ":0")
	if err != nil {
		return fmt.Errorf("zenohpath: scout: %w", err)
	}
	defer pc.Close()
	if dst.IP.IsMulticast() {
		p := ipv4.NewPacketConn(pc)
		if o.Interface != "" {
			ifi, err := net.InterfaceByName(o.Interface)
			if err != nil {
				return fmt.Errorf("zenohpath: scout interface %q: no such interface (have: %s)", o.Interface, interfaceNames())
			}
			if err := p.SetMulticastInterface(ifi); err != nil {
				return fmt.Errorf("zenohpath: scout interface %q: %w", o.Interface, err)
			}
		}
		if err := p.SetMulticastTTL(o.TTL); err != nil {
			return fmt.Errorf("zenohpath: scout ttl %d: %w", o.TTL, err)
		}
		if err := p.SetMulticastLoopback(true); err != nil {
			return fmt.Errorf("zenohpath: scout: %w", err)
		}
	}
	scout := wire.Scout{Version: wire.ProtoVersion, What: o.What, ZID: o.ZID}.Append(nil)
	deadline := time.Now().Add(o.Timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	stop := context.AfterFunc(ctx, func() { _ = pc.SetReadDeadline(time.Now()) })
	defer stop()
	seen := map[wire.ZID]bool{}
	buf := make([]byte, 65536)
	for i := range scoutResends {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if _, err := pc.WriteTo(scout, dst); err != nil {
			return fmt.Errorf("zenohpath: scout %s: %w", o.Address, err)
		}
		next := time.Now().Add(o.Timeout / 4)
		if i == scoutResends-1 || next.After(deadline) {
			next = deadline
		}
		_ = pc.SetReadDeadline(next)
		if ctx.Err() != nil { // cancelled before the deadline above replaced AfterFunc's
			return ctx.Err()
		}
		for {
			n, src, err := pc.ReadFrom(buf)
			if err != nil {
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					break
				}
				return fmt.Errorf("zenohpath: scout: %w", err)
			}
			m, _, err := wire.ParseScouting(buf[:n])
			if err != nil {
				continue
			}
			h, ok := m.(*wire.Hello)
			if !ok || seen[h.ZID] {
				continue
			}
			seen[h.ZID] = true
			fn(Hello{ZID: h.ZID, WhatAmI: h.WhatAmI, Locators: h.Locators, From: src.String()})
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if !time.Now().Before(deadline) {
			return nil
		}
	}
	return nil
}

// scoutDestination parses a host:port where a SCOUT may go.
func scoutDestination(s string) (*net.UDPAddr, error) {
	if g, err := multicastGroup(s); err == nil {
		return g, nil
	}
	a, err := unicastScoutAddr(s)
	if err != nil {
		return nil, err
	}
	if a.Port == 0 || a.IP.IsUnspecified() {
		return nil, fmt.Errorf("%q: want a multicast group or a unicast IP with a port, e.g. %s or 10.0.0.5:7446", s, DefaultScoutingAddress)
	}
	return a, nil
}
