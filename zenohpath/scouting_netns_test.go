package zenohpath

import (
	"context"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/ipv4"

	"github.com/picobridge/picobridge/internal/interop"
	"github.com/picobridge/picobridge/internal/netns"
	"github.com/picobridge/picobridge/internal/picotest"
	"github.com/picobridge/picobridge/zenohpath/wire"
)

// startMulticastScouting runs a router listening on tcp/0.0.0.0 (any port)
// that answers multicast SCOUTs on DefaultScoutingAddress on iface; it
// returns the router and the locators its HELLO must carry in a netns whose
// only addresses are loopback: 127.0.0.1, then ::1 when the wildcard
// listener is dual-stack (Go listens on [::] for 0.0.0.0).
func startMulticastScouting(t *testing.T, zid wire.ZID, iface string) (*Router, []string) {
	t.Helper()
	m, err := NewMetrics(nil)
	require.NoError(t, err)
	r := NewRouter(RouterConfig{ZID: zid, Metrics: m})
	t.Cleanup(func() { require.NoError(t, r.Close()) })
	ln, err := r.Listen(context.Background(), "tcp/0.0.0.0:0")
	require.NoError(t, err)
	host, port, err := net.SplitHostPort(strings.TrimPrefix(ln.Endpoint(), "tcp/"))
	require.NoError(t, err)
	locs := []string{"tcp/127.0.0.1:" + port}
	if host == "::" {
		locs = append(locs, "tcp/[::1]:"+port)
	}
	addrs, err := r.StartScouting(ScoutingConfig{Multicast: MulticastScoutingConfig{Enabled: true, Interface: iface}})
	require.NoError(t, err)
	require.Equal(t, []string{DefaultScoutingAddress}, addrs)
	return r, locs
}

func ipCmd(t *testing.T, args ...string) {
	t.Helper()
	out, err := exec.Command("ip", args...).CombinedOutput()
	require.NoError(t, err, "ip %s: %s", strings.Join(args, " "), out)
}

// TestScoutMulticastNetns runs inside a network namespace of its own: a
// SCOUT to 224.0.0.224:7446 on loopback (zenoh-pico's bytes) is answered
// unicast with the exact HELLO (wildcard listener expanded to 127.0.0.1);
// Scout lists the router; a router that answers on another interface only
// does not answer (counted as interface); the real Rust Zenoh's
// zenoh.scout finds the router; with ZENOH_PICO_EXAMPLES set, z_scout
// lists it and z_info with no endpoint opens a session through it.
func TestScoutMulticastNetns(t *testing.T) {
	if !netns.Run(t) {
		return
	}
	zid := scoutTestZID
	r, locs := startMulticastScouting(t, zid, "lo")

	t.Run("pico_bytes", func(t *testing.T) {
		pc, err := net.ListenPacket("udp4", ":0")
		require.NoError(t, err)
		defer pc.Close()
		lo, err := net.InterfaceByName("lo")
		require.NoError(t, err)
		require.NoError(t, ipv4.NewPacketConn(pc).SetMulticastInterface(lo))
		group, _ := multicastGroup(DefaultScoutingAddress)
		_, err = pc.WriteTo(mustHexBytes(t, picoScoutHex), group)
		require.NoError(t, err)
		want := append(mustHexBytes(t, "22 09 70 0123456789abcdef"), byte(len(locs)))
		for _, l := range locs {
			want = append(append(want, byte(len(l))), l...)
		}
		require.NoError(t, pc.SetReadDeadline(time.Now().Add(interop.Scale(10*time.Second))))
		buf := make([]byte, 4096)
		n, from, err := pc.ReadFrom(buf)
		require.NoError(t, err)
		require.Equal(t, hex.EncodeToString(want), hex.EncodeToString(buf[:n]))
		require.Equal(t, "127.0.0.1", from.(*net.UDPAddr).IP.String(), "HELLO comes unicast from the router's address")
	})

	t.Run("go_scout", func(t *testing.T) {
		var hellos []Hello
		require.NoError(t, Scout(context.Background(), ScoutOptions{Interface: "lo", Timeout: interop.Scale(2 * time.Second)},
			func(h Hello) { hellos = append(hellos, h) }))
		require.Len(t, hellos, 1)
		require.Equal(t, zid, hellos[0].ZID)
		require.Equal(t, locs, hellos[0].Locators)
		var none []Hello
		require.NoError(t, Scout(context.Background(), ScoutOptions{Interface: "lo", What: wire.WhatClient, Timeout: 200 * time.Millisecond},
			func(h Hello) { none = append(none, h) }))
		require.Empty(t, none)
	})

	// Every SCOUT was sent before Scout returned, but the router may still be
	// answering the last one on a starved host: wait for the exact count.
	require.Eventually(t, func() bool { return testutil.ToFloat64(r.metrics.hellos) >= float64(1+scoutResends) },
		interop.Scale(5*time.Second), 10*time.Millisecond)
	require.Equal(t, float64(1+scoutResends), testutil.ToFloat64(r.metrics.hellos), "one HELLO for the pico SCOUT, one per SCOUT Scout sends, none for what=client")
	t.Run("rust_zenoh_scout", func(t *testing.T) {
		py := interop.FindPython(t)
		p := picotest.Start(t, py, "-c", pyScoutScript, interop.Seconds(4*time.Second))
		line := p.WaitLine("HELLO ", 20*time.Second)
		require.Equal(t, "HELLO "+zid.String()+" router "+strings.Join(locs, ","), line)
		require.Zero(t, p.Wait(20*time.Second))
	})

	t.Run("pico", func(t *testing.T) {
		dir := picotest.Examples(t)
		sc := picotest.StartExample(t, dir, "z_scout")
		require.Zero(t, sc.Wait(20*time.Second))
		out := sc.Output()
		// pico prints the zid bytes in wire order, upper case
		require.Contains(t, out, `Hello { zid: Some(`+strings.ToUpper(hex.EncodeToString(zid.Bytes()))+`), whatami: "Router", locators: ["`+strings.Join(locs, `", "`)+`"] }`)

		info := picotest.StartExample(t, dir, "z_info")
		require.Zero(t, info.Wait(20*time.Second))
		// z_info prints router ids as 128-bit numbers: zenohd's form, zero-padded
		require.Contains(t, info.Output(), "Routers IDs:\n "+strings.Repeat("0", 32-len(zid.String()))+zid.String(), "z_info (no -e) scouted and opened a session with our router")

		// z_pub with no endpoint: scouts, connects, and its samples reach a
		// subscriber on the router
		s, err := Open(context.Background(), Config{Router: r})
		require.NoError(t, err)
		defer s.Close()
		got, err := s.DeclareSubscriberChan("demo/example/**", 8)
		require.NoError(t, err)
		pub := picotest.StartExample(t, dir, "z_pub", "-n", "2", "-a")
		pub.WaitLine("Publisher has matching subscribers.", 20*time.Second)
		for i := range 2 {
			select {
			case smp := <-got.Samples():
				require.Equal(t, "demo/example/zenoh-pico-pub", smp.KeyExpr())
				require.Equal(t, fmt.Sprintf("[%4d] Pub from Pico!", i), string(smp.Payload()))
			case <-time.After(interop.Scale(10 * time.Second)):
				t.Fatal("no sample from z_pub")
			}
		}
		require.Zero(t, pub.Wait(20*time.Second))
	})

	// the interface filter: a veth pair v0-v1; a router answering on v1
	// only. A SCOUT leaving by v0 arrives on v1: that router answers, the
	// one on lo sees it too (Linux delivers a group's datagrams to every
	// socket on the port) and must not.
	t.Run("interface_filter", func(t *testing.T) {
		if out, err := exec.Command("ip", "link", "add", "v0", "type", "veth", "peer", "name", "v1").CombinedOutput(); err != nil {
			t.Skipf("SKIP: no veth pair in this kernel (%v: %s)", err, out)
		}
		ipCmd(t, "addr", "add", "10.99.0.1/24", "dev", "v0")
		ipCmd(t, "addr", "add", "10.99.0.2/24", "dev", "v1")
		ipCmd(t, "link", "set", "v0", "up", "multicast", "on")
		ipCmd(t, "link", "set", "v1", "up", "multicast", "on")
		// both ends are in this namespace: let v1 accept datagrams whose
		// source (10.99.0.1) is a local address (this namespace's sysctls only)
		for _, f := range []string{"conf/v1/accept_local", "conf/v1/rp_filter", "conf/all/rp_filter"} {
			v := "0"
			if strings.HasSuffix(f, "accept_local") {
				v = "1"
			}
			require.NoError(t, os.WriteFile("/proc/sys/net/ipv4/"+f, []byte(v), 0o644))
		}
		zidB := wire.MustZID([]byte{0xb0, 0x0b})
		b, _ := startMulticastScouting(t, zidB, "v1")
		before := testutil.ToFloat64(r.metrics.hellos)
		var hellos []Hello
		require.NoError(t, Scout(context.Background(), ScoutOptions{Interface: "v0", Timeout: interop.Scale(2 * time.Second)},
			func(h Hello) { hellos = append(hellos, h) }))
		require.Len(t, hellos, 1)
		require.Equal(t, zidB, hellos[0].ZID)
		require.Contains(t, hellos[0].Locators[:2], "tcp/10.99.0.2:"+strings.TrimPrefix(b.Endpoints()[0], "tcp/[::]:"))
		require.Eventually(t, func() bool {
			return testutil.ToFloat64(b.metrics.hellos) == scoutResends &&
				testutil.ToFloat64(r.metrics.scoutDr.WithLabelValues(scoutDropInterface)) == scoutResends
		}, interop.Scale(10*time.Second), 5*time.Millisecond)
		require.Equal(t, before, testutil.ToFloat64(r.metrics.hellos), "the router on lo did not answer")
	})
}

// pyScoutScript scouts for routers with the real Zenoh (Python) on lo for
// argv[1] seconds and prints one "HELLO <zid> <whatami> <locators,>" line
// per answer.
const pyScoutScript = `
import sys, time, zenoh
conf = zenoh.Config()
conf.insert_json5("scouting/multicast/interface", '"lo"')
def on_hello(h):
    print("HELLO", str(h.zid), str(h.whatami).lower(), ",".join(str(l) for l in h.locators), flush=True)
s = zenoh.scout(handler=on_hello, what="router", config=conf)
time.sleep(float(sys.argv[1]))
s.stop()
`
