package transport

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/zenohpath/wire"
)

// rxMsg is a copy of a received PUSH/PUT.
type rxMsg struct {
	key     string
	payload []byte
	id      wire.NetworkID
}

// recorder is a Handler that copies PUSHes into a channel.
type recorder struct {
	msgs   chan rxMsg
	closed chan error
	onMsg  func(s *Session, m wire.NetworkMessage)
}

func newRecorder() *recorder {
	return &recorder{msgs: make(chan rxMsg, 100000), closed: make(chan error, 16)}
}

func (r *recorder) HandleNetwork(s *Session, m wire.NetworkMessage) {
	if r.onMsg != nil {
		r.onMsg(s, m)
	}
	x := rxMsg{id: m.NetworkID()}
	if d, ok := m.(*wire.Declare); ok {
		if _, ok := d.Body.(*wire.DeclareSubscriber); ok {
			x.key = "sub"
		}
	}
	if p, ok := m.(*wire.Push); ok {
		x.key = p.WireExpr.Suffix
		if put, ok := p.Body.(*wire.Put); ok {
			x.payload = append([]byte(nil), put.Payload...)
		}
	}
	r.msgs <- x
}

func (r *recorder) HandleClose(s *Session, err error) {
	r.closed <- err // HandleClose is called once per session
}

func (r *recorder) next(t testing.TB, timeout time.Duration) rxMsg {
	t.Helper()
	select {
	case m := <-r.msgs:
		return m
	case <-time.After(timeout):
		t.Fatalf("no message within %v", timeout)
	}
	return rxMsg{}
}

func (r *recorder) waitClose(t testing.TB, timeout time.Duration) *CloseError {
	t.Helper()
	select {
	case err := <-r.closed:
		ce, ok := err.(*CloseError)
		require.True(t, ok, "HandleClose error %T %v", err, err)
		return ce
	case <-time.After(timeout):
		t.Fatalf("session not closed within %v", timeout)
	}
	return nil
}

func push(key string, payload []byte) *wire.Push {
	return &wire.Push{WireExpr: wire.WireExpr{Suffix: key}, Body: &wire.Put{Payload: payload}}
}

var zidCounter struct {
	sync.Mutex
	n byte
}

func testZID() wire.ZID {
	zidCounter.Lock()
	defer zidCounter.Unlock()
	zidCounter.n++
	return wire.MustZID([]byte{0xa0, zidCounter.n, 3, 4, 5, 6, 7, 8})
}

func testConfig() Config {
	return Config{ZID: testZID(), WhatAmI: wire.WhatAmIRouter}
}

// pair starts a Listener (router) and dials it (client); it returns the
// dialled session, the accepted one and both recorders.
func pair(t *testing.T, proto string, lcfg, dcfg Config) (client, server *Session, crec, srec *recorder) {
	t.Helper()
	return pairWith(t, proto, lcfg, dcfg, newRecorder(), newRecorder())
}

func pairWith(t *testing.T, proto string, lcfg, dcfg Config, crec, srec *recorder) (client, server *Session, _, _ *recorder) {
	t.Helper()
	accepted := make(chan *Session, 1)
	ln, err := Listen(context.Background(), proto+"/127.0.0.1:0", lcfg, func(s *Session) Handler {
		accepted <- s
		return srec
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	if dcfg.WhatAmI == wire.WhatAmIRouter {
		dcfg.WhatAmI = wire.WhatAmIClient
	}
	client, err = Dial(context.Background(), ln.Endpoint(), dcfg, crec)
	require.NoError(t, err)
	t.Cleanup(func() { _ = client.Close(ReasonShutdown); <-client.Done() })
	select {
	case server = <-accepted:
	case <-time.After(5 * time.Second):
		t.Fatal("no session accepted")
	}
	return client, server, crec, srec
}

// rawPeer drives one side of a link by hand: batches in, batches out.
type rawPeer struct {
	t  testing.TB
	c  net.Conn
	sr *streamReader
}

func newRawPeer(t testing.TB, c net.Conn) *rawPeer {
	return &rawPeer{t: t, c: c, sr: newStreamReader(c)}
}

func (p *rawPeer) send(msgs ...wire.TransportMessage) {
	p.t.Helper()
	p.sendRaw(wire.AppendBatch(nil, msgs...))
}

func (p *rawPeer) sendRaw(content []byte) {
	p.t.Helper()
	_ = p.c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	_, err := p.c.Write(wire.AppendStreamBatch(nil, content))
	require.NoError(p.t, err)
}

// recv returns the next batch content (copied).
func (p *rawPeer) recv(timeout time.Duration) ([]byte, error) {
	_ = p.c.SetReadDeadline(time.Now().Add(timeout))
	b, err := p.sr.next()
	return append([]byte(nil), b...), err
}

func (p *rawPeer) recvMsg(timeout time.Duration) wire.TransportMessage {
	p.t.Helper()
	b, err := p.recv(timeout)
	require.NoError(p.t, err)
	m, n, err := wire.ParseTransport(b)
	require.NoError(p.t, err, "batch %x", b)
	require.Equal(p.t, len(b), n, "one message per batch: %x", b)
	return m
}

// sessionPair builds two connected sessions over loopback TCP without a
// handshake, with chosen parameters (batch size, patch, initial SNs).
type pairOpts struct {
	batch      uint16
	patch      uint64
	resolution uint8
	snA, snB   uint64 // initial SN of a and b
	cfgA, cfgB Config
}

func sessionPair(t testing.TB, o pairOpts, ha, hb Handler) (a, b *Session) {
	t.Helper()
	if o.batch == 0 {
		o.batch = 65535
	}
	if o.resolution == 0 {
		o.resolution = wire.DefaultResolution
	}
	if o.cfgA.ZID.IsZero() {
		o.cfgA.ZID = testZID()
	}
	if o.cfgB.ZID.IsZero() {
		o.cfgB.ZID = testZID()
	}
	ca, cb := o.cfgA.withDefaults(), o.cfgB.withDefaults()
	tp := newTCPPipe(t)
	pa := params{peerZID: cb.ZID, peerWhatAmI: cb.WhatAmI, resolution: o.resolution, batchSize: o.batch, patch: o.patch,
		peerLease: cb.Lease, peerInitialSN: o.snB, ourInitialSN: o.snA}
	pb := params{peerZID: ca.ZID, peerWhatAmI: ca.WhatAmI, resolution: o.resolution, batchSize: o.batch, patch: o.patch,
		peerLease: ca.Lease, peerInitialSN: o.snA, ourInitialSN: o.snB}
	a = newSession(&ca, newStreamLink(tp.a), pa, ha)
	b = newSession(&cb, newStreamLink(tp.b), pb, hb)
	for _, s := range []*Session{a, b} {
		s.start()
		go s.readLoop()
	}
	t.Cleanup(func() {
		_ = a.Close(ReasonShutdown)
		_ = b.Close(ReasonShutdown)
		<-a.Done()
		<-b.Done()
	})
	return a, b
}

// rawOpen opens a session on ln by hand and returns the raw peer, the
// accepted session and the InitAck/OpenAck it got.
func rawOpen(t *testing.T, ln *Listener, acc chan *Session, syn wire.InitSyn, lease time.Duration, isn uint64) (*rawPeer, *Session, *wire.InitAck, *wire.OpenAck) {
	t.Helper()
	c, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	p := newRawPeer(t, c)
	if syn.Version == 0 {
		syn.Version = wire.ProtoVersion
	}
	if syn.ZID.IsZero() {
		syn.ZID = testZID()
	}
	if syn.Resolution == 0 {
		syn.Resolution = wire.DefaultResolution
	}
	if syn.BatchSize == 0 {
		syn.BatchSize = 65535
	}
	p.send(&syn)
	ack := p.recvMsg(5 * time.Second).(*wire.InitAck)
	ack.Cookie = append([]byte(nil), ack.Cookie...)
	p.send(&wire.OpenSyn{Lease: lease, InitialSN: isn, Cookie: ack.Cookie})
	oa := p.recvMsg(5 * time.Second).(*wire.OpenAck)
	var s *Session
	select {
	case s = <-acc:
	case <-time.After(5 * time.Second):
		t.Fatal("not accepted")
	}
	return p, s, ack, oa
}

// recvSkipKA returns the next transport message that is not a KEEP_ALIVE.
func (p *rawPeer) recvSkipKA(timeout time.Duration) wire.TransportMessage {
	p.t.Helper()
	for {
		m := p.recvMsg(timeout)
		if _, ok := m.(*wire.KeepAlive); !ok {
			return m
		}
	}
}

// frameMsgs decodes the network messages of a FRAME batch into copies.
func frameMsgs(t testing.TB, batch []byte) (*wire.Frame, []rxMsg) {
	t.Helper()
	var p wire.Parser
	var f wire.Frame
	var out []rxMsg
	n := 0
	require.NoError(t, p.WalkBatch(batch, func(tm wire.TransportMessage, nm wire.NetworkMessage) error {
		if nm == nil {
			n++
			fr, ok := tm.(*wire.Frame)
			require.True(t, ok, "got %T", tm)
			f = *fr
			return nil
		}
		x := rxMsg{id: nm.NetworkID()}
		if ps, ok := nm.(*wire.Push); ok {
			x.key = ps.WireExpr.Suffix
			if put, ok := ps.Body.(*wire.Put); ok {
				x.payload = append([]byte(nil), put.Payload...)
			}
		}
		out = append(out, x)
		return nil
	}))
	require.Equal(t, 1, n, "exactly one transport message per batch")
	return &f, out
}

// frameBatch builds a FRAME batch holding msgs.
func frameBatch(reliable bool, sn uint64, msgs ...wire.NetworkMessage) []byte {
	b := wire.Frame{Reliable: reliable, SN: sn}.Append(nil)
	for _, m := range msgs {
		b = m.Append(b)
	}
	return b
}

type netDialer struct{}

func (netDialer) dial(addr string) (net.Conn, error) { return net.Dial("tcp", addr) }
