package responder_test

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/firmware/responder"
	"github.com/picobridge/picobridge/probe"
)

// TestCompileWarnings compiles both C files with -Wall -Wextra -Werror
// -pedantic (C11) against the zenoh-pico headers.
func TestCompileWarnings(t *testing.T) {
	p := pico(t)
	require.NoError(t, responder.Check(context.Background(), p, t.TempDir()))
}

// harness drives picobridge_probe_respond, picobridge_probe_key and
// picobridge_probe_name_valid from stdin lines:
//
//	R <hex ping> <dev_recv> <dev_send>   → hex pong, or "invalid"
//	K <name>                             → "<ping key> <pong key>", or "invalid"
const harness = `
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "picobridge_probe.h"

static int unhex(const char *s, uint8_t *out, size_t cap, size_t *n) {
    size_t l = strlen(s);
    if (l % 2 != 0 || l / 2 > cap) return -1;
    for (size_t i = 0; i < l / 2; i++) {
        unsigned v;
        if (sscanf(s + 2 * i, "%2x", &v) != 1) return -1;
        out[i] = (uint8_t)v;
    }
    *n = l / 2;
    return 0;
}

int main(void) {
    char line[1024];
    while (fgets(line, sizeof(line), stdin) != NULL) {
        line[strcspn(line, "\n")] = '\0';
        if (line[0] == 'R') {
            char hexs[512];
            unsigned long long recv, send;
            uint8_t ping[200], pong[PICOBRIDGE_PROBE_SIZE];
            size_t n = 0;
            if (sscanf(line, "R %511s %llu %llu", hexs, &recv, &send) != 3) return 3;
            if (strcmp(hexs, "-") != 0 && unhex(hexs, ping, sizeof(ping), &n) != 0) return 4;
            if (picobridge_probe_respond(ping, n, recv, send, pong) != 0) {
                puts("invalid");
                continue;
            }
            for (size_t i = 0; i < sizeof(pong); i++) printf("%02x", pong[i]);
            putchar('\n');
        } else if (line[0] == 'K') {
            const char *name = line + 2;
            char a[PICOBRIDGE_PROBE_KEY_MAX], b[PICOBRIDGE_PROBE_KEY_MAX];
            int la = picobridge_probe_key(a, sizeof(a), name, PICOBRIDGE_PROBE_KIND_PING);
            int lb = picobridge_probe_key(b, sizeof(b), name, PICOBRIDGE_PROBE_KIND_PONG);
            bool v = picobridge_probe_name_valid(name);
            if (la < 0 || lb < 0 || !v) {
                if (la >= 0 || lb >= 0 || v) return 5;
                puts("invalid");
                continue;
            }
            if ((size_t)la != strlen(a) || (size_t)lb != strlen(b)) return 6;
            printf("%s %s\n", a, b);
        } else {
            return 2;
        }
        fflush(stdout);
    }
    return 0;
}
`

func buildHarness(t *testing.T, p responder.Pico) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, responder.Extract(dir))
	src := filepath.Join(dir, "harness.c")
	require.NoError(t, os.WriteFile(src, []byte(harness), 0o644))
	bin := filepath.Join(dir, "harness")
	args := append(p.CFlags(), responder.Warnings...)
	args = append(args, "-I"+dir, "-o", bin, src, filepath.Join(dir, responder.LibSource),
		"-L"+p.LibDir, "-Wl,-rpath,"+p.LibDir, "-lzenohpico", "-lpthread")
	out, err := exec.Command(responder.CC(), args...).CombinedOutput()
	require.NoError(t, err, "%s", out)
	return bin
}

// TestRespondMatchesBridge feeds the same pings and device times to the C
// picobridge_probe_respond and to probe.Respond and wants the same bytes
// (or both rejecting the input); the C key helpers must agree with
// probe.PingKey, PongKey and ParseKey.
func TestRespondMatchesBridge(t *testing.T) {
	bin := buildHarness(t, pico(t))

	type respCase struct {
		ping       []byte
		recv, send uint64
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var cases []respCase
	for i := 0; i < 300; i++ {
		p := probe.Message{Kind: probe.Ping, Flags: uint16(rng.Uint32()), Seq: rng.Uint32(), GwSend: rng.Uint64()}
		if i%10 == 0 { // a ping whose device fields are not zero: they are overwritten
			p.DevRecv, p.DevSend = rng.Uint64(), rng.Uint64()
		}
		cases = append(cases, respCase{p.Append(nil), rng.Uint64(), rng.Uint64()})
	}
	valid := probe.Message{Kind: probe.Ping, Seq: 7, GwSend: 1 << 40}.Append(nil)
	edge := []uint64{0, 1, 1<<63 - 1, 1 << 63, ^uint64(0)}
	for _, r := range edge {
		cases = append(cases, respCase{valid, r, ^r})
	}
	mut := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), valid...)) }
	invalid := [][]byte{
		nil,
		valid[:31],
		append(append([]byte(nil), valid...), 0),
		mut(func(b []byte) []byte { b[0] = 2; return b }),
		mut(func(b []byte) []byte { b[0] = 0; return b }),
		mut(func(b []byte) []byte { b[1] = 2; return b }), // a pong is not answered
		mut(func(b []byte) []byte { b[1] = 0; return b }),
		mut(func(b []byte) []byte { b[1] = 3; return b }),
		make([]byte, 64),
	}
	for _, b := range invalid {
		cases = append(cases, respCase{b, 5, 6})
	}

	var in strings.Builder
	for _, c := range cases {
		h := hex.EncodeToString(c.ping)
		if h == "" {
			h = "-"
		}
		fmt.Fprintf(&in, "R %s %d %d\n", h, c.recv, c.send)
	}
	names := []string{"pico", "robot1-imu", "a", "A.b_c-9", strings.Repeat("x", 64), strings.Repeat("y", 65),
		"", "bad/name", "bad*", "sp ace", "@at", "ü", "a$b"}
	for _, n := range names {
		fmt.Fprintf(&in, "K %s\n", n)
	}

	cmd := exec.Command(bin)
	cmd.Stdin = strings.NewReader(in.String())
	out, err := cmd.Output()
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	require.Len(t, lines, len(cases)+len(names))

	for i, c := range cases {
		want, werr := probe.Respond(c.ping, c.recv, c.send)
		if werr != nil {
			require.Equal(t, "invalid", lines[i], "case %d: ping %x: Go rejects it (%v)", i, c.ping, werr)
			continue
		}
		require.Equal(t, hex.EncodeToString(want), lines[i], "case %d: ping %x recv %d send %d", i, c.ping, c.recv, c.send)
		p, err := probe.Decode(want)
		require.NoError(t, err)
		require.Equal(t, probe.Pong, p.Kind)
		require.Equal(t, c.recv, binary.LittleEndian.Uint64(want[16:]))
	}
	for i, n := range names {
		got := lines[len(cases)+i]
		_, _, ok := probe.ParseKey(probe.PingKey(n))
		if !ok {
			require.Equal(t, "invalid", got, "name %q", n)
			continue
		}
		require.Equal(t, probe.PingKey(n)+" "+probe.PongKey(n), got, "name %q", n)
	}
}
