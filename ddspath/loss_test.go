//go:build cgo && cyclonedds

package ddspath

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/internal/interop"
)

// TestReaderCountsRejected: a BEST_EFFORT burst into a KEEP_ALL reader with
// max_samples 8 whose consumer is stalled (Block queue of 1): what the cache
// refuses is counted as Rejected, and once drained every sample written is
// either received or rejected (written = received + Rejected + Lost +
// Dropped, exactly).
func TestReaderCountsRejected(t *testing.T) {
	a, b := openPair(t)
	topic := uniqueTopic(t, "rej")
	r, err := b.NewReader(topic, laserType, QoS{Reliability: BestEffort, History: KeepAll, MaxSamples: 8}, WithQueue(1, Block))
	require.NoError(t, err)
	w, err := a.NewWriter(topic, laserType, QoS{Reliability: BestEffort, History: KeepLast, Depth: 1})
	require.NoError(t, err)
	waitFor(t, 5*time.Second, "match", func() bool { return w.Matched() == 1 && r.Matched() == 1 })

	const n = 100
	for i := range n {
		require.NoError(t, w.Write(cdrSample(64, uint32(i)), time.Time{}))
	}
	waitFor(t, 5*time.Second, "rejections counted", func() bool { return r.Stats().Rejected > 0 })

	var got uint64
	account := func() bool {
		for {
			select {
			case <-r.C():
				got++
			default:
				st := r.Stats()
				return st.Received == got && got+st.Rejected+st.Lost+st.Dropped == n
			}
		}
	}
	waitFor(t, 5*time.Second, "written = received + rejected + lost + dropped", account)
	st := r.Stats()
	t.Logf("written %d received %d rejected %d lost %d dropped %d", n, st.Received, st.Rejected, st.Lost, st.Dropped)
	require.Less(t, st.Received, uint64(n))
	require.Equal(t, uint64(n), st.Received+st.Rejected+st.Lost+st.Dropped)

	// Close keeps the last reading.
	require.NoError(t, r.Close())
	require.Equal(t, st.Rejected, r.Stats().Rejected)
}

// TestReaderStatsConcurrentClose: Stats may be called while the reader is
// being closed (and from its handler) without racing dds_delete.
func TestReaderStatsConcurrentClose(t *testing.T) {
	_, b := openPair(t)
	topic := uniqueTopic(t, "rejc")
	r, err := b.NewReader(topic, laserType, QoS{Reliability: Reliable}, WithListener(), WithHandler(func(*Sample) {}))
	require.NoError(t, err)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 1000 {
			_ = r.Stats()
		}
	}()
	require.NoError(t, r.Close())
	<-done
	require.Equal(t, ReaderStats{}, r.Stats())
}

// runBurst is the DDSPATH_TEST_HELPER=burst process: a RELIABLE KEEP_LAST 2
// writer on $OUT writes one primer sample, waits for a line on stdin, then
// writes $COUNT samples as fast as it can and waits for their acks.
func runBurst() error {
	dom, _ := strconv.Atoi(os.Getenv("DOMAIN"))
	count, _ := strconv.Atoi(os.Getenv("COUNT"))
	p, err := Open(Config{DomainID: uint32(dom)})
	if err != nil {
		return err
	}
	defer p.Close()
	w, err := p.NewWriter(os.Getenv("OUT"), laserType, QoS{Reliability: Reliable, History: KeepLast, Depth: 2})
	if err != nil {
		return err
	}
	deadline := time.Now().Add(20 * time.Second)
	for w.Matched() == 0 {
		if time.Now().After(deadline) {
			return fmt.Errorf("no reader matched")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := w.Write(cdrSample(64, 0), time.Time{}); err != nil {
		return err
	}
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		return err
	}
	for i := 1; i <= count; i++ {
		if err := w.Write(cdrSample(256, uint32(i)), time.Time{}); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return w.WaitForAcks(ctx)
}

// TestReaderCountsSequenceGaps: a writer in another process (so samples
// carry their RTPS sequence numbers) bursts 500 samples into a RELIABLE
// KEEP_LAST 1 reader whose consumer is stalled: the reader cache overwrites
// what was not taken, Cyclone reports no SAMPLE_LOST, and the reader counts
// every skipped sequence number: burst = received + Gaps exactly.
func TestReaderCountsSequenceGaps(t *testing.T) {
	const n = 500
	dom := newDomainID()
	topic := uniqueTopic(t, "gaps")
	p, err := Open(Config{DomainID: dom})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.Close()) })
	r, err := p.NewReader(topic, laserType, QoS{Reliability: Reliable, History: KeepLast, Depth: 1}, WithQueue(1, Block))
	require.NoError(t, err)

	var stdout, stderr interop.SyncBuffer
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "DDSPATH_TEST_HELPER=burst", "DOMAIN="+strconv.Itoa(int(dom)),
		"OUT="+topic, "COUNT="+strconv.Itoa(n))
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })

	// The primer: the first sequence number seen from the writer.
	s := recv(t, r, 20*time.Second)
	require.Len(t, s.CDR, 64)
	require.Zero(t, r.Stats().Gaps)

	// Burst with the consumer stalled, then wait for the writer's acks.
	_, err = io.WriteString(stdin, "go\n")
	require.NoError(t, err)
	require.NoError(t, cmd.Wait(), "helper stderr: %s", stderr.String())

	var got uint64
	var last uint32
	waitFor(t, 10*time.Second, "last sample taken", func() bool {
		for {
			select {
			case s := <-r.C():
				got++
				last = binary.LittleEndian.Uint32(s.CDR[4:])
			default:
				return last == n
			}
		}
	})
	st := r.Stats()
	t.Logf("burst %d received %d gaps %d lost %d rejected %d dropped %d", n, got, st.Gaps, st.Lost, st.Rejected, st.Dropped)
	require.Less(t, got, uint64(n), "the stalled reader kept up: no overwrite to count")
	require.Equal(t, got+1, st.Received) // the primer too
	require.Equal(t, uint64(n), got+st.Gaps+st.Dropped, "burst = received + gaps + dropped")
}
