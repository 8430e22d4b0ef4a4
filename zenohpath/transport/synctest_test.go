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
