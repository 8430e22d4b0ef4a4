package transport

import (
	"context"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/zenohpath/wire"
)

// dialRaw connects a rawPeer to a Listener.
func dialRaw(t *testing.T, ln *Listener) *rawPeer {
	c, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return newRawPeer(t, c)
}

func startListener(t *testing.T, cfg Config) (*Listener, chan *Session, *recorder) {
	rec := newRecorder()
	acc := make(chan *Session, 4)
	ln, err := Listen(context.Background(), "tcp/127.0.0.1:0", cfg, func(s *Session) Handler {
		acc <- s
		return rec
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	return ln, acc, rec
}

// TestAcceptReplayPicoInitSyn replays the InitSyn bytes real zenoh-pico sent
// (both builds) and checks the InitAck fields (§4.2, §12.1), then
// completes OPEN and exchanges a FRAME.
func TestAcceptReplayPicoInitSyn(t *testing.T) {
	for _, tc := range []struct {
		file      string
		wantS     bool
		wantBatch uint16
	}{
		{"session_open_2048.zvec", true, 2048},
		{"session_open_65535.zvec", false, 65535},
	} {
		t.Run(tc.file, func(t *testing.T) {
			lines := loadZvec(t, tc.file)
			require.Equal(t, "D>G", lines[0].dir)
			synBytes := lines[0].batch
			syn, _, err := wire.ParseTransport(synBytes)
			require.NoError(t, err)
			require.IsType(t, &wire.InitSyn{}, syn)

			cfg := testConfig()
			ln, acc, rec := startListener(t, cfg)
			p := dialRaw(t, ln)
			p.sendRaw(synBytes)
			m := p.recvMsg(5 * time.Second)
			ack, ok := m.(*wire.InitAck)
			require.True(t, ok, "got %T", m)
			require.Equal(t, wire.ProtoVersion, ack.Version)
			require.Equal(t, wire.WhatAmIRouter, ack.WhatAmI)
			require.Equal(t, cfg.ZID, ack.ZID)
			require.Equal(t, tc.wantS, ack.HasSize, "S echo rule")
			require.Equal(t, wire.DefaultResolution, ack.Resolution)
			require.Equal(t, tc.wantBatch, ack.BatchSize)
			require.EqualValues(t, 1, ack.Patch)
			require.Empty(t, ack.Exts, "no QoS/Shm/Auth echo")
			require.NotEmpty(t, ack.Cookie)

			// pico's OpenSyn: lease 10 s, initial SN 0, our cookie.
			p.send(&wire.OpenSyn{Lease: 10 * time.Second, InitialSN: 0, Cookie: ack.Cookie})
			m = p.recvMsg(5 * time.Second)
			oa, ok := m.(*wire.OpenAck)
			require.True(t, ok, "got %T", m)
			require.Equal(t, DefaultLease, oa.Lease)
			require.Zero(t, oa.InitialSN&^0x0fffffff)

			s := <-acc
			require.Equal(t, int(tc.wantBatch), s.BatchSize())
			require.Equal(t, syn.(*wire.InitSyn).ZID, s.PeerZID())
			require.Equal(t, wire.WhatAmIClient, s.PeerWhatAmI())

			// pico sends KEEP_ALIVE then FRAME sn 0.
			p.send(&wire.KeepAlive{})
			b := (&wire.Frame{Reliable: true, SN: 0}).Append(nil)
			b = push("demo/x", []byte("hello")).Append(b)
			p.sendRaw(b)
			got := rec.next(t, 5*time.Second)
			require.Equal(t, "hello", string(got.payload))

			// Router → pico: a reliable FRAME with our initial SN, alone in its batch.
			require.NoError(t, s.Send(push("demo/y", []byte("to pico")), SendOptions{Reliable: true}))
			for {
				m = p.recvMsg(5 * time.Second)
				if _, ka := m.(*wire.KeepAlive); !ka {
					break
				}
			}
			f, ok := m.(*wire.Frame)
			require.True(t, ok, "got %T", m)
			require.True(t, f.Reliable)
			require.Equal(t, oa.InitialSN, f.SN)
			require.False(t, f.HasQoS)

			// EOF ends the session.
			_ = p.c.Close()
			ce := rec.waitClose(t, 5*time.Second)
			require.Equal(t, ReasonEOF, ce.Reason)
		})
	}
}

func TestAcceptRejectsBadVersion(t *testing.T) {
	ln, _, _ := startListener(t, testConfig())
	p := dialRaw(t, ln)
	p.send(&wire.InitSyn{Version: 0x08, WhatAmI: wire.WhatAmIClient, ZID: testZID()})
	m := p.recvMsg(5 * time.Second)
	c, ok := m.(*wire.Close)
	require.True(t, ok, "got %T", m)
	require.Equal(t, wire.CloseInvalid, c.Reason)
	_, err := p.recv(5 * time.Second)
	require.Error(t, err, "link closed after CLOSE")
}

func TestAcceptRejectsBadCookie(t *testing.T) {
	ln, _, _ := startListener(t, testConfig())
	p := dialRaw(t, ln)
	p.send(&wire.InitSyn{Version: wire.ProtoVersion, WhatAmI: wire.WhatAmIClient, ZID: testZID(), Resolution: wire.DefaultResolution, BatchSize: 65535})
	ack := p.recvMsg(5 * time.Second).(*wire.InitAck)
	cookie := append([]byte(nil), ack.Cookie...)
	cookie[len(cookie)-1] ^= 1
	p.send(&wire.OpenSyn{Lease: 10 * time.Second, Cookie: cookie})
	m := p.recvMsg(5 * time.Second)
	c, ok := m.(*wire.Close)
	require.True(t, ok, "got %T", m)
	require.Equal(t, wire.CloseInvalid, c.Reason)
}

func TestAcceptNegotiatesMinimum(t *testing.T) {
	cfg := testConfig()
	cfg.BatchSize = 4096
	ln, acc, _ := startListener(t, cfg)
	p := dialRaw(t, ln)
	// A proposer without S (defaults 65535/0x0a): we must answer with S, 4096.
	p.send(&wire.InitSyn{Version: wire.ProtoVersion, WhatAmI: wire.WhatAmIClient, ZID: testZID(), Resolution: wire.DefaultResolution, BatchSize: 65535, Patch: 3})
	ack := p.recvMsg(5 * time.Second).(*wire.InitAck)
	require.True(t, ack.HasSize)
	require.EqualValues(t, 4096, ack.BatchSize)
	require.EqualValues(t, 1, ack.Patch, "Patch = min(theirs, ours)")
	p.send(&wire.OpenSyn{Lease: 3500 * time.Millisecond, InitialSN: 5, Cookie: ack.Cookie})
	_ = p.recvMsg(5 * time.Second).(*wire.OpenAck)
	s := <-acc
	require.Equal(t, 4096, s.BatchSize())
	require.Equal(t, 3500*time.Millisecond, s.PeerLease())

	// S with the default values is still echoed (pico's rule: S in ⇒ S out).
	p3 := dialRaw(t, ln)
	p3.send(&wire.InitSyn{Version: wire.ProtoVersion, WhatAmI: wire.WhatAmIClient, ZID: testZID(), HasSize: true, Resolution: wire.DefaultResolution, BatchSize: 65535})
	ack = p3.recvMsg(5 * time.Second).(*wire.InitAck)
	require.True(t, ack.HasSize)
	require.EqualValues(t, 4096, ack.BatchSize)
	require.Equal(t, wire.DefaultResolution, ack.Resolution)

	// Resolution: 16-bit SN proposed → 16-bit used (mask 0x3fff).
	p2 := dialRaw(t, ln)
	p2.send(&wire.InitSyn{Version: wire.ProtoVersion, WhatAmI: wire.WhatAmIClient, ZID: testZID(), HasSize: true, Resolution: 0x09, BatchSize: 1000})
	ack = p2.recvMsg(5 * time.Second).(*wire.InitAck)
	require.True(t, ack.HasSize)
	require.EqualValues(t, 0x09, ack.Resolution)
	require.EqualValues(t, 1000, ack.BatchSize)
	require.Zero(t, ack.Patch)
}

// TestDialHandshake plays the accepting side by hand (net.Pipe) and checks
// what Dial sends, including the refusal of an InitAck that exceeds our
// proposal (§4.2, initiator side).
func TestDialHandshake(t *testing.T) {
	cfg := testConfig()
	cfg.WhatAmI = wire.WhatAmIClient
	cfg.BatchSize = 2048
	cfg = cfg.withDefaults()
	l := newTCPPipe(t)
	done := make(chan error, 1)
	var got params
	go func() {
		var err error
		got, err = openHandshake(newStreamLink(l.a), &cfg, time.Now().Add(5*time.Second))
		done <- err
	}()
	p := newRawPeer(t, l.b)
	syn := p.recvMsg(5 * time.Second).(*wire.InitSyn)
	require.True(t, syn.HasSize)
	require.EqualValues(t, 2048, syn.BatchSize)
	require.Equal(t, wire.DefaultResolution, syn.Resolution)
	require.Equal(t, wire.WhatAmIClient, syn.WhatAmI)
	require.EqualValues(t, 1, syn.Patch)
	rz := testZID()
	p.send(&wire.InitAck{Version: wire.ProtoVersion, WhatAmI: wire.WhatAmIRouter, ZID: rz, HasSize: true, Resolution: 0x0a, BatchSize: 1024, Cookie: []byte("cookie!"), Patch: 1})
	os := p.recvMsg(5 * time.Second).(*wire.OpenSyn)
	require.Equal(t, "cookie!", string(os.Cookie))
	require.Equal(t, DefaultLease, os.Lease)
	p.send(&wire.OpenAck{Lease: 3 * time.Second, InitialSN: 0x0abcdef})
	require.NoError(t, <-done)
	require.Equal(t, rz, got.peerZID)
	require.EqualValues(t, 1024, got.batchSize)
	require.EqualValues(t, 0x0abcdef, got.peerInitialSN)
	require.Equal(t, 3*time.Second, got.peerLease)

	// An InitAck with a larger batch than proposed is refused with CLOSE(INVALID).
	l2 := newTCPPipe(t)
	go func() {
		_, err := openHandshake(newStreamLink(l2.a), &cfg, time.Now().Add(5*time.Second))
		done <- err
	}()
	p2 := newRawPeer(t, l2.b)
	_ = p2.recvMsg(5 * time.Second).(*wire.InitSyn)
	p2.send(&wire.InitAck{Version: wire.ProtoVersion, ZID: rz, Cookie: []byte{1}}) // no S: 65535 > 2048
	c := p2.recvMsg(5 * time.Second).(*wire.Close)
	require.Equal(t, wire.CloseInvalid, c.Reason)
	err := <-done
	var he *HandshakeError
	require.ErrorAs(t, err, &he)
	require.Equal(t, ReasonInvalid, he.Reason)
}

type tcpPipe struct{ a, b net.Conn }

// newTCPPipe returns both ends of a loopback TCP connection (buffered,
// unlike net.Pipe, so a writer does not wait for the reader).
func newTCPPipe(t testing.TB) tcpPipe {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	ch := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		ch <- c
	}()
	a, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	b := <-ch
	require.NotNil(t, b)
	t.Cleanup(func() { _ = a.Close(); _ = b.Close() })
	return tcpPipe{a, b}
}

func TestAcceptRejectsTinyBatch(t *testing.T) {
	ln, _, _ := startListener(t, testConfig())
	p := dialRaw(t, ln)
	p.send(&wire.InitSyn{Version: wire.ProtoVersion, WhatAmI: wire.WhatAmIClient, ZID: testZID(), HasSize: true, Resolution: wire.DefaultResolution, BatchSize: 10})
	c, ok := p.recvMsg(5 * time.Second).(*wire.Close)
	require.True(t, ok)
	require.Equal(t, wire.CloseInvalid, c.Reason)
}

// TestAcceptRefused: accept returning nil refuses the session with
// CLOSE(MAX_SESSIONS) after OPEN.
func TestAcceptRefused(t *testing.T) {
	ln, err := Listen(context.Background(), "tcp/127.0.0.1:0", testConfig(), func(*Session) Handler { return nil })
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	p := dialRaw(t, ln)
	p.send(&wire.InitSyn{Version: wire.ProtoVersion, WhatAmI: wire.WhatAmIClient, ZID: testZID(), Resolution: wire.DefaultResolution, BatchSize: 65535})
	ack := p.recvMsg(5 * time.Second).(*wire.InitAck)
	p.send(&wire.OpenSyn{Lease: 10 * time.Second, Cookie: append([]byte(nil), ack.Cookie...)})
	_ = p.recvMsg(5 * time.Second).(*wire.OpenAck)
	c, ok := p.recvSkipKA(5 * time.Second).(*wire.Close)
	require.True(t, ok)
	require.Equal(t, wire.CloseMaxSessions, c.Reason)
	require.Eventually(t, func() bool { return len(ln.Sessions()) == 0 }, 5*time.Second, 10*time.Millisecond)
}

// TestListenContextCancel: cancelling Listen's context closes the listener
// and its sessions.
func TestListenContextCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	ln, err := Listen(ctx, "tcp/127.0.0.1:0", testConfig(), func(*Session) Handler { return newRecorder() })
	require.NoError(t, err)
	dc := testConfig()
	dc.WhatAmI = wire.WhatAmIClient
	crec := newRecorder()
	s, err := Dial(context.Background(), ln.Endpoint(), dc, crec)
	require.NoError(t, err)
	// (A link still in handshake when the Listener closes is cut without CLOSE.)
	require.Eventually(t, func() bool { return len(ln.Sessions()) == 1 }, 5*time.Second, time.Millisecond)
	cancel()
	ce := crec.waitClose(t, 5*time.Second)
	require.Equal(t, ReasonRemoteClose, ce.Reason)
	require.Equal(t, wire.CloseGeneric, ce.Remote)
	<-s.Done()
	require.NoError(t, ln.Close())
	_, err = Dial(context.Background(), ln.Endpoint(), dc, newRecorder())
	require.Error(t, err)
}

func TestParseEndpoint(t *testing.T) {
	for in, want := range map[string]Endpoint{
		"tcp/127.0.0.1:7447":         {Proto: "tcp", Addr: "127.0.0.1:7447"},
		"udp/[::1]:7447":             {Proto: "udp", Addr: "[::1]:7447"},
		"tcp/localhost:7447#iface=x": {Proto: "tcp", Addr: "localhost:7447", Params: map[string]string{"iface": "x"}},
		"tls/localhost:7447#root_ca_certificate_file=/ca.pem;enable_mtls=true": {Proto: "tls", Addr: "localhost:7447",
			Params: map[string]string{"root_ca_certificate_file": "/ca.pem", "enable_mtls": "true"}},
		"tls/[::1]:7447?x=1": {Proto: "tls", Addr: "[::1]:7447"},
	} {
		got, err := ParseEndpoint(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got)
	}
	for _, bad := range []string{"", "tcp", "ws/1.2.3.4:5", "tcp/1.2.3.4", "127.0.0.1:7447", "tls/host"} {
		_, err := ParseEndpoint(bad)
		require.Error(t, err, bad)
	}
	_, err := ParseEndpoint("quic/127.0.0.1:7447")
	require.ErrorIs(t, err, ErrQUICUnsupported)
	require.ErrorContains(t, err, "use tls/")
}

func TestSEchoWithDefaults(t *testing.T) {
	ln, _, _ := startListener(t, testConfig())
	p := dialRaw(t, ln)
	p.send(&wire.InitSyn{Version: wire.ProtoVersion, WhatAmI: wire.WhatAmIClient, ZID: testZID(), HasSize: true, Resolution: wire.DefaultResolution, BatchSize: 65535})
	ack := p.recvMsg(5 * time.Second).(*wire.InitAck)
	require.True(t, ack.HasSize, "InitSyn had S (even with default values) ⇒ InitAck has S")
	require.EqualValues(t, 65535, ack.BatchSize)
}

func TestMinResolution(t *testing.T) {
	require.EqualValues(t, 0x0a, minResolution(0x0a, 0x0f))
	require.EqualValues(t, 0x05, minResolution(0x09, 0x06))
	require.True(t, resolutionLE(0x05, 0x0a))
	require.False(t, resolutionLE(0x0b, 0x0a))
}

// TestAcceptRejectsBadIdentity: whatami 0b11 and an all-zero ZID are refused
// with CLOSE(INVALID), as Rust refuses them, and the reason is logged.
func TestAcceptRejectsBadIdentity(t *testing.T) {
	for _, tc := range []struct {
		name string
		w    wire.WhatAmI
		z    wire.ZID
		log  string
	}{
		{"whatami", 3, testZID(), "invalid whatami"},
		{"zero zid", wire.WhatAmIClient, wire.MustZID([]byte{0, 0, 0, 0}), "all-zero ZID"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs syncBuf
			cfg := testConfig()
			cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
			ln, _, _ := startListener(t, cfg)
			p := dialRaw(t, ln)
			p.send(&wire.InitSyn{Version: wire.ProtoVersion, WhatAmI: tc.w, ZID: tc.z, Resolution: wire.DefaultResolution, BatchSize: 65535})
			m := p.recvMsg(5 * time.Second)
			c, ok := m.(*wire.Close)
			require.True(t, ok, "got %T", m)
			require.Equal(t, wire.CloseInvalid, c.Reason)
			require.Eventually(t, func() bool { return strings.Contains(logs.String(), tc.log) }, 5*time.Second, 10*time.Millisecond, logs.String())
		})
	}
}

type syncBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
