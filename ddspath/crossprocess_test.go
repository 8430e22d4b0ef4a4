//go:build cgo && cyclonedds

package ddspath

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/internal/interop"
)

// The test binary doubles as a second Cyclone process: with
// DDSPATH_TEST_HELPER=echo it forwards samples from $IN to $OUT (bytes and
// source timestamps unchanged) $COUNT times and exits. Cyclone delivers
// between participants of one process without serializing, so this is what
// exercises the network path (from_ser with fragment chains) Cyclone↔Cyclone.
func TestMain(m *testing.M) {
	if os.Getenv("DDSPATH_TEST_HELPER") == "echo" {
		if err := runEcho(); err != nil {
			fmt.Fprintln(os.Stderr, "echo helper:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if os.Getenv("DDSPATH_TEST_HELPER") == "burst" {
		if err := runBurst(); err != nil {
			fmt.Fprintln(os.Stderr, "burst helper:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	code := m.Run()
	if peerDir != "" {
		_ = os.RemoveAll(peerDir)
	}
	os.Exit(code)
}

func runEcho() error {
	dom, _ := strconv.Atoi(os.Getenv("DOMAIN"))
	count, _ := strconv.Atoi(os.Getenv("COUNT"))
	p, err := Open(Config{DomainID: uint32(dom)})
	if err != nil {
		return err
	}
	defer p.Close()
	q := QoS{Reliability: Reliable, History: KeepAll}
	r, err := p.NewReader(os.Getenv("IN"), laserType, q)
	if err != nil {
		return err
	}
	w, err := p.NewWriter(os.Getenv("OUT"), laserType, q)
	if err != nil {
		return err
	}
	fmt.Println("ready")
	timeout := time.After(60 * time.Second)
	for i := 0; i < count; i++ {
		select {
		case s := <-r.C():
			if err := w.Write(s.CDR, s.SourceTimestamp); err != nil {
				return err
			}
		case <-timeout:
			return fmt.Errorf("got %d of %d samples", i, count)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return w.WaitForAcks(ctx)
}

func TestCrossProcessCycloneEcho(t *testing.T) {
	dom := newDomainID()
	in, out := uniqueTopic(t, "echo_in"), uniqueTopic(t, "echo_out")
	payloads := [][]byte{cdrSample(8, 0), cdrSample(1500, 1), cdrSample(64<<10, 2), cdrSample(1<<20+3, 3)}

	var stdout, stderr interop.SyncBuffer
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "DDSPATH_TEST_HELPER=echo", "DOMAIN="+strconv.Itoa(int(dom)),
		"IN="+in, "OUT="+out, "COUNT="+strconv.Itoa(len(payloads)))
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })

	p, err := Open(Config{DomainID: dom})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.Close()) })
	q := QoS{Reliability: Reliable, History: KeepAll}
	r, err := p.NewReader(out, laserType, q)
	require.NoError(t, err)
	w, err := p.NewWriter(in, laserType, q)
	require.NoError(t, err)
	waitFor(t, 20*time.Second, "cross-process match", func() bool { return w.Matched() == 1 && r.Matched() == 1 })

	base := time.Unix(1700000300, 111111111)
	for i, b := range payloads {
		require.NoError(t, w.Write(b, base.Add(time.Duration(i)*time.Millisecond)))
	}
	for i, b := range payloads {
		s := recv(t, r, 20*time.Second)
		require.Equal(t, b, s.CDR, "sample %d (%d bytes)", i, len(b))
		require.Equal(t, base.Add(time.Duration(i)*time.Millisecond).UnixNano(), s.SourceTimestamp.UnixNano())
	}
	err = cmd.Wait()
	require.NoError(t, err, "helper stderr: %s", stderr.String())
	require.Zero(t, r.Stats().Gaps, "consecutive sequence numbers counted as gaps")
}
