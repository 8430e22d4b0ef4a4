package transport

import (
	"bytes"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/picobridge/picobridge/zenohpath/wire"
)

// TestNotSentLowatFollowsPacing: a paced session's TCP_NOTSENT_LOWAT is one
// paced chunk (≥ 4 KiB, ≤ Config.TCPNotSentLowat), read back with
// getsockopt; unpaced again, it is the configured value.
func TestNotSentLowatFollowsPacing(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("TCP_NOTSENT_LOWAT is set on Linux only")
	}
	a, _ := sessionPair(t, pairOpts{}, newRecorder(), newRecorder())
	for _, c := range []struct {
		rate float64
		want int
	}{
		{0, DefaultTCPNotSentLowat},
		{12.5e6, 12500},               // 100 Mbit/s: a 12.5 kB chunk
		{1.25e6, minPacedLowat},       // 10 Mbit/s: 1.25 kB chunk, floor 4 KiB
		{1e9, DefaultTCPNotSentLowat}, // chunk 64 KiB, capped
		{0, DefaultTCPNotSentLowat},
	} {
		a.SetTxRate(c.rate)
		v, err := a.NotSentLowat()
		require.NoError(t, err)
		require.Equal(t, c.want, v, "rate %v", c.rate)
	}
	require.Equal(t, 12500, pacedLowat(12.5e6, 65533, 16<<10))
	require.Equal(t, 8<<10, pacedLowat(12.5e6, 65533, 8<<10))
}

// TestNotSentLowatUDP: a UDP session has no such option; pacing it sets none.
func TestNotSentLowatUDP(t *testing.T) {
	c, _, _, _ := pair(t, "udp", testConfig(), testConfig())
	c.SetTxRate(1e6)
	_, err := c.NotSentLowat()
	require.ErrorIs(t, err, ErrLowatUnsupported)
}

// TestNotSentLowatExpressOvertakesBulk: 1 MB of best-effort bulk (4
// messages of 256 KiB, Data, cut into 64 KiB FRAGMENTs) is queued toward a
// peer that does not read, on a socket whose send buffer is 4 MiB (what
// autotuning reaches: net.ipv4.tcp_wmem[2]); once the writer is stuck, a
// reliable express message (RealTime) is sent and the peer reads
// everything. With the kernel's default TCP_NOTSENT_LOWAT the kernel took
// the whole 1 MB before the writer blocked, so the express FRAME arrives
// after it; with the default Config (16 KiB), the kernel holds at most the
// peer's receive window, 16 KiB unsent and one write in progress, so the
// express FRAME arrives within the first 512 KiB and the rest after it.
func TestNotSentLowatExpressOvertakesBulk(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("TCP_NOTSENT_LOWAT is set on Linux only")
	}
	for _, lowat := range []bool{false, true} {
		t.Run(map[bool]string{false: "kernel-default", true: "lowat"}[lowat], func(t *testing.T) {
			tp := newTCPPipe(t)
			cfg := testConfig()
			if !lowat {
				cfg.TCPNotSentLowat = -1
			}
			cfg = cfg.withDefaults()
			p := params{peerZID: testZID(), resolution: wire.DefaultResolution, batchSize: 65535, peerLease: time.Hour}
			s := newSession(&cfg, newStreamLink(tp.a), p, newRecorder())
			s.start()
			go s.readLoop()
			t.Cleanup(func() { _ = s.Close(ReasonShutdown); _ = tp.b.Close(); <-s.Done() })
			c, ok := s.TCPConn()
			require.True(t, ok)
			raw, err := c.SyscallConn()
			require.NoError(t, err)
			require.NoError(t, raw.Control(func(fd uintptr) {
				require.NoError(t, unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUF, 4<<20))
			}))
			const n, size = 4, 256 << 10
			for range n {
				require.NoError(t, s.Send(push("bulk", bytes.Repeat([]byte("b"), size)), SendOptions{Priority: wire.PriorityData}))
			}
			// The writer is stuck once neither the kernel nor the queues move.
			prev, still := -1, 0
			for still < 5 {
				time.Sleep(20 * time.Millisecond)
				b, _ := s.TxBacklog().Total()
				if b == prev {
					still++
				} else {
					prev, still = b, 0
				}
			}
			require.NoError(t, s.Send(push("crit", []byte("x")), SendOptions{Reliable: true, Express: true, Priority: wire.PriorityRealTime}))
			peer := newRawPeer(t, tp.b)
			before, bulkBytes := 0, 0
			for {
				b, err := peer.recv(10 * time.Second)
				require.NoError(t, err)
				if b[0]&0x1f == byte(wire.IDFrame) {
					break
				}
				before += len(b) + wire.StreamPrefixLen
				bulkBytes += len(b)
			}
			t.Logf("lowat=%t: %d bytes ahead of the express message (of ≈ %d)", lowat, before, n*size)
			if lowat {
				require.Less(t, before, n*size/2)
			} else {
				require.Greater(t, before, n*size-n*64)
			}
		})
	}
}
