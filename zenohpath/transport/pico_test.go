package transport

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/internal/picotest"
	"github.com/picobridge/picobridge/zenohpath/wire"
)

var picoBatchCache sync.Map // dir → int

// picoBatch returns the unicast batch size the zenoh-pico build in dir
// proposes (2048 for the cmake defaults, 65535 for the GNUmakefile build),
// found by opening one session with z_info.
func picoBatch(t *testing.T, dir string) int {
	t.Helper()
	if v, ok := picoBatchCache.Load(dir); ok {
		return v.(int)
	}
	ln, acc, _ := startListener(t, testConfig())
	startPico(t, dir, "z_info", "-m", "client", "-e", ln.Endpoint())
	b := acceptOne(t, acc).BatchSize()
	picoBatchCache.Store(dir, b)
	t.Logf("zenoh-pico build in %s: batch %d", dir, b)
	return b
}

// startPico runs one example (skipping the test when it is not built);
// stdout+stderr are logged if the test fails.
func startPico(t *testing.T, dir, name string, args ...string) *picotest.Proc {
	t.Helper()
	if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
		t.Skipf("SKIP: %s not found in ZENOH_PICO_EXAMPLES: %v", name, err)
	}
	return picotest.StartExample(t, dir, name, args...)
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
				p.Exited(5 * time.Second)
				if attempt < 3 && strings.Contains(p.Output(), "Put has failed") {
					t.Logf("attempt %d: pico dropped its put (%v), retrying", attempt, err)
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
	dir := picotest.Examples(t)
	ln, acc, rec := startListener(t, testConfig())
	s, m := picoPut(t, dir, ln, acc, rec, "-k", "demo/x", "-v", "hello")
	require.Equal(t, wire.WhatAmIClient, s.PeerWhatAmI())
	require.Equal(t, 16, s.PeerZID().Len())
	require.Equal(t, "hello", string(m.payload))
}

// TestPicoFragmentedPut: pico sends a PUT larger than its batch (6000 B at
// batch 2048, 100 kB at 65535) as
// FRAGMENTs (R=0 with reliable SNs, First marker); we reassemble it.
func TestPicoFragmentedPut(t *testing.T) {
	dir := picotest.Examples(t)
	batch := picoBatch(t, dir)
	size := 6000 // batch 2048 build
	if batch > 2048 {
		size = 100000 // 65535 build (Z_FRAG_MAX_SIZE 300000); a command-line argument stays < 128 KiB
	}
	ln, acc, rec := startListener(t, testConfig())
	payload := strings.Repeat("a", size)
	s, m := picoPut(t, dir, ln, acc, rec, "-k", "demo/big", "-v", payload)
	require.Equal(t, batch, s.BatchSize())
	require.Equal(t, payload, string(m.payload))
	require.Empty(t, s.Stats().Dropped)
	require.GreaterOrEqual(t, s.Stats().RxBatches, uint64(size/batch+1), "fragments")
}

// TestPicoReceivesFragments: we send PUSHes of 1.5 batches to a pico
// subscriber (3 kB at batch 2048); it must reassemble them (First marker,
// 2 + content ≤ batch size).
func TestPicoReceivesFragments(t *testing.T) {
	dir := picotest.Examples(t)
	batch := picoBatch(t, dir)
	// 1.5 batches, within the build's Z_FRAG_MAX_SIZE (4096 / 300000).
	reps := (batch + batch/2) / 16
	ln, acc, rec := startListener(t, testConfig())
	p := startPico(t, dir, "z_sub", "-m", "client", "-e", ln.Endpoint(), "-k", "demo/frag/**", "-n", "2")
	s := acceptOne(t, acc)
	waitDeclSub(t, s, rec)
	for i := 1; i <= 2; i++ {
		payload := fmt.Sprintf("frag sample %d ", i) + strings.Repeat("0123456789abcdef", reps)
		require.NoError(t, s.Send(push("demo/frag/go", []byte(payload)), SendOptions{Reliable: true}))
	}
	ce := rec.waitClose(t, 15*time.Second)
	require.Equal(t, ReasonEOF, ce.Reason, "pico exits after 2 samples")
	out := p.Output()
	require.Contains(t, out, "Received ('demo/frag/go': 'frag sample 1 0123456789abcdef")
	require.Contains(t, out, "Received ('demo/frag/go': 'frag sample 2 0123456789abcdef")
	require.GreaterOrEqual(t, s.Stats().TxBatches, uint64(4), "2 fragments per sample")
}

// TestPicoKeepAliveShortLease: with a 2 s lease announced to pico, both
// sides keep the session alive for 3 lease periods.
func TestPicoKeepAliveShortLease(t *testing.T) {
	dir := picotest.Examples(t)
	cfg := testConfig()
	cfg.Lease = 2 * time.Second
	ln, acc, rec := startListener(t, cfg)
	startPico(t, dir, "z_sub", "-m", "client", "-e", ln.Endpoint(), "-k", "demo/ka/**")
	s := acceptOne(t, acc)
	select {
	case err := <-rec.closed:
		t.Fatalf("session closed: %v", err)
	case <-time.After(6 * time.Second):
	}
	st := s.Stats()
	// pico: keep-alive every min(10 s, 2 s)/3; us: every 2 s/4.
	require.GreaterOrEqual(t, st.KeepAlivesRx, uint64(4), "pico keep-alives (a 10 s lease would give at most 1)")
	require.GreaterOrEqual(t, st.KeepAlivesTx, uint64(8), "our keep-alives (12 expected)")
}

// TestPicoLeaseExpiry: a frozen pico (SIGSTOP) is expired after its
// announced lease (10 s) with CLOSE(EXPIRED).
func TestPicoLeaseExpiry(t *testing.T) {
	if testing.Short() {
		t.Skip("SKIP: takes 10 s (-short)")
	}
	dir := picotest.Examples(t)
	ln, acc, rec := startListener(t, testConfig())
	p := startPico(t, dir, "z_sub", "-m", "client", "-e", ln.Endpoint(), "-k", "demo/exp/**")
	s := acceptOne(t, acc)
	require.Equal(t, 10*time.Second, s.PeerLease())
	waitDeclSub(t, s, rec)
	require.NoError(t, p.Cmd.Process.Signal(syscall.SIGSTOP))
	t.Cleanup(func() { _ = p.Cmd.Process.Signal(syscall.SIGCONT) })
	start := time.Now()
	ce := rec.waitClose(t, 15*time.Second)
	require.Equal(t, ReasonExpired, ce.Reason)
	require.GreaterOrEqual(t, time.Since(start), 9500*time.Millisecond)
	require.Less(t, time.Since(start), 14*time.Second)
}

// TestPicoPutUDP: z_put over udp/ to our UDP listener (datagram batches,
// demultiplexed by source address).
func TestPicoPutUDP(t *testing.T) {
	dir := picotest.Examples(t)
	rec := newRecorder()
	acc := make(chan *Session, 4)
	ln, err := Listen(context.Background(), "udp/127.0.0.1:0", testConfig(), func(s *Session) Handler {
		acc <- s
		return rec
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	for attempt := 1; attempt <= 3; attempt++ {
		p := startPico(t, dir, "z_put", "-m", "client", "-e", ln.Endpoint(), "-k", "demo/udp", "-v", "hello udp")
		s := acceptOne(t, acc)
		t.Logf("pico over UDP: batch %d", s.BatchSize())
		deadline := time.After(10 * time.Second)
		done := p.Done()
	wait:
		for {
			select {
			case m := <-rec.msgs:
				if m.id == wire.IDPush {
					require.Equal(t, "hello udp", string(m.payload))
					return
				}
			case <-done:
				// No EOF on UDP: pico exiting without our PUSH means it dropped the put.
				done = nil
				if strings.Contains(p.Output(), "Put has failed") {
					t.Logf("attempt %d: pico dropped its put, retrying", attempt)
					break wait
				}
			case <-deadline:
				t.Fatal("no PUSH over UDP")
			}
		}
	}
	t.Fatal("pico dropped its put 3 times")
}

// TestPicoPeerDial: our Dial (opening role, peer) to a zenoh-pico peer
// listening on TCP; we publish to its subscriber.
func TestPicoPeerDial(t *testing.T) {
	dir := picotest.Examples(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ep := "tcp/" + l.Addr().String()
	require.NoError(t, l.Close())
	p := startPico(t, dir, "z_sub", "-m", "peer", "-l", ep, "-k", "demo/peer/**", "-n", "1")
	cfg := testConfig()
	cfg.WhatAmI = wire.WhatAmIPeer
	rec := newRecorder()
	var s *Session
	deadline := time.Now().Add(10 * time.Second)
	for s == nil {
		s, err = Dial(context.Background(), ep, cfg, rec)
		if err != nil {
			if time.Now().After(deadline) {
				t.Fatalf("dial pico peer: %v\n%s", err, p.Output())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	t.Cleanup(func() { _ = s.Close(ReasonShutdown); <-s.Done() })
	t.Logf("pico peer: whatami %s batch %d lease %v patch %d", s.PeerWhatAmI(), s.BatchSize(), s.PeerLease(), s.Patch())
	require.Equal(t, wire.WhatAmIPeer, s.PeerWhatAmI())
	for !p.Exited(200 * time.Millisecond) {
		if err := s.Send(push("demo/peer/x", []byte("from go peer")), SendOptions{Reliable: true}); err != nil {
			require.ErrorIs(t, err, ErrClosed) // pico exits after its sample
			p.Exited(5 * time.Second)
			break
		}
		require.False(t, time.Now().After(deadline.Add(5*time.Second)), "pico got nothing:\n%s", p.Output())
	}
	require.Contains(t, p.Output(), "Received ('demo/peer/x': 'from go peer')")
}
