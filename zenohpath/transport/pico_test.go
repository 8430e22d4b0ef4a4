package transport

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/zenohpath/wire"
)

// picoExamples returns the zenoh-pico examples folder from
// ZENOH_PICO_EXAMPLES, or skips the test.
func picoExamples(t *testing.T) string {
	t.Helper()
	d := os.Getenv("ZENOH_PICO_EXAMPLES")
	if d == "" {
		t.Skip("SKIP: set ZENOH_PICO_EXAMPLES=<zenoh-pico build>/examples (e.g. /work/pico-build-65535/examples) to run against real zenoh-pico")
	}
	return d
}

// picoExamples2048 returns a folder of a zenoh-pico build with
// Z_BATCH_UNICAST_SIZE=2048: ZENOH_PICO_EXAMPLES_2048, or
// ZENOH_PICO_EXAMPLES when that build is a 2048 one (its InitSyn has S).
func picoExamples2048(t *testing.T) string {
	t.Helper()
	if d := os.Getenv("ZENOH_PICO_EXAMPLES_2048"); d != "" {
		return d
	}
	d := picoExamples(t)
	if strings.Contains(d, "2048") {
		return d
	}
	t.Skip("SKIP: set ZENOH_PICO_EXAMPLES_2048=<zenoh-pico cmake-default build>/examples for the batch-2048 tests")
	return ""
}

type picoProc struct {
	cmd *exec.Cmd
	out *bytes.Buffer
}

// startPico runs one example; stdout+stderr are logged if the test fails.
func startPico(t *testing.T, dir, name string, args ...string) *picoProc {
	t.Helper()
	bin := filepath.Join(dir, name)
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("SKIP: %s not found in ZENOH_PICO_EXAMPLES: %v", name, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 3 * time.Second
	out := &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = &syncWriter{b: out}, &syncWriter{b: out}
	require.NoError(t, cmd.Start())
	p := &picoProc{cmd: cmd, out: out}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("%s %v output:\n%s", name, args, out.String())
		}
	})
	return p
}

func TestPicoPut(t *testing.T) {
	dir := picoExamples(t)
	cfg := testConfig()
	ln, acc, rec := startListener(t, cfg)
	startPico(t, dir, "z_put", "-m", "client", "-e", ln.Endpoint(), "-k", "demo/x", "-v", "hello")
	var s *Session
	select {
	case s = <-acc:
	case <-time.After(10 * time.Second):
		t.Fatal("pico did not open a session")
	}
	require.Equal(t, wire.WhatAmIClient, s.PeerWhatAmI())
	require.Equal(t, 16, s.PeerZID().Len())
	// pico: DeclareKeyExpr, PUSH(PUT "hello"), UndeclareKeyExpr, then EOF.
	deadline := time.After(10 * time.Second)
	for {
		select {
		case m := <-rec.msgs:
			if m.id == wire.IDPush {
				require.Equal(t, "hello", string(m.payload))
				ce := rec.waitClose(t, 15*time.Second)
				require.Contains(t, []CloseReason{ReasonEOF, ReasonRemoteClose}, ce.Reason)
				return
			}
		case <-deadline:
			t.Fatal("no PUSH from pico")
		}
	}
}
