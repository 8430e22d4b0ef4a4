package transport

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
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
	if sb, err := exec.LookPath("stdbuf"); err == nil {
		cmd = exec.CommandContext(ctx, sb, append([]string{"-oL", bin}, args...)...)
	}
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 3 * time.Second
	out := &bytes.Buffer{}
	sw := &syncWriter{b: out}
	cmd.Stdout, cmd.Stderr = sw, sw
	require.NoError(t, cmd.Start())
	p := &picoProc{cmd: cmd, out: out}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("%s output:\n%s", name, p.output())
		}
	})
	return p
}

func (p *picoProc) output() string {
	w := p.cmd.Stdout.(*syncWriter)
	w.mu.Lock()
	defer w.mu.Unlock()
	return p.out.String()
}

func acceptOne(t *testing.T, acc chan *Session) *Session {
	t.Helper()
	select {
	case s := <-acc:
		return s
	case <-time.After(10 * time.Second):
		t.Fatal("pico did not open a session")
	}
	return nil
}

// waitPush waits for a PUSH and returns it.
func waitPush(t *testing.T, rec *recorder, timeout time.Duration) rxMsg {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case m := <-rec.msgs:
			if m.id == wire.IDPush {
				return m
			}
		case err := <-rec.closed:
			t.Fatalf("session closed before a PUSH: %v", err)
		case <-deadline:
			t.Fatal("no PUSH from pico")
		}
	}
}

// waitDeclare waits for a DECLARE (pico's DeclareSubscriber follows its
// DeclareKeyExpr) and returns once the subscriber is declared.
func waitDeclSub(t *testing.T, s *Session, rec *recorder) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case m := <-rec.msgs:
			if m.id == wire.IDDeclare && m.key == "sub" {
				return
			}
		case <-deadline:
			t.Fatal("no DeclareSubscriber from pico")
		}
	}
}

// picoPut runs z_put until its PUSH arrives (at most 3 runs: with
// congestion control DROP pico sometimes drops the put while its lease
// task holds the TX lock, printing "Put has failed", README of the
// transcripts). It returns the session and the PUSH.
func picoPut(t *testing.T, dir string, ln *Listener, acc chan *Session, rec *recorder, args ...string) (*Session, rxMsg) {
	t.Helper()
	for attempt := 1; ; attempt++ {
		p := startPico(t, dir, "z_put", append([]string{"-m", "client", "-e", ln.Endpoint()}, args...)...)
		s := acceptOne(t, acc)
		deadline := time.After(10 * time.Second)
		for {
			select {
			case m := <-rec.msgs:
				if m.id != wire.IDPush {
					continue
				}
				ce := rec.waitClose(t, 15*time.Second)
				require.Contains(t, []CloseReason{ReasonEOF, ReasonRemoteClose}, ce.Reason)
				return s, m
			case err := <-rec.closed:
				if attempt < 3 && strings.Contains(p.output(), "Put has failed") {
					t.Logf("attempt %d: pico dropped its put (%v), retrying", attempt, err)
					rec.once = sync.Once{}
					goto next
				}
				t.Fatalf("session closed before a PUSH: %v", err)
			case <-deadline:
				t.Fatal("no PUSH from pico")
			}
		}
	next:
	}
}

func TestPicoPut(t *testing.T) {
	dir := picoExamples(t)
	ln, acc, rec := startListener(t, testConfig())
	s, m := picoPut(t, dir, ln, acc, rec, "-k", "demo/x", "-v", "hello")
	require.Equal(t, wire.WhatAmIClient, s.PeerWhatAmI())
	require.Equal(t, 16, s.PeerZID().Len())
	require.Equal(t, "hello", string(m.payload))
}

// TestPicoFragmentedPut: a 2048-batch pico sends a 6000-byte PUT as
// FRAGMENTs (R=0 with reliable SNs, First marker); we reassemble it.
func TestPicoFragmentedPut(t *testing.T) {
	dir := picoExamples2048(t)
	ln, acc, rec := startListener(t, testConfig())
	payload := strings.Repeat("a", 6000)
	s, m := picoPut(t, dir, ln, acc, rec, "-k", "demo/big", "-v", payload)
	require.Equal(t, 2048, s.BatchSize())
	require.Equal(t, payload, string(m.payload))
	require.Empty(t, s.Stats().Dropped)
	require.GreaterOrEqual(t, s.Stats().RxBatches, uint64(4), "InitSyn..., 3+ fragments")
}

// TestPicoReceivesFragments: we send 3000-byte PUSHes to a 2048-batch pico
// subscriber; it must reassemble them (First marker, 2 + content ≤ 2048).
func TestPicoReceivesFragments(t *testing.T) {
	dir := picoExamples2048(t)
	ln, acc, rec := startListener(t, testConfig())
	p := startPico(t, dir, "z_sub", "-m", "client", "-e", ln.Endpoint(), "-k", "demo/frag/**", "-n", "2")
	s := acceptOne(t, acc)
	waitDeclSub(t, s, rec)
	for i := 1; i <= 2; i++ {
		payload := fmt.Sprintf("frag sample %d ", i) + strings.Repeat("0123456789abcdef", 186)
		require.NoError(t, s.Send(push("demo/frag/go", []byte(payload)), SendOptions{Reliable: true}))
	}
	ce := rec.waitClose(t, 15*time.Second)
	require.Equal(t, ReasonEOF, ce.Reason, "pico exits after 2 samples")
	out := p.output()
	require.Contains(t, out, "Received ('demo/frag/go': 'frag sample 1 0123456789abcdef")
	require.Contains(t, out, "Received ('demo/frag/go': 'frag sample 2 0123456789abcdef")
	require.GreaterOrEqual(t, s.Stats().TxBatches, uint64(4), "2 fragments per sample")
}

// TestPicoKeepAliveShortLease: with a 1 s lease announced to pico, both
// sides keep the session alive for several seconds.
func TestPicoKeepAliveShortLease(t *testing.T) {
	dir := picoExamples(t)
	cfg := testConfig()
	cfg.Lease = time.Second
	ln, acc, rec := startListener(t, cfg)
	startPico(t, dir, "z_sub", "-m", "client", "-e", ln.Endpoint(), "-k", "demo/ka/**")
	s := acceptOne(t, acc)
	select {
	case err := <-rec.closed:
		t.Fatalf("session closed: %v", err)
	case <-time.After(4 * time.Second):
	}
	st := s.Stats()
	// pico: keep-alive every min(10 s, 1 s)/3; us: every 1 s/4.
	require.GreaterOrEqual(t, st.KeepAlivesRx, uint64(4), "pico keep-alives (a 10 s lease would give at most 1)")
	require.GreaterOrEqual(t, st.KeepAlivesTx, uint64(12), "our keep-alives")
}

// TestPicoLeaseExpiry: a frozen pico (SIGSTOP) is expired after its
// announced lease (10 s) with CLOSE(EXPIRED).
func TestPicoLeaseExpiry(t *testing.T) {
	if testing.Short() {
		t.Skip("SKIP: takes 10 s (-short)")
	}
	dir := picoExamples(t)
	ln, acc, rec := startListener(t, testConfig())
	p := startPico(t, dir, "z_sub", "-m", "client", "-e", ln.Endpoint(), "-k", "demo/exp/**")
	s := acceptOne(t, acc)
	require.Equal(t, 10*time.Second, s.PeerLease())
	waitDeclSub(t, s, rec)
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGSTOP))
	t.Cleanup(func() { _ = p.cmd.Process.Signal(syscall.SIGCONT) })
	start := time.Now()
	ce := rec.waitClose(t, 15*time.Second)
	require.Equal(t, ReasonExpired, ce.Reason)
	require.InDelta(t, 10, time.Since(start).Seconds(), 1.5)
}
