package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/internal/cli"
)

func execute(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errb bytes.Buffer
	cmd := newCommand()
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&errb)
	err = cmd.ExecuteContext(context.Background())
	return out.String(), errb.String(), err
}

func TestRefusesBadArguments(t *testing.T) {
	for _, tc := range []struct {
		args []string
		err  string
	}{
		{[]string{"--listen", "tcp/0.0.0.0:17447", "--upstream", "tcp/127.0.0.1:7447"}, "--listen: endpoint \"tcp/0.0.0.0:17447\": address \"0.0.0.0:17447\": not a loopback address"},
		{[]string{"--listen", "tcp/127.0.0.1:0", "--upstream", "tcp/192.168.1.10:7447"}, "--upstream"},
		{[]string{"--listen", "tcp/127.0.0.1:0", "--upstream", "udp/127.0.0.1:7447"}, "same protocol"},
		{[]string{"--listen", "tcp/127.0.0.1:0", "--upstream", "tcp/127.0.0.1:7447", "--profile", "awful"}, "allowed: clean, mild, moderate, strong"},
		{[]string{"--listen", "tcp/127.0.0.1:0", "--upstream", "tcp/127.0.0.1:7447", "--framing", "x"}, "--framing"},
		{[]string{"--listen", "tcp/127.0.0.1:0", "--upstream", "tcp/127.0.0.1:7447", "--toggle", "1s", "--toggle-start", "maybe"}, "--toggle-start"},
		{[]string{"--upstream", "tcp/127.0.0.1:7447"}, `required flag(s) "listen"`},
	} {
		_, _, err := execute(t, tc.args...)
		require.ErrorContains(t, err, tc.err, tc.args)
	}
}

// TestExitStatus: usage errors exit 2 with one line on stderr, as every
// picobridge command does (internal/cli).
func TestExitStatus(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--upstream", "tcp/127.0.0.1:7447"}, `linkemu: required flag(s) "listen" not set`},
		{[]string{"--listen", "tcp/127.0.0.1:0", "--upstream", "tcp/127.0.0.1:7447", "--profile", "awful"},
			`linkemu: --profile: unknown profile "awful" (allowed: clean, mild, moderate, strong, ethernet, wifi, 4g)`},
		{[]string{"-listen", "tcp/127.0.0.1:0"}, `linkemu: -listen: a long flag takes two dashes: --listen (see linkemu --help)`},
		{[]string{"--listen", "tcp/127.0.0.1:99999", "--upstream", "tcp/127.0.0.1:7447"}, `linkemu: --listen: endpoint "tcp/127.0.0.1:99999": port "99999": want 0 to 65535`},
		{[]string{"--listen", "udp/127.0.0.1:0", "--upstream", "udp/127.0.0.1:70000"}, `linkemu: --upstream: endpoint "udp/127.0.0.1:70000": port "70000": want 0 to 65535`},
	} {
		var out, errb bytes.Buffer
		require.Equal(t, 2, cli.Main(newCommand(), tc.args, &out, &errb), "%v", tc.args)
		require.Equal(t, tc.want+"\n", errb.String(), "%v", tc.args)
	}
}

func TestRunTCPPrintsStatsAndProducedLoss(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }()
		}
	}()
	// The proxy's port is printed on stderr; find it by polling a pipe.
	pr, pw := io.Pipe()
	var out bytes.Buffer
	done := make(chan error, 1)
	go func() {
		cmd := newCommand()
		cmd.SetArgs([]string{"--listen", "tcp/127.0.0.1:0", "--upstream", "tcp/" + ln.Addr().String(),
			"--profile", "mild", "--seed", "3", "--stats", "50ms", "--duration", "1500ms", "--toggle", "500ms", "--toggle-start", "on", "--rto", "20ms"})
		cmd.SetOut(&out)
		cmd.SetErr(pw)
		done <- cmd.Execute()
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	require.NoError(t, err)
	go io.Copy(io.Discard, pr)
	require.Contains(t, line, "profile=mild seed=3")
	addr := strings.Fields(strings.TrimPrefix(line, "linkemu: tcp/"))[0]
	c, err := net.Dial("tcp4", addr)
	require.NoError(t, err)
	defer c.Close()
	batch := []byte{3, 0, 'a', 'b', 'c'}
	for range 20 {
		_, err := c.Write(batch)
		require.NoError(t, err)
	}
	got := make([]byte, 100)
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err = io.ReadFull(c, got)
	require.NoError(t, err)
	require.NoError(t, <-done)
	s := out.String()
	require.Contains(t, s, "profile=mild")
	require.Contains(t, s, "final: ")
	require.Contains(t, s, "phase mild +0.0s")
	require.Contains(t, s, "phase clean +0.5s")
	require.Contains(t, s, "produced loss: to_device ")
	require.Contains(t, s, "(expected ")
}

func TestRunUDPJSON(t *testing.T) {
	up, err := net.ListenPacket("udp4", "127.0.0.1:0")
	require.NoError(t, err)
	defer up.Close()
	stdout, _, err := execute(t, "--listen", "udp/127.0.0.1:0", "--upstream", "udp/"+up.LocalAddr().String(),
		"--profile", "strong", "--json", "--stats", "20ms", "--duration", "100ms")
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	require.GreaterOrEqual(t, len(lines), 2)
	var final struct {
		Kind      string `json:"kind"`
		Transport string `json:"transport"`
		Profile   string `json:"profile"`
		Loss      []struct {
			Direction string  `json:"direction"`
			Expected  float64 `json:"expected_loss"`
		} `json:"loss"`
		Phases []json.RawMessage `json:"phases"`
	}
	require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &final))
	require.Equal(t, "final", final.Kind)
	require.Equal(t, "udp", final.Transport)
	require.Equal(t, "strong", final.Profile)
	require.Len(t, final.Loss, 2)
	require.InDelta(t, 0.0917, final.Loss[0].Expected, 0.0001, "no traffic: the profile's expected loss")
	require.Len(t, final.Phases, 1)
}
