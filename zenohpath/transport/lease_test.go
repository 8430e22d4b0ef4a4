package transport

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/zenohpath/wire"
)

// TestKeepAliveCadence: an idle session sends KEEP_ALIVE, alone in its
// batch, every min(lease, peer lease)/divisor; a busy one sends none.
func TestKeepAliveCadence(t *testing.T) {
	cfg := testConfig()
	cfg.Lease = 400 * time.Millisecond // → every 100 ms
	ln, acc, _ := startListener(t, cfg)
	p, s, _, oa := rawOpen(t, ln, acc, wire.InitSyn{WhatAmI: wire.WhatAmIClient}, 10*time.Second, 0)
	require.Equal(t, 400*time.Millisecond, oa.Lease, "OPEN lease in ms (no T flag)")
	start := time.Now()
	n := 0
	for time.Since(start) < time.Second {
		m := p.recvMsg(time.Second) // asserts one message per batch
		_, ok := m.(*wire.KeepAlive)
		require.True(t, ok, "got %T", m)
		n++
		// Keep our side of the lease alive too.
		p.send(&wire.KeepAlive{})
	}
	require.GreaterOrEqual(t, n, 5, "keep-alives in 1 s at 100 ms")
	require.LessOrEqual(t, n, 12, "keep-alives in 1 s at 100 ms")
	require.InDelta(t, n, s.Stats().KeepAlivesTx, 1)

	// While data flows, no keep-alive is needed.
	stop := time.Now().Add(500 * time.Millisecond)
	go func() {
		for time.Now().Before(stop) {
			_ = s.Send(push("k", []byte("d")), SendOptions{Express: true})
			time.Sleep(20 * time.Millisecond)
		}
	}()
	last := time.Now()
	frames := 0
	for time.Now().Before(stop) {
		m := p.recvMsg(time.Second)
		if _, ok := m.(*wire.KeepAlive); ok {
			// A keep-alive only ever follows 100 ms without TX.
			require.GreaterOrEqual(t, time.Since(last), 40*time.Millisecond)
		} else {
			frames++
		}
		last = time.Now()
	}
	require.Positive(t, frames)
}

// TestLeaseExpiry: a peer that announced a 300 ms lease and then goes
// silent is expired with CLOSE(EXPIRED).
func TestLeaseExpiry(t *testing.T) {
	ln, acc, rec := startListener(t, testConfig())
	p, s, _, _ := rawOpen(t, ln, acc, wire.InitSyn{WhatAmI: wire.WhatAmIClient}, 300*time.Millisecond, 0)
	start := time.Now()
	m := p.recvSkipKA(5 * time.Second)
	c, ok := m.(*wire.Close)
	require.True(t, ok, "got %T", m)
	require.True(t, c.Session)
	require.Equal(t, wire.CloseExpired, c.Reason)
	ce := rec.waitClose(t, 5*time.Second)
	require.Equal(t, ReasonExpired, ce.Reason)
	require.GreaterOrEqual(t, time.Since(start), 250*time.Millisecond)
	require.Less(t, time.Since(start), 3*time.Second)
	<-s.Done()
	_, err := p.recv(time.Second)
	require.Error(t, err, "link closed")
}

// TestLeaseKeptAliveByKeepAlives: both of our sessions with a short lease
// stay open while idle (keep-alives in both directions).
func TestLeaseKeptAliveByKeepAlives(t *testing.T) {
	lcfg, dcfg := testConfig(), testConfig()
	lcfg.Lease, dcfg.Lease = 600*time.Millisecond, 800*time.Millisecond
	client, server, crec, srec := pair(t, "tcp", lcfg, dcfg)
	time.Sleep(2500 * time.Millisecond)
	select {
	case err := <-crec.closed:
		t.Fatal(err)
	case err := <-srec.closed:
		t.Fatal(err)
	default:
	}
	require.Positive(t, client.Stats().KeepAlivesRx)
	require.Positive(t, server.Stats().KeepAlivesRx)
}

// TestRemoteCloseAndEOF: a received CLOSE and a TCP EOF both end the session.
func TestRemoteCloseAndEOF(t *testing.T) {
	ln, acc, rec := startListener(t, testConfig())
	p, _, _, _ := rawOpen(t, ln, acc, wire.InitSyn{WhatAmI: wire.WhatAmIClient}, 10*time.Second, 0)
	p.send(&wire.Close{Session: true, Reason: wire.CloseExpired})
	ce := rec.waitClose(t, 5*time.Second)
	require.Equal(t, ReasonRemoteClose, ce.Reason)
	require.Equal(t, wire.CloseExpired, ce.Remote)
	require.ErrorIs(t, ce, &CloseError{Reason: ReasonRemoteClose})
}

// TestCloseWithStuckPeer: a peer that stopped reading cannot hold Close
// up: the link is cut after the close grace period, and Send never blocks
// beyond its congestion control meanwhile.
func TestCloseWithStuckPeer(t *testing.T) {
	cfg := testConfig()
	cfg.TxQueue = 8
	ln, acc, rec := startListener(t, cfg)
	_, s, _, _ := rawOpen(t, ln, acc, wire.InitSyn{WhatAmI: wire.WhatAmIClient}, 10*time.Second, 0)
	big := make([]byte, 60000)
	deadline := time.Now().Add(10 * time.Second)
	for s.Stats().Dropped["queue_full"] < 500 && time.Now().Before(deadline) { // sustained: the kernel buffers are full
		start := time.Now()
		_ = s.Send(push("k", big), SendOptions{})
		require.Less(t, time.Since(start), time.Second, "Send with DROP never waits on the peer")
	}
	require.Positive(t, s.Stats().Dropped["queue_full"])
	start := time.Now()
	require.NoError(t, s.Close(ReasonShutdown))
	select {
	case <-s.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("Close held up by a stuck peer")
	}
	require.Less(t, time.Since(start), 3*time.Second)
	ce := rec.waitClose(t, time.Second)
	require.Equal(t, ReasonShutdown, ce.Reason)
	require.Positive(t, s.Stats().Dropped["closed"], "queued messages are counted when the session closes")
}

// TestLeaseClamp: Config.Lease outside [MinLease, MaxLease] is clamped; zero
// and negative select DefaultLease.
func TestLeaseClamp(t *testing.T) {
	for in, want := range map[time.Duration]time.Duration{
		0: DefaultLease, -5 * time.Second: DefaultLease, time.Millisecond: MinLease,
		2 * time.Second: 2 * time.Second, 48 * time.Hour: MaxLease,
	} {
		require.Equal(t, want, Config{Lease: in}.withDefaults().Lease, "lease %v", in)
	}
}
