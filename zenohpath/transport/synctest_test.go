package transport

import (
	"net"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/zenohpath/wire"
)

// TestKeepAliveAndLeaseSynctest checks the exact timing with a fake clock
// (testing/synctest, net.Pipe): with our lease 10 s and the peer's 10 s,
// an idle session sends KEEP_ALIVE every 2.5 s, and it expires the peer
// 10 s after the last batch it received.
func TestKeepAliveAndLeaseSynctest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b := net.Pipe()
		defer b.Close()
		cfg := testConfig().withDefaults()
		rec := newRecorder()
		s := newSession(&cfg, newStreamLink(a), params{resolution: wire.DefaultResolution, batchSize: 65535,
			peerLease: 10 * time.Second, peerZID: testZID()}, rec)
		s.start()
		go s.readLoop()
		start := time.Now()
		p := newRawPeer(t, b)
		var kas []time.Duration
		for i := 0; i < 3; i++ {
			m := p.recvMsg(time.Minute)
			require.IsType(t, &wire.KeepAlive{}, m)
			kas = append(kas, time.Since(start))
		}
		require.Equal(t, []time.Duration{2500 * time.Millisecond, 5 * time.Second, 7500 * time.Millisecond}, kas)
		// The peer last spoke never: expiry at 10 s after the session started
		// reading; it sends CLOSE(EXPIRED) after the KEEP_ALIVEs.
		var c *wire.Close
		for c == nil {
			m := p.recvMsg(time.Minute)
			if x, ok := m.(*wire.Close); ok {
				c = x
			}
		}
		require.Equal(t, wire.CloseExpired, c.Reason)
		require.Equal(t, 10*time.Second, time.Since(start))
		ce := rec.waitClose(t, time.Minute)
		require.Equal(t, ReasonExpired, ce.Reason)
		<-s.Done()
	})
}

// TestQuietWriterLingers: small messages spaced under the writer's linger
// (idleLinger, 2 ms) are carried by one writer goroutine, however they
// reach the frame. Each is appended under the lock after a linger wake;
// that path once left the linger spent, so the writer exited after every
// second message and the next one started a new goroutine (docs/perf.md,
// "Tails": half the 64 B ping's messages). Synthetic time, net.Pipe.
func TestQuietWriterLingers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b := net.Pipe()
		defer b.Close()
		cfg := testConfig().withDefaults()
		s := newSession(&cfg, newStreamLink(a), params{resolution: wire.DefaultResolution, batchSize: 65535,
			peerLease: time.Minute, peerZID: testZID()}, newRecorder())
		s.start()
		go s.readLoop()
		p := newRawPeer(t, b)
		got := make(chan int, 1)
		const n = 20
		go func() {
			pushes := 0
			for pushes < n {
				b, err := p.recv(time.Minute)
				if err != nil {
					break
				}
				for len(b) > 0 {
					m, k, err := wire.ParseTransport(b)
					if err != nil {
						break
					}
					if f, ok := m.(*wire.Frame); ok {
						for pl := f.Payload; len(pl) > 0; {
							_, j, err := wire.ParseNetwork(pl)
							if err != nil {
								break
							}
							pushes++
							pl = pl[j:]
						}
					}
					b = b[k:]
				}
			}
			got <- pushes
		}()
		enc := Encode(push("quiet/a", []byte("abcdefgh")))
		defer enc.Release()
		for range n {
			require.NoError(t, s.SendShared(enc, SendOptions{Reliable: true}))
			time.Sleep(500 * time.Microsecond) // under idleLinger: the writer should still be there
		}
		require.Equal(t, n, <-got)
		require.Equal(t, uint64(1), s.Stats().WriterStarts, "one writer carries a stream spaced under idleLinger")
		_ = s.Close(ReasonShutdown)
		<-s.Done()
	})
}
