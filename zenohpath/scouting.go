package zenohpath

// Scouting (zenoh-wire.md §6, §7): both halves of SCOUT/HELLO live here.
// The client half, Scout, sends a SCOUT and collects the HELLOs that answer
// it (as z_scout does; `picobridge scout`). The router half answers the
// SCOUTs of zenoh-pico devices and clients with a HELLO that lists the
// router's locators (ScoutingConfig, Router.StartScouting; which locators,
// scouting_locators.go). The codec is wire.Scout and wire.Hello.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/ipv4"

	"github.com/picobridge/picobridge/zenohpath/wire"
)

// DefaultScoutingAddress is the multicast group and port zenohd and
// zenoh-pico scout on (zenoh-wire.md §6, §7; zenohd's
// scouting/multicast/address).
const DefaultScoutingAddress = "224.0.0.224:7446"

// maxHelloSize bounds a HELLO we send, bytes: zenoh-pico reads scouting
// replies into a Z_BATCH_MULTICAST_SIZE buffer, 2048 with its CMake defaults
// (zenoh-wire.md §14.2). Locators that do not fit are left out.
const maxHelloSize = 2048

// maxScoutSize is the read buffer of a responder, bytes. A SCOUT is a few
// bytes plus extensions; a longer datagram is truncated and then refused as
// malformed.
const maxScoutSize = 8192

// ScoutingConfig is the `scouting` section of the configuration, with the
// key names of zenohd's DEFAULT_CONFIG.json5 where zenohd has one. The
// router only answers: it never sends a SCOUT or any multicast of its own,
// and the zero value answers nothing.
type ScoutingConfig struct {
	Multicast MulticastScoutingConfig `yaml:"multicast"`
	Unicast   UnicastScoutingConfig   `yaml:"unicast"`
}

// MulticastScoutingConfig is scouting.multicast.
type MulticastScoutingConfig struct {
	// Enabled answers SCOUTs sent to Address on the interfaces named in
	// Interface (zenohd: scouting/multicast/enabled, default true there;
	// false here).
	Enabled bool `yaml:"enabled"`
	// Address is the IPv4 group and port, host:port; "" means
	// DefaultScoutingAddress (zenohd: scouting/multicast/address).
	Address string `yaml:"address"`
	// Interface names the network interfaces to answer on, comma-separated
	// ("eth0" or "eth0,wlan0"). Unlike zenohd, whose default "auto" picks
	// one, there is no default: a robot must never announce itself on an
	// interface nobody chose (a cellular uplink). Required when Enabled
	// (zenohd: scouting/multicast/interface).
	Interface string `yaml:"interface"`
}

// UnicastScoutingConfig is scouting.unicast (a picobridge key; zenohd has
// no equivalent): SCOUTs sent straight to Address (e.g. `picobridge scout
// --address 10.0.0.5:7446`) are answered.
type UnicastScoutingConfig struct {
	// Address is host:port to answer unicast SCOUTs on ("127.0.0.1:7446",
	// "0.0.0.0:7446"); "" is off.
	Address string `yaml:"address"`
}

// ScoutingProblem is one invalid scouting key: Key is relative to the
// scouting section, dotted ("multicast.interface").
type ScoutingProblem struct {
	Key, Msg string
}

func (p ScoutingProblem) Error() string { return "scouting." + p.Key + ": " + p.Msg }

// Problems lists every invalid key of c (nil: valid). It checks syntax only;
// whether the named interfaces exist is checked by StartScouting.
func (c ScoutingConfig) Problems() []ScoutingProblem {
	var ps []ScoutingProblem
	m := c.Multicast
	if m.Address != "" {
		if _, err := multicastGroup(m.Address); err != nil {
			ps = append(ps, ScoutingProblem{"multicast.address", err.Error()})
		}
	}
	names := c.Multicast.interfaces()
	for _, n := range names {
		if n == "auto" {
			ps = append(ps, ScoutingProblem{"multicast.interface", `"auto" is not supported: name the interfaces to answer on (e.g. eth0 or eth0,wlan0)`})
		}
	}
	if m.Enabled && len(names) == 0 {
		ps = append(ps, ScoutingProblem{"multicast.interface", "required when scouting.multicast.enabled is true: name the interfaces to answer on, comma-separated (e.g. eth0 or eth0,wlan0); there is no default"})
	}
	if c.Unicast.Address != "" {
		if _, err := unicastScoutAddr(c.Unicast.Address); err != nil {
			ps = append(ps, ScoutingProblem{"unicast.address", err.Error()})
		}
	}
	return ps
}

// Validate is Problems joined into one error (nil: valid).
func (c ScoutingConfig) Validate() error {
	var errs []error
	for _, p := range c.Problems() {
		errs = append(errs, p)
	}
	return errors.Join(errs...)
}

func (m MulticastScoutingConfig) interfaces() []string {
	var out []string
	for _, n := range strings.Split(m.Interface, ",") {
		if n = strings.TrimSpace(n); n != "" {
			out = append(out, n)
		}
	}
	return out
}

func (m MulticastScoutingConfig) address() string {
	if m.Address == "" {
		return DefaultScoutingAddress
	}
	return m.Address
}

// multicastGroup parses an IPv4 multicast host:port.
func multicastGroup(s string) (*net.UDPAddr, error) {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return nil, fmt.Errorf("%q: want an IPv4 multicast group and port, e.g. %s", s, DefaultScoutingAddress)
	}
	ip := net.ParseIP(host).To4()
	if ip == nil || !ip.IsMulticast() {
		return nil, fmt.Errorf("%q: %q is not an IPv4 multicast address (224.0.0.0/4), e.g. %s", s, host, DefaultScoutingAddress)
	}
	p, err := net.LookupPort("udp", port)
	if err != nil || p == 0 {
		return nil, fmt.Errorf("%q: port %q: want 1 to 65535", s, port)
	}
	return &net.UDPAddr{IP: ip, Port: p}, nil
}

// unicastScoutAddr parses a unicast IP host:port (port 0 picks one).
func unicastScoutAddr(s string) (*net.UDPAddr, error) {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return nil, fmt.Errorf("%q: want IP:port, e.g. 0.0.0.0:7446", s)
	}
	ip := net.ParseIP(host)
	if ip == nil || ip.IsMulticast() {
		return nil, fmt.Errorf("%q: %q is not a unicast IP address", s, host)
	}
	p, err := net.LookupPort("udp", port)
	if err != nil {
		return nil, fmt.Errorf("%q: port %q: want 0 to 65535", s, port)
	}
	return &net.UDPAddr{IP: ip, Port: p}, nil
}

// Drop reasons of picobridge_router_scouting_dropped_total.
const (
	scoutDropMalformed  = "malformed"   // not a decodable scouting message
	scoutDropNotScout   = "not_scout"   // a HELLO or another scouting message
	scoutDropVersion    = "version"     // protocol version other than 0x09
	scoutDropNotForUs   = "not_for_us"  // the SCOUT's what does not include our whatami
	scoutDropInterface  = "interface"   // arrived on an interface not named in scouting.multicast.interface
	scoutDropSendFailed = "send_failed" // the HELLO could not be sent
)

var scoutDropReasons = []string{scoutDropMalformed, scoutDropNotScout, scoutDropVersion, scoutDropNotForUs,
	scoutDropInterface, scoutDropSendFailed}

// whatMatches reports whether a SCOUT's what bitmap asks for role w
// (zenoh-wire.md §7: router 1, peer 2, client 4).
func whatMatches(what wire.WhatMask, w wire.WhatAmI) bool {
	return w <= wire.WhatAmIClient && what&(1<<w) != 0
}

// answerScout is the decision of a responder for one datagram b from src:
// the HELLO to send back (zenoh-wire.md §7: version 0x09, our whatami, zid
// and locators, as zenohd answers), or the drop reason. locators gives our
// locators as seen from src.
func answerScout(b []byte, zid wire.ZID, w wire.WhatAmI, locators []string) ([]byte, string) {
	m, _, err := wire.ParseScouting(b)
	if err != nil {
		return nil, scoutDropMalformed
	}
	s, ok := m.(*wire.Scout)
	if !ok {
		return nil, scoutDropNotScout
	}
	if s.Version != wire.ProtoVersion {
		return nil, scoutDropVersion
	}
	if !whatMatches(s.What, w) {
		return nil, scoutDropNotForUs
	}
	h := wire.Hello{Version: wire.ProtoVersion, WhatAmI: w, ZID: zid, Locators: locators}
	for len(h.Locators) > 0 && h.Len() > maxHelloSize {
		h.Locators = h.Locators[:len(h.Locators)-1]
	}
	return h.Append(nil), ""
}

// scoutConn is what a responder reads from and answers on: ifindex is the
// interface a datagram arrived on (0: unknown).
type scoutConn interface {
	read(b []byte) (n, ifindex int, src net.Addr, err error)
	writeTo(b []byte, dst net.Addr) error
	close() error
	localAddr() net.Addr
}

type mcastConn struct {
	p     *ipv4.PacketConn
	group *net.UDPAddr
}

func (c mcastConn) read(b []byte) (int, int, net.Addr, error) {
	n, cm, src, err := c.p.ReadFrom(b)
	ifi := 0
	if cm != nil {
		ifi = cm.IfIndex
	}
	return n, ifi, src, err
}

func (c mcastConn) writeTo(b []byte, dst net.Addr) error {
	_, err := c.p.WriteTo(b, nil, dst)
	return err
}
func (c mcastConn) close() error        { return c.p.Close() }
func (c mcastConn) localAddr() net.Addr { return c.group }

type ucastConn struct{ c net.PacketConn }

func (c ucastConn) read(b []byte) (int, int, net.Addr, error) {
	n, src, err := c.c.ReadFrom(b)
	return n, 0, src, err
}

func (c ucastConn) writeTo(b []byte, dst net.Addr) error { _, err := c.c.WriteTo(b, dst); return err }
func (c ucastConn) close() error                         { return c.c.Close() }
func (c ucastConn) localAddr() net.Addr                  { return c.c.LocalAddr() }

// scoutResponder answers the SCOUTs that arrive on one socket.
type scoutResponder struct {
	r      *Router
	c      scoutConn
	ifaces map[int]string // multicast: the interfaces we answer on; nil: any
	kind   string         // "multicast" or "unicast", for logs
	logged sync.Map       // drop reason → struct{}: logged once at WARN/INFO
}

// StartScouting answers SCOUTs as c says (multicast on the named
// interfaces, unicast on an address) until the router closes; it returns
// the addresses answered on (the group for multicast). Each HELLO goes back unicast to the
// SCOUT's source and carries the router's whatami, zid and listening
// locators, a wildcard listener expanded into the interface addresses
// (helloLocators). A SCOUT whose what does not include our whatami is not
// answered. The zero config starts nothing. Errors name the key: an invalid
// config (Problems), an unknown or down interface (with the ones that
// exist), a port in use.
func (r *Router) StartScouting(c ScoutingConfig) ([]string, error) {
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("zenohpath: %w", err)
	}
	var rs []*scoutResponder
	fail := func(err error) ([]string, error) {
		for _, s := range rs {
			_ = s.c.close()
		}
		return nil, err
	}
	if c.Multicast.Enabled {
		s, err := r.multicastResponder(c.Multicast)
		if err != nil {
			return fail(err)
		}
		rs = append(rs, s)
	}
	if c.Unicast.Address != "" {
		a, _ := unicastScoutAddr(c.Unicast.Address)
		pc, err := net.ListenUDP("udp", a)
		if err != nil {
			return fail(fmt.Errorf("zenohpath: scouting.unicast.address %q: %w", c.Unicast.Address, err))
		}
		rs = append(rs, &scoutResponder{r: r, c: ucastConn{pc}, kind: "unicast"})
	}
	var addrs []string
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return fail(ErrClosed)
	}
	for _, s := range rs {
		s := s
		r.closers = append(r.closers, func() { _ = s.c.close() })
		r.wg.Add(1)
		go s.run()
		addrs = append(addrs, s.c.localAddr().String())
	}
	r.mu.Unlock()
	for i, s := range rs {
		attrs := []any{"mode", s.kind, "addr", addrs[i]}
		if s.ifaces != nil {
			attrs = append(attrs, "interface", c.Multicast.Interface)
		}
		r.log.Info("answering scouts", attrs...)
	}
	return addrs, nil
}

// multicastResponder binds the group's port, joins the group on each named
// interface and asks for the arrival interface of each datagram: only those
// that arrive on a named interface are answered (Go binds a multicast
// listener to the wildcard address, and Linux delivers a group's datagrams
// to every socket bound to its port whatever interface joined it). A SCOUT
// sent unicast to the port on a named interface is answered as well.
func (r *Router) multicastResponder(m MulticastScoutingConfig) (*scoutResponder, error) {
	g, _ := multicastGroup(m.address())
	ifaces := map[int]string{}
	var list []*net.Interface
	for _, name := range m.interfaces() {
		ifi, err := net.InterfaceByName(name)
		if err != nil {
			return nil, fmt.Errorf("zenohpath: scouting.multicast.interface: no interface %q (have: %s)", name, interfaceNames())
		}
		if ifi.Flags&net.FlagUp == 0 || ifi.Flags&net.FlagMulticast == 0 {
			return nil, fmt.Errorf("zenohpath: scouting.multicast.interface: interface %q (flags %s) is not up and multicast-capable (up and multicast-capable: %s)", name, ifi.Flags, multicastInterfaceNames())
		}
		ifaces[ifi.Index] = name
		list = append(list, ifi)
	}
	pc, err := net.ListenPacket("udp4", g.String()) // SO_REUSEADDR is set for a multicast address
	if err != nil {
		return nil, fmt.Errorf("zenohpath: scouting.multicast.address %q: %w", m.address(), err)
	}
	p := ipv4.NewPacketConn(pc)
	for _, ifi := range list {
		if err := p.JoinGroup(ifi, &net.UDPAddr{IP: g.IP}); err != nil {
			_ = p.Close()
			return nil, fmt.Errorf("zenohpath: scouting.multicast.interface %q: join %s: %w", ifi.Name, g.IP, err)
		}
	}
	if err := p.SetControlMessage(ipv4.FlagInterface, true); err != nil {
		_ = p.Close()
		return nil, fmt.Errorf("zenohpath: scouting.multicast: %w", err)
	}
	return &scoutResponder{r: r, c: mcastConn{p, g}, ifaces: ifaces, kind: "multicast"}, nil
}

// multicastInterfaceNames lists the interfaces that are up and
// multicast-capable, "none" when there is none (a loopback is not).
func multicastInterfaceNames() string {
	ifs, _ := net.Interfaces()
	var names []string
	for _, ifi := range ifs {
		if ifi.Flags&net.FlagUp != 0 && ifi.Flags&net.FlagMulticast != 0 {
			names = append(names, ifi.Name)
		}
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

func interfaceNames() string {
	ifs, err := net.Interfaces()
	if err != nil || len(ifs) == 0 {
		return "none"
	}
	names := make([]string, len(ifs))
	for i, ifi := range ifs {
		names[i] = ifi.Name
	}
	return strings.Join(names, ", ")
}

func (s *scoutResponder) run() {
	defer s.r.wg.Done()
	buf := make([]byte, maxScoutSize)
	for {
		n, ifi, src, err := s.c.read(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			s.r.log.Debug("scouting read", "mode", s.kind, "err", err)
			continue
		}
		if s.ifaces != nil {
			if _, ok := s.ifaces[ifi]; !ok {
				s.drop(scoutDropInterface, src, "ifindex", ifi)
				continue
			}
		}
		var srcIP net.IP
		if u, ok := src.(*net.UDPAddr); ok {
			srcIP = u.IP
		}
		reply, reason := answerScout(buf[:n], s.r.zid, s.r.whatami, s.r.helloLocators(srcIP))
		if reason != "" {
			s.drop(reason, src)
			continue
		}
		if err := s.c.writeTo(reply, src); err != nil {
			s.drop(scoutDropSendFailed, src, "err", err)
			continue
		}
		s.r.metrics.helloSent()
		s.r.log.Debug("scout answered", "mode", s.kind, "from", src.String())
	}
}

// drop counts a datagram not answered; the first of each reason is logged
// at INFO (a SCOUT for another role is normal traffic: DEBUG), later ones
// at DEBUG.
func (s *scoutResponder) drop(reason string, src net.Addr, attrs ...any) {
	s.r.metrics.scoutDropped(reason)
	attrs = append([]any{"mode", s.kind, "reason", reason, "from", src.String()}, attrs...)
	if _, seen := s.logged.LoadOrStore(reason, struct{}{}); !seen && reason != scoutDropNotForUs {
		s.r.log.Info("scouting datagram not answered (first of its kind)", attrs...)
		return
	}
	s.r.log.Debug("scouting datagram not answered", attrs...)
}

// The client half: Scout.

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
