package zenohpath

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/internal/interop"
	"github.com/picobridge/picobridge/zenohpath/wire"
)

func mustHexBytes(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	require.NoError(t, err)
	return b
}

// picoScoutHex is the SCOUT zenoh-pico sends when it looks for a router in
// client mode (zenoh-wire.md §7, §14.2: what = router|peer = 3, its 16-byte
// zid with the I flag): header 0x01, version 0x09, flags 0xfb = zidlen 16
// (0xf0) | I (0x08) | what 3; zid 00..0f. Written by hand from the spec;
// zenoh-pico 1.9.0-36-g0ffe44a0's z_scout sent the same three bytes and its
// own random zid (captured on lo in a network namespace), from 0.0.0.0.
const picoScoutHex = "01 09 fb 000102030405060708090a0b0c0d0e0f"

// scoutTestZID is the router zid of the byte-exact tests: 8 bytes.
var scoutTestZID = wire.MustZID([]byte{0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef})

// helloHex is the HELLO a router with scoutTestZID listening on
// tcp/127.0.0.1:7447 must send (zenoh-wire.md §7): header 0x22 = HELLO |
// L, version 0x09, 0x70 = zidlen 8 << 4 | whatami router (0), zid, 1
// locator of 18 bytes. Written by hand, not with the codec.
const helloHex = "22 09 70 0123456789abcdef 01 12" + "7463702f3132372e302e302e313a37343437"

func TestScoutAnswerBytes(t *testing.T) {
	reply, reason := answerScout(mustHexBytes(t, picoScoutHex), scoutTestZID, wire.WhatAmIRouter, []string{"tcp/127.0.0.1:7447"})
	require.Empty(t, reason)
	require.Equal(t, hex.EncodeToString(mustHexBytes(t, helloHex)), hex.EncodeToString(reply))

	// a peer-mode Go router answers as a peer: whatami 1 in the low bits
	reply, reason = answerScout(mustHexBytes(t, picoScoutHex), scoutTestZID, wire.WhatAmIPeer, []string{"tcp/127.0.0.1:7447"})
	require.Empty(t, reason)
	require.Equal(t, byte(0x71), reply[2])

	// no locators: no L flag, no count
	reply, reason = answerScout(mustHexBytes(t, "01 09 01"), scoutTestZID, wire.WhatAmIRouter, nil)
	require.Empty(t, reason)
	require.Equal(t, "020970"+"0123456789abcdef", hex.EncodeToString(reply))
}

func TestScoutAnswerRefusals(t *testing.T) {
	hello := wire.Hello{Version: 9, ZID: scoutTestZID, Locators: []string{"tcp/1.2.3.4:7447"}}.Append(nil)
	for _, c := range []struct {
		name, hex string
		raw       []byte
		w         wire.WhatAmI
		reason    string
	}{
		{"client only", "01 09 04", nil, wire.WhatAmIRouter, scoutDropNotForUs},
		{"peer only, we are a router", "01 09 02", nil, wire.WhatAmIRouter, scoutDropNotForUs},
		{"router only, we are a peer", "01 09 01", nil, wire.WhatAmIPeer, scoutDropNotForUs},
		{"nothing asked", "01 09 00", nil, wire.WhatAmIRouter, scoutDropNotForUs},
		{"version 8", "01 08 03", nil, wire.WhatAmIRouter, scoutDropVersion},
		{"a HELLO", "", hello, wire.WhatAmIRouter, scoutDropNotScout},
		{"truncated zid", "01 09 fb 0001", nil, wire.WhatAmIRouter, scoutDropMalformed},
		{"empty", "", []byte{}, wire.WhatAmIRouter, scoutDropMalformed},
		{"transport message", "04", nil, wire.WhatAmIRouter, scoutDropMalformed},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := c.raw
			if b == nil {
				b = mustHexBytes(t, c.hex)
			}
			reply, reason := answerScout(b, scoutTestZID, c.w, []string{"tcp/127.0.0.1:7447"})
			require.Nil(t, reply)
			require.Equal(t, c.reason, reason)
		})
	}
}

// A HELLO never exceeds zenoh-pico's 2048-byte scouting buffer: trailing
// locators are left out.
func TestScoutAnswerFitsPicoBuffer(t *testing.T) {
	var locs []string
	for i := range 200 {
		locs = append(locs, fmt.Sprintf("tcp/10.0.%d.%d:7447", i/250, i%250))
	}
	reply, reason := answerScout(mustHexBytes(t, picoScoutHex), scoutTestZID, wire.WhatAmIRouter, locs)
	require.Empty(t, reason)
	require.LessOrEqual(t, len(reply), maxHelloSize)
	m, _, err := wire.ParseScouting(reply)
	require.NoError(t, err)
	h := m.(*wire.Hello)
	require.Greater(t, len(h.Locators), 50)
	require.Less(t, len(h.Locators), 200)
	require.Equal(t, locs[:len(h.Locators)], h.Locators)
}

func TestScoutExpandLocators(t *testing.T) {
	cidr := func(s string) ifAddr {
		ip, n, err := net.ParseCIDR(s)
		require.NoError(t, err)
		n.IP = ip
		return ifAddr{ip: ip, net: n, loopback: ip.IsLoopback()}
	}
	addrs := []ifAddr{cidr("127.0.0.1/8"), cidr("::1/128"), cidr("192.168.1.10/24"), cidr("10.8.0.2/16"),
		cidr("fe80::1/64"), cidr("2001:db8::5/64")}
	eps := []string{"tcp/0.0.0.0:7447", "udp/[::]:7448", "tcp/192.168.1.10:9000"}

	// a scout on 10.8.x.x: its network first, no loopback, no link-local
	require.Equal(t, []string{
		"tcp/10.8.0.2:7447", "tcp/192.168.1.10:7447",
		"udp/10.8.0.2:7448", "udp/192.168.1.10:7448", "udp/[2001:db8::5]:7448",
		"tcp/192.168.1.10:9000",
	}, expandLocators(eps, net.ParseIP("10.8.3.4"), addrs))

	// a scout on loopback also gets (first) the loopback addresses
	require.Equal(t, []string{
		"tcp/127.0.0.1:7447", "tcp/192.168.1.10:7447", "tcp/10.8.0.2:7447",
	}, expandLocators(eps[:1], net.ParseIP("127.0.0.1"), addrs))

	// a SCOUT from 0.0.0.0 (zenoh-pico on this host, over lo) is a loopback scout
	require.Equal(t, []string{
		"tcp/127.0.0.1:7447", "tcp/192.168.1.10:7447", "tcp/10.8.0.2:7447",
	}, expandLocators(eps[:1], net.IPv4zero, addrs))

	// a host with loopback only (a test netns): loopback it is
	require.Equal(t, []string{"tcp/127.0.0.1:7447"},
		expandLocators(eps[:1], net.ParseIP("127.0.0.1"), addrs[:2]))

	// explicit addresses and endpoint suffixes are kept as they are
	require.Equal(t, []string{"tcp/127.0.0.1:7447", "udp/192.168.1.10:7447#iface=eth0"},
		expandLocators([]string{"tcp/127.0.0.1:7447", "udp/0.0.0.0:7447#iface=eth0"}, net.ParseIP("192.168.1.99"), addrs[2:3]))
}

func TestScoutConfigProblems(t *testing.T) {
	require.Empty(t, ScoutingConfig{}.Problems())
	require.NoError(t, ScoutingConfig{Multicast: MulticastScoutingConfig{Enabled: true, Interface: "eth0, wlan0"}}.Validate())
	require.Equal(t, []string{"eth0", "wlan0"}, MulticastScoutingConfig{Interface: "eth0, wlan0,"}.interfaces())
	for _, c := range []struct {
		cfg  ScoutingConfig
		want string
	}{
		{ScoutingConfig{Multicast: MulticastScoutingConfig{Enabled: true}},
			"scouting.multicast.interface: required when scouting.multicast.enabled is true: name the interfaces to answer on"},
		{ScoutingConfig{Multicast: MulticastScoutingConfig{Enabled: true, Interface: "auto"}},
			`scouting.multicast.interface: "auto" is not supported`},
		{ScoutingConfig{Multicast: MulticastScoutingConfig{Address: "10.0.0.1:7446"}},
			`scouting.multicast.address: "10.0.0.1:7446": "10.0.0.1" is not an IPv4 multicast address (224.0.0.0/4), e.g. 224.0.0.224:7446`},
		{ScoutingConfig{Multicast: MulticastScoutingConfig{Address: "224.0.0.224"}},
			`scouting.multicast.address: "224.0.0.224": want an IPv4 multicast group and port`},
		{ScoutingConfig{Multicast: MulticastScoutingConfig{Address: "224.0.0.224:0"}},
			`scouting.multicast.address: "224.0.0.224:0": port "0": want 1 to 65535`},
		{ScoutingConfig{Unicast: UnicastScoutingConfig{Address: "224.0.0.224:7446"}},
			`scouting.unicast.address: "224.0.0.224:7446": "224.0.0.224" is not a unicast IP address`},
		{ScoutingConfig{Unicast: UnicastScoutingConfig{Address: "nohost"}},
			`scouting.unicast.address: "nohost": want IP:port`},
	} {
		err := c.cfg.Validate()
		require.Error(t, err)
		require.Contains(t, err.Error(), c.want)
	}
}

func TestScoutStartErrorsNameTheKey(t *testing.T) {
	r := NewRouter(RouterConfig{})
	defer r.Close()
	_, err := r.StartScouting(ScoutingConfig{Multicast: MulticastScoutingConfig{Enabled: true, Interface: "no-such-if0"}})
	require.ErrorContains(t, err, `scouting.multicast.interface: no interface "no-such-if0" (have: `)
	_, err = r.StartScouting(ScoutingConfig{Multicast: MulticastScoutingConfig{Enabled: true}})
	require.ErrorContains(t, err, "scouting.multicast.interface: required")
	if lo, err := net.InterfaceByName("lo"); err == nil && lo.Flags&net.FlagMulticast == 0 {
		// Linux's loopback has no multicast: the error says so and names the interfaces that have it
		_, err = r.StartScouting(ScoutingConfig{Multicast: MulticastScoutingConfig{Enabled: true, Interface: "lo"}})
		require.ErrorContains(t, err, `scouting.multicast.interface: interface "lo" (flags `+lo.Flags.String()+`) is not up and multicast-capable (up and multicast-capable: `+multicastInterfaceNames()+`)`)
	}
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	require.NoError(t, err)
	defer pc.Close()
	_, err = r.StartScouting(ScoutingConfig{Unicast: UnicastScoutingConfig{Address: pc.LocalAddr().String()}})
	require.ErrorContains(t, err, "scouting.unicast.address \""+pc.LocalAddr().String()+"\": ")
	require.ErrorContains(t, err, "address already in use")
	addrs, err := r.StartScouting(ScoutingConfig{})
	require.NoError(t, err)
	require.Empty(t, addrs)
}

func TestScoutMulticastEndpointRefused(t *testing.T) {
	r := NewRouter(RouterConfig{})
	defer r.Close()
	const ep = "udp/224.0.0.224:7447#iface=eth0"
	want := `endpoint "udp/224.0.0.224:7447#iface=eth0": UDP multicast endpoints (the Zenoh multicast transport) are not supported; ` +
		`supported: tcp/HOST:PORT and udp/HOST:PORT with a unicast address`
	err := CheckEndpoint(ep)
	require.ErrorIs(t, err, ErrMulticastEndpoint)
	require.ErrorContains(t, err, want)
	_, err = r.Listen(context.Background(), ep)
	require.ErrorIs(t, err, ErrMulticastEndpoint)
	require.ErrorContains(t, err, "zenohpath: listen: "+want)
	err = r.Connect(context.Background(), "udp/239.1.2.3:7447", true)
	require.ErrorIs(t, err, ErrMulticastEndpoint)
	require.ErrorContains(t, err, `zenohpath: connect: endpoint "udp/239.1.2.3:7447": UDP multicast endpoints`)
	require.Empty(t, r.Endpoints())
	// unicast UDP and TCP pass; syntax errors are the transport's
	require.NoError(t, CheckEndpoint("udp/127.0.0.1:7447"))
	require.NoError(t, CheckEndpoint("tcp/[::]:7447"))
	require.ErrorContains(t, CheckEndpoint("tcp/224.0.0.224"), "missing port")
}

// startUnicastScouting runs a router listening on loopback that answers
// unicast SCOUTs; it returns the router and its scouting address.
func startUnicastScouting(t *testing.T, zid wire.ZID, reg prometheus.Registerer) (*Router, string) {
	t.Helper()
	m, err := NewMetrics(reg)
	require.NoError(t, err)
	r := NewRouter(RouterConfig{ZID: zid, Metrics: m})
	t.Cleanup(func() { require.NoError(t, r.Close()) })
	_, err = r.Listen(context.Background(), "tcp/127.0.0.1:0")
	require.NoError(t, err)
	addrs, err := r.StartScouting(ScoutingConfig{Unicast: UnicastScoutingConfig{Address: "127.0.0.1:0"}})
	require.NoError(t, err)
	require.Len(t, addrs, 1)
	return r, addrs[0]
}

// exchange sends one datagram to addr and returns the answer (nil when
// none came within wait).
func exchange(t *testing.T, addr string, b []byte, wait time.Duration) []byte {
	t.Helper()
	c, err := net.Dial("udp", addr)
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Write(b)
	require.NoError(t, err)
	require.NoError(t, c.SetReadDeadline(time.Now().Add(wait)))
	buf := make([]byte, 4096)
	n, err := c.Read(buf)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return nil
	}
	require.NoError(t, err)
	return buf[:n]
}

// TestScoutUnicastLoopback: a SCOUT sent straight to the router's unicast
// scouting address gets the HELLO, byte for byte; Scout lists the router;
// SCOUTs for other roles and garbage are counted, not answered.
func TestScoutUnicastLoopback(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	r, addr := startUnicastScouting(t, scoutTestZID, reg)
	eps := r.Endpoints()
	require.Len(t, eps, 1)

	want := wire.Hello{Version: 9, WhatAmI: wire.WhatAmIRouter, ZID: scoutTestZID, Locators: eps}.Append(nil)
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(eps[0], "tcp/"))
	loc := "tcp/127.0.0.1:" + port
	handWritten := append(mustHexBytes(t, "22 09 70 0123456789abcdef 01"), byte(len(loc)))
	handWritten = append(handWritten, loc...)
	require.Equal(t, handWritten, want)
	got := exchange(t, addr, mustHexBytes(t, picoScoutHex), 10*time.Second)
	require.Equal(t, hex.EncodeToString(want), hex.EncodeToString(got))

	var hellos []Hello
	require.NoError(t, Scout(context.Background(), ScoutOptions{Address: addr, Timeout: interop.Scale(2 * time.Second)}, func(h Hello) {
		hellos = append(hellos, h)
	}))
	require.Len(t, hellos, 1, "one HELLO per zid although the SCOUT is sent %d times", scoutResends)
	require.Equal(t, scoutTestZID, hellos[0].ZID)
	require.Equal(t, wire.WhatAmIRouter, hellos[0].WhatAmI)
	require.Equal(t, []string{loc}, hellos[0].Locators)
	require.Equal(t, addr, hellos[0].From)
	require.Equal(t, "Hello { zid: "+scoutTestZID.String()+", whatami: router, locators: ["+loc+"] }", hellos[0].String())

	var none []Hello
	require.NoError(t, Scout(context.Background(), ScoutOptions{Address: addr, What: wire.WhatClient, Timeout: 200 * time.Millisecond},
		func(h Hello) { none = append(none, h) }))
	require.Empty(t, none)
	for _, b := range [][]byte{{0x04}, mustHexBytes(t, "01 08 03"), want} {
		require.Nil(t, exchange(t, addr, b, 100*time.Millisecond))
	}
	dropped := func(reason string) float64 {
		return testutil.ToFloat64(r.metrics.scoutDr.WithLabelValues(reason))
	}
	require.Eventually(t, func() bool {
		return dropped(scoutDropNotForUs) == scoutResends && dropped(scoutDropMalformed) == 1 &&
			dropped(scoutDropVersion) == 1 && dropped(scoutDropNotScout) == 1
	}, 10*time.Second, 5*time.Millisecond)
	require.Equal(t, float64(1+scoutResends), testutil.ToFloat64(r.metrics.hellos))
	require.Zero(t, dropped(scoutDropInterface))
	require.Zero(t, dropped(scoutDropSendFailed))
	problems, err := testutil.GatherAndLint(reg, "picobridge_router_scouting_dropped_total", "picobridge_router_scouting_hellos_total")
	require.NoError(t, err)
	require.Empty(t, problems)
}

// Scout stops at its context's end with the context's error.
func TestScoutContextCancel(t *testing.T) {
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0") // a silent "router"
	require.NoError(t, err)
	defer pc.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Scout(ctx, ScoutOptions{Address: pc.LocalAddr().String(), Timeout: time.Hour}, func(Hello) {})
	}()
	buf := make([]byte, 64)
	n, _, err := pc.ReadFrom(buf)
	require.NoError(t, err)
	m, _, err := wire.ParseScouting(buf[:n])
	require.NoError(t, err)
	require.Equal(t, wire.WhatRouter|wire.WhatPeer, m.(*wire.Scout).What)
	require.Equal(t, 16, m.(*wire.Scout).ZID.Len())
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
	require.ErrorContains(t, Scout(context.Background(), ScoutOptions{Address: "0.0.0.0:7446"}, nil), "want a multicast group or a unicast IP with a port")
}

// FuzzScoutAnswer: whatever a datagram holds, answerScout does not panic,
// answers only a version-9 SCOUT asking for our role, and the answer is a
// HELLO that decodes to our zid and locators within the size bound.
func FuzzScoutAnswer(f *testing.F) {
	for _, s := range []string{picoScoutHex, "01 09 01", "01 09 04", "01 08 03", "21 09 03 00", helloHex, "04", ""} {
		f.Add(mustHexBytes(f, s))
	}
	locs := []string{"tcp/127.0.0.1:7447", "udp/[::1]:7447"}
	f.Fuzz(func(t *testing.T, b []byte) {
		reply, reason := answerScout(b, scoutTestZID, wire.WhatAmIRouter, locs)
		if reason != "" {
			require.Nil(t, reply)
			require.Contains(t, scoutDropReasons, reason)
			return
		}
		m, _, err := wire.ParseScouting(b)
		require.NoError(t, err)
		s := m.(*wire.Scout)
		require.Equal(t, wire.ProtoVersion, s.Version)
		require.NotZero(t, s.What&wire.WhatRouter)
		require.LessOrEqual(t, len(reply), maxHelloSize)
		hm, n, err := wire.ParseScouting(reply)
		require.NoError(t, err)
		require.Equal(t, len(reply), n)
		h := hm.(*wire.Hello)
		require.Equal(t, scoutTestZID, h.ZID)
		require.Equal(t, locs, h.Locators)
	})
}
