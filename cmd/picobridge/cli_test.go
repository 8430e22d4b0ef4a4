package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/internal/interop"
	"github.com/picobridge/picobridge/zenohpath"
)

// TestExitStatus runs the binary's main in-process: every usage or
// configuration error exits 2 with one line naming the flag (and the
// configuration key) once, before anything starts (nothing else on stderr).
func TestExitStatus(t *testing.T) {
	t.Setenv("ROS_DOMAIN_ID", "")
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"frobnicate"}, 2, `picobridge: unknown command "frobnicate" for "picobridge" (see picobridge --help)`},
		{[]string{"run", "--bogus"}, 2, `picobridge: unknown flag: --bogus (see picobridge run --help)`},
		{[]string{"run", "extra"}, 2, `picobridge: unknown command "extra" for "picobridge run" (see picobridge run --help)`},
		{[]string{"bag", "info"}, 2, `picobridge: picobridge bag info: accepts 1 arg(s), received 0 (see picobridge bag info --help)`},
		{[]string{"run", "--domain", "x"}, 2, `picobridge: invalid argument "x" for "-d, --domain" flag: strconv.ParseInt: parsing "x": invalid syntax (see picobridge run --help)`},
		{[]string{"run", "--domain", "300"}, 2, `picobridge: --domain: dds.domain: must be in 0..232 (got 300)`},
		{[]string{"run", "--mode", "bogus"}, 2, `picobridge: --mode: zenoh.mode: unknown value "bogus" (allowed: router, peer, client)`},
		{[]string{"run", "-l", "tcp/127.0.0.1:99999"}, 2, `picobridge: --listen: zenoh.listen[0]: port 99999: want 0 to 65535 (allowed: tcp/<host>:<port>, udp/<host>:<port>, tls/<host>:<port>)`},
		// client mode: the error names the flags, not the embedded default's zenoh.connect line
		{[]string{"run", "-m", "client"}, 2, `picobridge: --mode: zenoh.mode: client mode needs an upstream router: give one with -e/--connect ENDPOINT (zenoh.connect is empty)`},
		{[]string{"run", "--print-config", "-m", "client", "-e", "tcp/127.0.0.1:7447", "-l", "tcp/127.0.0.1:7448"}, 2, `picobridge: --listen: a client does not listen (zenoh.mode client): drop -l, or run with --mode router or peer`},
		{[]string{"run", "-e", "udp/127.0.0.1:70000"}, 2, `picobridge: --connect: zenoh.connect[0]: port 70000: want 0 to 65535 (allowed: tcp/<host>:<port>, udp/<host>:<port>, tls/<host>:<port>)`},
		// the host is split as the listener splits it, before anything binds
		{[]string{"run", "-l", "tcp/[::1:7447"}, 2, `picobridge: --listen: zenoh.listen[0]: address "[::1:7447": missing ']' in address (allowed: tcp/<host>:<port>, udp/<host>:<port>, tls/<host>:<port>)`},
		// a tls/ connect endpoint's trust store is loaded before anything starts, not at each re-dial
		{[]string{"run", "-e", "tls/127.0.0.1:7448", "--cfg", "transport.link.tls.root_ca_certificate:/nonexistent/ca.pem"}, 2, `picobridge: --cfg: transport.link.tls.root_ca_certificate: tls root_ca_certificate "/nonexistent/ca.pem": open /nonexistent/ca.pem: no such file or directory (needed by zenoh.connect[0] tls/127.0.0.1:7448)`},
		{[]string{"run", "--metrics", "127.0.0.1:99999"}, 2, `picobridge: --metrics: metrics.listen: port 99999: want 0 to 65535 (got "127.0.0.1:99999")`},
		{[]string{"run", "--metrics", "nonsense"}, 2, `picobridge: --metrics: metrics.listen: want host:port or empty (got "nonsense")`},
		{[]string{"run", "--cfg", "policy.batched.rate_hz:abc"}, 2, `picobridge: --cfg: policy.batched.rate_hz: want a number (got "abc")`},
		{[]string{"run", "--cfg", "policy.batched.rate_hz:-1"}, 2, `picobridge: --cfg: policy.batched.rate_hz: must be > 0 (got -1)`},
		{[]string{"run", "--cfg", "nokey:1"}, 2, `picobridge: --cfg: nokey: unknown key "nokey" (allowed: access_control, classifier, dds, devices, metrics, policy, routes, services, supervisor, transport, zenoh)`},
		{[]string{"run", "--cfg", "foo"}, 2, `picobridge: --cfg "foo": want KEY:YAML_VALUE, e.g. policy.batched.rate_hz:20`},
		{[]string{"run", "-c", "/nonexistent/picobridge.yaml"}, 2, `picobridge: /nonexistent/picobridge.yaml: open /nonexistent/picobridge.yaml: no such file or directory`},
		{[]string{"run", "--no-dds", "--metrics", "off", "-l", "tcp/127.0.0.1:0", "--log-level", "loud"}, 2, `picobridge: --log-level "loud": want debug, info, warn or error`},
		{[]string{"router", "-l", "tcp/127.0.0.1:99999"}, 2, `picobridge: --listen: transport: endpoint "tcp/127.0.0.1:99999": port "99999": want 0 to 65535 (allowed: tcp/<host>:<port>, udp/<host>:<port>, tls/<host>:<port>)`},
		{[]string{"router", "-l", "tcp:127.0.0.1:7447"}, 2, `picobridge: --listen: transport: endpoint "tcp:127.0.0.1:7447": want proto/host:port (allowed: tcp/<host>:<port>, udp/<host>:<port>, tls/<host>:<port>)`},
		{[]string{"router", "-e", "127.0.0.1:7447"}, 2, `picobridge: --connect: transport: endpoint "127.0.0.1:7447": want proto/host:port (allowed: tcp/<host>:<port>, udp/<host>:<port>, tls/<host>:<port>)`},
		{[]string{"router", "--metrics", "127.0.0.1:99999"}, 2, `picobridge: --metrics "127.0.0.1:99999": port "99999": want 0 to 65535`},
		{[]string{"router", "--lease", "1ms"}, 2, `picobridge: --lease 1ms: want 1s to 1h0m0s`},
		{[]string{"router", "--admit-rate", "-1"}, 2, `picobridge: --admit-rate -1: must be ≥ 0`},
		{[]string{"run", "--no-dds", "--metrics", "off", "-l", "tcp/127.0.0.1:0", "--admit-burst", "-2"}, 2, `picobridge: --admit-burst -2: must be ≥ 0`},
		{[]string{"router", "--connect-as", "peer"}, 2, `picobridge: --connect-as "peer": want client or router`},
		{[]string{"knobs", "advise", "--platform", "zephyr"}, 2, `picobridge: knobs advise: want --traffic FILE, or --gateway ADDR for the traffic a running gateway observes`},
		{[]string{"knobs", "explain", "--platform", "vxworks"}, 2, `picobridge: platform: no platform named "vxworks" (known: baremetal, freertos, generic, nuttx, posix, threadx, zephyr)`},
		{[]string{"bag", "replay", "--rate", "0", "x"}, 2, `picobridge: --rate 0 must be a positive number`},
		{[]string{"bag", "replay", "--fixed-rate", "scan", "x"}, 2, `picobridge: --fixed-rate "scan": want TOPIC=HZ, e.g. /scan=30`},
		// a device profile is resolved before anything starts, --print-config included (no silent success)
		{[]string{"run", "--print-config", "--cfg", "devices.list:[{name: esp1, platform: freertoss}]"}, 2, `picobridge: --cfg: devices.list[0].platform: no platform named "freertoss" (known: baremetal, freertos, generic, nuttx, posix, threadx, zephyr)`},
		{[]string{"run", "--print-config", "--cfg", "devices.default.board:esp33"}, 2, `picobridge: --cfg: devices.default.board: no board named "esp33" and no such file (known: mps2-an385, esp32, nuttx-sim, linux-host, qemu-riscv64, native_sim, nucleo_f429zi)`},
		{[]string{"scout", "--what", "bogus"}, 2, `picobridge: --what "bogus": want router, peer and/or client joined by |`},
		{[]string{"scout", "--ttl", "0"}, 2, `picobridge: --ttl 0: want 1 to 255`},
		{[]string{"bag", "info", "/nonexistent/bag"}, 2, `picobridge: /nonexistent/bag: no such file or directory (want a rosbag2 bag directory, its metadata.yaml or a .db3 file)`},
		{[]string{"bag", "replay", "--dry-run", "/nonexistent/bag"}, 2, `picobridge: /nonexistent/bag: no such file or directory (want a rosbag2 bag directory, its metadata.yaml or a .db3 file)`},
		{[]string{"status", "--timeout", "1s", "--addr", "127.0.0.1:1"}, 1, `picobridge: is a gateway running there? Get "http://127.0.0.1:1/devicez": dial tcp 127.0.0.1:1: connect: connection refused`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := realMain(context.Background(), tc.args, &stdout, &stderr)
			require.Equal(t, tc.want+"\n", stderr.String())
			require.Equal(t, tc.code, code)
			require.Empty(t, stdout.String())
		})
	}
}

// TestRunConfigProblemsInOnePass: a file with a range problem and a device
// profile problem gets both named in one run (status 2), and a flag that
// sets the same key replaces the file's value before it is checked.
func TestRunConfigProblemsInOnePass(t *testing.T) {
	f := filepath.Join(t.TempDir(), "bad.yaml")
	require.NoError(t, os.WriteFile(f, []byte("dds: {domain: 300}\ndevices:\n  list:\n    - {name: a, platform: nosuchos}\n"), 0o644))
	var stdout, stderr bytes.Buffer
	code := realMain(context.Background(), []string{"run", "--print-config", "-c", f}, &stdout, &stderr)
	require.Equal(t, 2, code)
	require.Equal(t, "picobridge: "+f+`:1:15: dds.domain: must be in 0..232 (got 300)
`+f+`:4:27: devices.list[0].platform: no platform named "nosuchos" (known: baremetal, freertos, generic, nuttx, posix, threadx, zephyr)
`, stderr.String())
	stderr.Reset()
	code = realMain(context.Background(), []string{"run", "--print-config", "-c", f, "-d", "7"}, &stdout, &stderr)
	require.Equal(t, 2, code)
	require.Equal(t, "picobridge: "+f+`:4:27: devices.list[0].platform: no platform named "nosuchos" (known: baremetal, freertos, generic, nuttx, posix, threadx, zephyr)
`, stderr.String())
	require.Empty(t, stdout.String())
}

// TestRunMetricsAddressInUse: a metrics address that cannot be bound fails
// the start (status 1) before the Zenoh listeners or DDS start, so that the
// error is the only line on stderr.
func TestRunMetricsAddressInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	addr := ln.Addr().String()
	var stdout, stderr bytes.Buffer
	code := realMain(context.Background(), []string{"run", "-l", "tcp/127.0.0.1:0", "--metrics", addr}, &stdout, &stderr)
	require.Equal(t, "picobridge: metrics.listen "+addr+": listen tcp "+addr+": bind: address already in use\n", stderr.String())
	require.Equal(t, 1, code)
}

// TestRunStartupLog: the gateway's startup log names what the operator
// configured: no line about its own in-process sessions' faces, and the
// listen endpoints as given (a port 0 shows the port it got).
func TestRunStartupLog(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stderr interop.SyncBuffer
	done := make(chan int, 1)
	go func() {
		done <- realMain(ctx, []string{"run", "--no-dds", "--metrics", "127.0.0.1:0", "-l", "tcp/localhost:0", "-l", "udp/127.0.0.1:0"}, &bytes.Buffer{}, &stderr)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(stderr.String(), "picobridge running") {
		select {
		case code := <-done:
			t.Fatalf("exited %d: %s", code, stderr.String())
		default:
		}
		require.True(t, time.Now().Before(deadline), stderr.String())
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	require.Equal(t, 0, <-done)
	var msgs []string
	for _, l := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		m := regexp.MustCompile(`msg=("[^"]*"|\S+)`).FindStringSubmatch(l)
		require.NotNil(t, m, l)
		msgs = append(msgs, strings.Trim(m[1], `"`))
	}
	require.Equal(t, []string{"picobridge running", "shutting down", "stopped"}, msgs, stderr.String())
	require.Regexp(t, ` listen=tcp/localhost:\d+,udp/127\.0\.0\.1:\d+ `, stderr.String())
	require.NotContains(t, stderr.String(), ":0,")
}

// TestRouterMetricsInUseBeforeListen: a --metrics address in use fails the
// router (status 1) before any Zenoh listener opens, as for `run`.
func TestRouterMetricsInUseBeforeListen(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer busy.Close()
	var stdout, stderr bytes.Buffer
	code := realMain(context.Background(), []string{"router", "-l", "tcp/127.0.0.1:0", "--metrics", busy.Addr().String()}, &stdout, &stderr)
	require.Equal(t, 1, code)
	require.Contains(t, stderr.String(), "picobridge: --metrics: listen tcp "+busy.Addr().String()+": bind: address already in use\n")
	require.NotContains(t, stderr.String(), "msg=listening")
}

// TestPrintConfigRoundTrip: what --print-config prints is accepted back by
// -c and prints the same configuration (docs/run.md, "Configuration"), with
// devices.list entries that leave optional keys (class, ...) unset.
func TestPrintConfigRoundTrip(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "picobridge.yaml")
	require.NoError(t, os.WriteFile(f, []byte(`devices:
  list:
    - {name: esp1, platform: freertos, board: esp32}
    - {name: sim1, zid: 3c1f0a2b, platform: zephyr, board: native_sim}
`), 0o644))
	var first, stderr bytes.Buffer
	require.Equal(t, 0, realMain(context.Background(), []string{"run", "--print-config", "-c", f}, &first, &stderr), stderr.String())
	eff := filepath.Join(dir, "effective.yaml")
	require.NoError(t, os.WriteFile(eff, first.Bytes(), 0o644))
	var second bytes.Buffer
	require.Equal(t, 0, realMain(context.Background(), []string{"run", "--print-config", "-c", eff}, &second, &stderr), stderr.String())
	require.Empty(t, stderr.String())
	body := func(s string) string { _, b, _ := strings.Cut(s, "\n"); return b }
	require.Equal(t, body(first.String()), body(second.String()))
	require.Contains(t, first.String(), "      class: auto\n")
}

// TestGroupTypoExits2: a misspelled subcommand under a group (knobs, bag,
// wire) is a usage error with a suggestion, as at the top level; before,
// the group's help was printed with status 0 and a typo in a CI script passed.
func TestGroupTypoExits2(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"knobs", "explian"}, "picobridge: unknown command \"explian\" for \"picobridge knobs\" (see picobridge knobs --help)\n\nDid you mean this?\n\texplain\n"},
		{[]string{"bag", "replya", "BAG"}, "picobridge: unknown command \"replya\" for \"picobridge bag\" (see picobridge bag --help)\n\nDid you mean this?\n\treplay\n"},
		{[]string{"wire", "decod", "x"}, "picobridge: unknown command \"decod\" for \"picobridge wire\" (see picobridge wire --help)\n\nDid you mean this?\n\tdecode\n"},
		{[]string{"rn"}, "picobridge: unknown command \"rn\" for \"picobridge\" (see picobridge --help)\n\nDid you mean this?\n\trun\n"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := realMain(context.Background(), tc.args, &stdout, &stderr)
			require.Equal(t, tc.want, stderr.String())
			require.Equal(t, 2, code)
			require.Empty(t, stdout.String())
		})
	}
	// the group alone still prints its help, status 0
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, realMain(context.Background(), []string{"knobs"}, &stdout, &stderr))
	require.Contains(t, stdout.String(), "picobridge knobs [command]")
	require.Empty(t, stderr.String())
}

// TestHelpCommand: `help`, `help run` and `completion bash`, which
// `picobridge --help` lists, run with status 0 (before: exit 2 "unknown
// command"); `help rn` is refused as `rn` is.
func TestHelpCommand(t *testing.T) {
	run := func(args ...string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		code := realMain(context.Background(), args, &stdout, &stderr)
		return code, stdout.String(), stderr.String()
	}
	_, rootHelp, _ := run("--help")
	code, out, stderr := run("help")
	require.Equal(t, 0, code, stderr)
	require.Equal(t, rootHelp, out)
	_, runHelp, _ := run("run", "--help")
	code, out, stderr = run("help", "run")
	require.Equal(t, 0, code, stderr)
	require.Equal(t, runHelp, out)
	code, out, stderr = run("completion", "bash")
	require.Equal(t, 0, code, stderr)
	require.True(t, strings.HasPrefix(out, "# bash completion V2 for picobridge"))
	code, out, stderr = run("help", "rn")
	require.Equal(t, 2, code)
	require.Empty(t, out)
	require.Equal(t, "picobridge: unknown command \"rn\" for \"picobridge\" (see picobridge --help)\n\nDid you mean this?\n\trun\n", stderr)
}

// TestRunClientModeFromFile: client mode set in a file without connect
// endpoints names the file's zenoh.mode line, not the embedded default.
func TestRunClientModeFromFile(t *testing.T) {
	f := filepath.Join(t.TempDir(), "client.yaml")
	require.NoError(t, os.WriteFile(f, []byte("zenoh:\n  mode: client\n"), 0o644))
	var stdout, stderr bytes.Buffer
	code := realMain(context.Background(), []string{"run", "--print-config", "-c", f}, &stdout, &stderr)
	require.Equal(t, "picobridge: "+f+":2:9: zenoh.mode: client mode needs an upstream router: give one with -e/--connect ENDPOINT (zenoh.connect is empty)\n", stderr.String())
	require.Equal(t, 2, code)
	stderr.Reset()
	// the same file with -e is fine
	require.Equal(t, 0, realMain(context.Background(), []string{"run", "--print-config", "-c", f, "-e", "tcp/127.0.0.1:7447"}, &stdout, &stderr), stderr.String())
}

// TestCfgKeysZenohdStyleBoth: `run --cfg` takes zenohd's keys, with / or .
// (scouting/multicast/enabled, listen/endpoints, mode, id,
// transport/link/rx/max_message_size), beside its own
// (zenoh.scouting.multicast.enabled); before, zenohd's keys were unknown.
func TestCfgKeysZenohdStyleBoth(t *testing.T) {
	printCfg := func(cfg ...string) (int, string, string) {
		args := []string{"run", "--print-config"}
		for _, c := range cfg {
			args = append(args, "--cfg", c)
		}
		var stdout, stderr bytes.Buffer
		code := realMain(context.Background(), args, &stdout, &stderr)
		return code, stdout.String(), stderr.String()
	}
	_, ours, stderr := printCfg("zenoh.scouting.multicast.enabled:true", "zenoh.scouting.multicast.interface:lo",
		`zenoh.listen:["tcp/127.0.0.1:7450"]`, "zenoh.mode:peer", "zenoh.id:abcd", "transport.max_message_size:65536")
	require.Empty(t, stderr)
	require.Contains(t, ours, "    multicast:\n      enabled: true\n")
	for _, zenohd := range [][]string{
		{"scouting/multicast/enabled:true", "scouting/multicast/interface:lo", `listen/endpoints:["tcp/127.0.0.1:7450"]`, `mode:"peer"`, `id:"abcd"`, "transport/link/rx/max_message_size:65536"},
		{"scouting.multicast.enabled:true", "scouting.multicast.interface:lo", `listen.endpoints:["tcp/127.0.0.1:7450"]`, `mode:"peer"`, `id:"abcd"`, "transport.link.rx.max_message_size:65536"},
	} {
		code, out, stderr := printCfg(zenohd...)
		require.Equal(t, 0, code, stderr)
		require.Equal(t, ours, out, "%v", zenohd)
	}
	// a problem names the key as given and the key it set
	code, _, stderr := printCfg("scouting/multicast/enabled:yes")
	require.Equal(t, 2, code)
	require.Equal(t, "picobridge: --cfg scouting/multicast/enabled: zenoh.scouting.multicast.enabled: want true or false (got \"yes\")\n", stderr)
	code, _, stderr = printCfg("scouting/multicast/ttl:2")
	require.Equal(t, 2, code)
	require.Equal(t, "picobridge: --cfg scouting/multicast/ttl: zenoh.scouting.multicast.ttl: unknown key \"ttl\" in zenoh.scouting.multicast (allowed: address, enabled, interface)\n", stderr)
}

// TestRouterCfgOurKeys: `router --cfg` takes the keys `run` names them by
// (zenoh.scouting.multicast.enabled) as aliases of zenohd's.
func TestRouterCfgOurKeys(t *testing.T) {
	o := routerOptions{cfg: []string{"zenoh.scouting.multicast.enabled:true", "zenoh.scouting.multicast.interface:lo",
		"zenoh/scouting/unicast/address:127.0.0.1:7446"}}
	c, err := o.scouting()
	require.NoError(t, err)
	require.Equal(t, zenohpath.ScoutingConfig{
		Multicast: zenohpath.MulticastScoutingConfig{Enabled: true, Interface: "lo"},
		Unicast:   zenohpath.UnicastScoutingConfig{Address: "127.0.0.1:7446"},
	}, c)
	w, err := (&routerOptions{cfg: []string{`zenoh.routing.router.linkstate.transport_weights:[{"dst_zid":"a5","weight":7}]`}}).transportWeights()
	require.NoError(t, err)
	require.Len(t, w, 1)
	_, err = (&routerOptions{cfg: []string{"zenoh.scouting.multicast.enabled:yes"}}).scouting()
	require.EqualError(t, err, `--cfg scouting/multicast/enabled: "yes": want true or false`)
}
