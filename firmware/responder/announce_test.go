package responder_test

import (
	"context"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/firmware/responder"
	"github.com/picobridge/picobridge/internal/interop"
	"github.com/picobridge/picobridge/knobs"
	"github.com/picobridge/picobridge/probe"
	"github.com/picobridge/picobridge/zenohpath"
)

// annHarness prints, per stdin line of fields, picobridge_probe_knobs_encode's
// bytes in hex; "B" prints the encoding of picobridge_probe_knobs_from_build.
const annHarness = `
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <string.h>
#include "picobridge_probe.h"

static void print(const picobridge_probe_knobs_t *k) {
    uint8_t out[PICOBRIDGE_PROBE_KNOBS_SIZE];
    picobridge_probe_knobs_encode(k, out);
    for (size_t i = 0; i < sizeof(out); i++) printf("%02x", out[i]);
    putchar('\n');
}

int main(void) {
    char line[512];
    while (fgets(line, sizeof(line), stdin) != NULL) {
        picobridge_probe_knobs_t k;
        if (line[0] == 'B') {
            picobridge_probe_knobs_from_build(&k);
            print(&k);
            continue;
        }
        unsigned bus, frag, fr, lease, fac, sock, nr, txb, spl, fl, ring, buf;
        if (sscanf(line, "E %u %u %u %u %u %u %u %u %u %u %u %u", &bus, &frag, &fr, &lease, &fac, &sock, &nr, &txb, &spl, &fl,
                   &ring, &buf) != 12) return 3;
        memset(&k, 0xa5, sizeof(k)); /* the encoder must not depend on padding */
        k.batch_unicast_size = (uint16_t)bus;
        k.frag_max_size = frag;
        k.fragmentation = fr != 0;
        k.lease_ms = lease;
        k.lease_expire_factor = (uint8_t)fac;
        k.socket_timeout_ms = sock;
        k.nano_ros = nr != 0;
        k.tx_batch = txb != 0;
        k.tx_split_lock = spl != 0;
        k.tx_flush_ms = (uint16_t)fl;
        k.subscriber_ring_depth = (uint16_t)ring;
        k.subscriber_buffer_size = buf;
        print(&k);
        fflush(stdout);
    }
    return 0;
}
`

func buildAnnHarness(t *testing.T, p responder.Pico, defines ...string) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, responder.Extract(dir))
	src := filepath.Join(dir, "ann.c")
	require.NoError(t, os.WriteFile(src, []byte(annHarness), 0o644))
	bin := filepath.Join(dir, "ann")
	args := append(append(p.CFlags(), responder.Warnings...), defines...)
	args = append(args, "-I"+dir, "-o", bin, src, filepath.Join(dir, responder.LibSource),
		"-L"+p.LibDir, "-Wl,-rpath,"+p.LibDir, "-lzenohpico", "-lpthread")
	out, err := exec.Command(responder.CC(), args...).CombinedOutput()
	require.NoError(t, err, "%s", out)
	return bin
}

func b2u(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestAnnouncementMatchesGo: the C encoder gives byte for byte what
// knobs.Announcement.Append gives for the same fields, and the Go decoder
// reads it back.
func TestAnnouncementMatchesGo(t *testing.T) {
	bin := buildAnnHarness(t, pico(t))
	rng := rand.New(rand.NewPCG(3, 4))
	cases := []knobs.Announcement{
		{BatchUnicastSize: 65535, FragMaxSize: 300000, Fragmentation: true, LeaseMs: 10000, LeaseExpireFactor: 3, SocketTimeoutMs: 100},
		{BatchUnicastSize: 1024, FragMaxSize: 2048, Fragmentation: true, LeaseMs: 10000, LeaseExpireFactor: 3, SocketTimeoutMs: 100,
			NanoROS: true, TxBatch: true, TxSplitLock: true, TxFlushMs: 50, SubscriberRingDepth: 4, SubscriberBufferSize: 1024},
	}
	for range 200 {
		cases = append(cases, knobs.Announcement{BatchUnicastSize: uint16(64 + rng.IntN(65535-64)), FragMaxSize: uint32(64 + rng.IntN(1<<30)),
			Fragmentation: rng.IntN(2) == 1, LeaseMs: uint32(1000 + rng.IntN(3599000)), LeaseExpireFactor: uint8(1 + rng.IntN(100)),
			SocketTimeoutMs: uint32(1 + rng.IntN(600000)), NanoROS: rng.IntN(2) == 1, TxBatch: rng.IntN(2) == 1, TxSplitLock: rng.IntN(2) == 1,
			TxFlushMs: uint16(1 + rng.IntN(60000)), SubscriberRingDepth: uint16(1 + rng.IntN(65535)), SubscriberBufferSize: uint32(16 + rng.IntN(1<<30))})
	}
	var in strings.Builder
	for _, a := range cases {
		fmt.Fprintf(&in, "E %d %d %d %d %d %d %d %d %d %d %d %d\n", a.BatchUnicastSize, a.FragMaxSize, b2u(a.Fragmentation), a.LeaseMs,
			a.LeaseExpireFactor, a.SocketTimeoutMs, b2u(a.NanoROS), b2u(a.TxBatch), b2u(a.TxSplitLock), a.TxFlushMs, a.SubscriberRingDepth, a.SubscriberBufferSize)
	}
	cmd := exec.Command(bin)
	cmd.Stdin = strings.NewReader(in.String())
	out, err := cmd.Output()
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	require.Len(t, lines, len(cases))
	for i, a := range cases {
		want := a.Append(nil)
		require.Equal(t, hex.EncodeToString(want), lines[i], "case %d: %+v", i, a)
		got, err := knobs.DecodeAnnouncement(want)
		require.NoError(t, err)
		if !a.NanoROS { // the decoder leaves the nano-ros fields zero
			a.TxBatch, a.TxSplitLock, a.TxFlushMs, a.SubscriberRingDepth, a.SubscriberBufferSize = false, false, 0, 0, 0
		}
		require.Equal(t, a, got)
	}
}

// buildAnnouncements are the announcements of the two zenoh-pico builds
// the tests know, byte for byte: 01 03 | flags 0001 | batch | ring 0000 |
// frag | lease 10000 | socket 100 | flush 0 | factor 3 | 0 | buf 0 | 0.
var buildAnnouncements = map[uint16]string{
	65535: "01030100ffff0000e09304001027000064000000000003000000000000000000", // GNUmakefile: frag 300000
	2048:  "0103010000080000001000001027000064000000000003000000000000000000", // CMake default: frag 4096
}

// TestBuildAnnouncementBytes: the known bytes are the Go encoder's for
// those builds (no zenoh-pico needed).
func TestBuildAnnouncementBytes(t *testing.T) {
	for batch, frag := range map[uint16]uint32{65535: 300000, 2048: 4096} {
		a := knobs.Announcement{BatchUnicastSize: batch, FragMaxSize: frag, Fragmentation: true, LeaseMs: 10000, LeaseExpireFactor: 3, SocketTimeoutMs: 100}
		require.Equal(t, buildAnnouncements[batch], hex.EncodeToString(a.Append(nil)))
	}
}

// fromBuild is the announcement the build's config.h gives (p.Macros),
// checked against buildAnnouncements when the build is one of those.
func fromBuild(t *testing.T, p responder.Pico) (knobs.Announcement, string) {
	t.Helper()
	m := p.Macros
	a := knobs.Announcement{BatchUnicastSize: uint16(m["Z_BATCH_UNICAST_SIZE"]), FragMaxSize: uint32(m["Z_FRAG_MAX_SIZE"]),
		Fragmentation: m["Z_FEATURE_FRAGMENTATION"] == 1, LeaseMs: uint32(m["Z_TRANSPORT_LEASE"]),
		LeaseExpireFactor: uint8(m["Z_TRANSPORT_LEASE_EXPIRE_FACTOR"]), SocketTimeoutMs: uint32(m["Z_CONFIG_SOCKET_TIMEOUT"])}
	want := hex.EncodeToString(a.Append(nil))
	if lit, ok := buildAnnouncements[a.BatchUnicastSize]; ok && a.LeaseMs == 10000 && a.SocketTimeoutMs == 100 {
		require.Equal(t, lit, want, "the Go encoder and the known bytes of the batch %d build", a.BatchUnicastSize)
	}
	return a, want
}

// TestAnnouncementFromBuild: picobridge_probe_knobs_from_build reads the
// zenoh-pico build's config.h (batch, Z_FRAG_MAX_SIZE, lease 10 s / 3,
// socket timeout 100 ms: the examples builds), and the nano-ros fields when
// the build defines them.
func TestAnnouncementFromBuild(t *testing.T) {
	p := pico(t)
	base, want := fromBuild(t, p)
	plain := buildAnnHarness(t, p)
	out, err := exec.Command(plain).Output()
	require.NoError(t, err) // no input: nothing
	require.Empty(t, out)
	cmd := exec.Command(plain)
	cmd.Stdin = strings.NewReader("B\n")
	out, err = cmd.Output()
	require.NoError(t, err)
	require.Equal(t, want+"\n", string(out))

	nros := buildAnnHarness(t, p, "-DNROS_ZENOH_TX_BATCH=1", "-DNROS_ZENOH_TX_FLUSH_MS=20", "-DNROS_ZENOH_SUBSCRIBER_RING_DEPTH=8")
	cmd = exec.Command(nros)
	cmd.Stdin = strings.NewReader("B\n")
	out, err = cmd.Output()
	require.NoError(t, err)
	raw, err := hex.DecodeString(strings.TrimSpace(string(out)))
	require.NoError(t, err)
	a, err := knobs.DecodeAnnouncement(raw)
	require.NoError(t, err)
	base.NanoROS, base.TxBatch, base.TxFlushMs, base.SubscriberRingDepth, base.SubscriberBufferSize = true, true, 20, 8, 1024
	require.Equal(t, base, a)
}

// TestResponderAnnouncesKnobs: the real C responder, at init, publishes
// its build's knobs on its knobs key; a subscriber already on the router
// gets exactly the from-build bytes.
func TestResponderAnnouncesKnobs(t *testing.T) {
	p := pico(t)
	_, want := fromBuild(t, p)
	bin, err := responder.Build(context.Background(), p, t.TempDir())
	require.NoError(t, err)
	r := zenohpath.NewRouter(zenohpath.RouterConfig{})
	t.Cleanup(func() { _ = r.Close() })
	ln, err := r.Listen(context.Background(), "tcp/127.0.0.1:0")
	require.NoError(t, err)
	sess, err := zenohpath.Open(context.Background(), zenohpath.Config{Router: r})
	require.NoError(t, err)
	defer sess.Close()
	got := make(chan zenohpath.Sample, 4)
	_, err = sess.DeclareSubscriber(probe.KnobsSubscription, func(s zenohpath.Sample) { got <- s })
	require.NoError(t, err)

	dev := start(t, bin, "-m", "client", "-e", ln.Endpoint(), "-n", "ann1")
	dev.WaitLine("ready", 10*time.Second)
	select {
	case s := <-got:
		require.Equal(t, probe.KnobsKey("ann1"), s.KeyExpr())
		require.Equal(t, want, hex.EncodeToString(s.Payload()))
	case <-time.After(interop.Scale(5 * time.Second)):
		t.Fatal("no knob announcement from the responder")
	}
}
