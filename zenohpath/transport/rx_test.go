package transport

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/zenohpath/wire"
)

func TestSNAccept(t *testing.T) {
	const mask = 0x0fffffff
	for _, tc := range []struct {
		last, sn uint64
		ok       bool
	}{
		{0, 1, true},
		{0, 0, false},           // duplicate
		{5, 4, false},           // behind
		{0, mask >> 1, true},    // exactly half the space ahead
		{0, mask>>1 + 1, false}, // more than half
		{mask, 0, true},         // wrap
		{mask - 1, 2, true},     // across the wrap
		{1, mask, false},        // behind across the wrap
		{0, mask + 1, false},    // outside the mask
	} {
		require.Equal(t, tc.ok, snAccept(tc.last, tc.sn, mask), "last %#x sn %#x", tc.last, tc.sn)
	}
	require.EqualValues(t, mask, snPrev(0, mask))
	require.EqualValues(t, 0, snNext(mask, mask))
	// 8-bit resolution: mask 0x7f.
	require.True(t, snAccept(0x7f, 0, 0x7f))
	require.False(t, snAccept(0, 0x40, 0x7f))
}

// TestSNWindowRX drives a session with raw FRAMEs: duplicates, stale and
// too-far SNs are dropped and counted; wrap is accepted.
func TestSNWindowRX(t *testing.T) {
	const mask = 0x0fffffff
	ln, acc, rec := startListener(t, testConfig())
	p, s, _, _ := rawOpen(t, ln, acc, wire.InitSyn{WhatAmI: wire.WhatAmIClient}, 10*time.Second, mask-1)
	send := func(sn uint64, tag string) { p.sendRaw(frameBatch(true, sn, push("k", []byte(tag)))) }
	send(mask-1, "a")                                             // initial: accepted
	send(mask-1, "dup")                                           // duplicate
	send(mask, "b")                                               // accepted
	send(0, "c")                                                  // wrap: accepted
	send(mask, "stale")                                           // behind
	send(mask>>1+5, "far")                                        // more than half ahead
	send(1, "d")                                                  // accepted
	p.sendRaw(frameBatch(false, mask-1, push("k", []byte("be")))) // best-effort space is separate
	for _, want := range []string{"a", "b", "c", "d", "be"} {
		require.Equal(t, want, string(rec.next(t, 5*time.Second).payload))
	}
	require.EqualValues(t, 3, s.Stats().Dropped["sn_window"])
}

// replayPico opens a session on a Listener with the InitSyn of a zenoh-pico
// transcript and then sends every later D>G batch of its first connection
// (the OpenSyn is rebuilt with our cookie).
func replayPico(t *testing.T, file string, cfg Config) (*Session, *recorder, *rawPeer) {
	lines := loadZvec(t, file)
	ln, acc, rec := startListener(t, cfg)
	syn, _, err := wire.ParseTransport(lines[0].batch)
	require.NoError(t, err)
	p, s, _, _ := rawOpen(t, ln, acc, *syn.(*wire.InitSyn), 10*time.Second, 0)
	opens := 0
	for _, l := range lines[1:] {
		if l.dir != "D>G" {
			continue
		}
		m, _, err := wire.ParseTransport(l.batch)
		require.NoError(t, err)
		switch m.(type) {
		case *wire.OpenSyn:
			opens++
			continue
		case *wire.InitSyn:
			return s, rec, p // a second connection starts here
		}
		p.sendRaw(l.batch)
	}
	require.Equal(t, 1, opens)
	return s, rec, p
}

// TestReplayPicoFragmentedPut: the exact bytes of a 10 KB z_put of a 2048
// build (6 FRAGMENTs, R=0 with reliable SNs, First marker) reassemble.
func TestReplayPicoFragmentedPut(t *testing.T) {
	s, rec, _ := replayPico(t, "frag_put_2048.zvec", testConfig())
	var got rxMsg
	for got.id != wire.IDPush {
		got = rec.next(t, 5*time.Second)
	}
	require.Equal(t, strings.Repeat("a", 10240), string(got.payload))
	require.Empty(t, s.Stats().Dropped)
}

// TestReplayPicoTranscripts: every D>G batch real zenoh-pico sent decodes
// in a session without a drop or a decode error.
func TestReplayPicoTranscripts(t *testing.T) {
	for _, f := range []string{
		"sub_push.zvec", "pub_interest_push.zvec", "put_session.zvec", "pub_attachment.zvec", "get_query.zvec",
		"get_query_value.zvec", "queryable_request.zvec", "liveliness_token.zvec", "liveliness_sub_history.zvec",
		"pub_thr_batched_2048.zvec", "lease_expiry.zvec", "reconnect_close.zvec", "frag_push_2048.zvec",
	} {
		t.Run(f, func(t *testing.T) {
			s, rec, p := replayPico(t, f, testConfig())
			deadline := time.After(250 * time.Millisecond)
			select {
			case err := <-rec.closed:
				// lease_expiry ends with pico's CLOSE(EXPIRED).
				require.Equal(t, ReasonRemoteClose, err.(*CloseError).Reason, "%v", err)
			case <-deadline:
			}
			_ = p
			n := len(rec.msgs)
			require.Positive(t, n)
			require.Empty(t, s.Stats().Dropped)
		})
	}
}

// TestMalformedClosesOnlyThatSession: garbage in one session closes it with
// DecodeError and CLOSE(INVALID); another session carries on.
func TestMalformedClosesOnlyThatSession(t *testing.T) {
	ln, acc, rec := startListener(t, testConfig())
	p1, s1, _, _ := rawOpen(t, ln, acc, wire.InitSyn{WhatAmI: wire.WhatAmIClient}, 10*time.Second, 0)
	p2, s2, _, _ := rawOpen(t, ln, acc, wire.InitSyn{WhatAmI: wire.WhatAmIClient}, 10*time.Second, 0)
	for _, bad := range [][]byte{
		{0x25, 0x00, 0x1d, 0xff, 0xff, 0xff}, // FRAME, PUSH with a lying length
	} {
		p1.sendRaw(bad)
	}
	m := p1.recvSkipKA(5 * time.Second)
	c, ok := m.(*wire.Close)
	require.True(t, ok, "got %T", m)
	require.Equal(t, wire.CloseInvalid, c.Reason)
	ce := rec.waitClose(t, 5*time.Second)
	require.Equal(t, ReasonDecodeError, ce.Reason)
	require.Error(t, ce.Err)
	<-s1.Done()

	// The other session still works both ways.
	p2.sendRaw(frameBatch(true, 0, push("k", []byte("alive"))))
	require.Equal(t, "alive", string(rec.next(t, 5*time.Second).payload))
	require.NoError(t, s2.Send(push("k", []byte("back")), SendOptions{Reliable: true}))
	f, msgs := frameMsgs(t, encodeMsg(p2.recvSkipKA(5*time.Second)))
	require.True(t, f.Reliable)
	require.Equal(t, "back", string(msgs[0].payload))
}

func encodeMsg(m wire.TransportMessage) []byte { return m.Append(nil) }

func TestMalformedInputs(t *testing.T) {
	for name, bad := range map[string][]byte{
		"unknown transport id": {0x1f},
		"truncated frame sn":   {0x25, 0x80},
		"unknown mandatory":    {0xa5, 0x00, 0x11, 0x1d},
		"bad network id":       {0x25, 0x00, 0x10},
		"fragment bad body":    nil,
	} {
		t.Run(name, func(t *testing.T) {
			ln, acc, rec := startListener(t, testConfig())
			p, _, _, _ := rawOpen(t, ln, acc, wire.InitSyn{WhatAmI: wire.WhatAmIClient, Patch: 1}, 10*time.Second, 0)
			if bad == nil {
				// A complete fragment train whose content is not a network message.
				p.send(&wire.Fragment{Reliable: true, SN: 0, More: false, First: true, Payload: []byte{0x1d, 0xff, 0xff}})
			} else {
				p.sendRaw(bad)
			}
			ce := rec.waitClose(t, 5*time.Second)
			require.Equal(t, ReasonDecodeError, ce.Reason, "%v", ce)
		})
	}
}

func TestFragmentRoundTrip(t *testing.T) {
	for _, size := range []int{3000, 64 << 10, 300 << 10} {
		for _, patch := range []uint64{0, 1} {
			rb := newRecorder()
			o := pairOpts{batch: 2048, patch: patch}
			o.cfgA.MaxReassembly, o.cfgB.MaxReassembly = 400<<10, 400<<10
			a, b := sessionPair(t, o, newRecorder(), rb)
			payload := bytes.Repeat([]byte("0123456789abcdef"), size/16)
			require.NoError(t, a.Send(push("big", payload), SendOptions{Reliable: true}))
			require.NoError(t, a.Send(push("small", []byte("after")), SendOptions{}))
			got := rb.next(t, 10*time.Second)
			require.Equal(t, "big", got.key)
			require.True(t, bytes.Equal(payload, got.payload), "size %d patch %d", size, patch)
			require.Equal(t, "after", string(rb.next(t, 5*time.Second).payload))
			require.Empty(t, b.Stats().Dropped)
			require.Greater(t, a.Stats().TxBatches, uint64(size/2046))
		}
	}
}

func TestReassemblyBoundOverSession(t *testing.T) {
	rb := newRecorder()
	o := pairOpts{batch: 2048, patch: 1}
	o.cfgB.MaxReassembly = 10000
	a, b := sessionPair(t, o, newRecorder(), rb)
	require.NoError(t, a.Send(push("big", make([]byte, 20000)), SendOptions{Reliable: true}))
	require.NoError(t, a.Send(push("ok", make([]byte, 5000)), SendOptions{Reliable: true}))
	got := rb.next(t, 5*time.Second)
	require.Equal(t, "ok", got.key, "the oversize message is dropped, the next one arrives")
	require.EqualValues(t, 1, b.Stats().Dropped["fragment_oversize"])
}

func frag(sn uint64, more, first bool, payload string) *wire.Fragment {
	return &wire.Fragment{SN: sn, More: more, First: first, Payload: []byte(payload)}
}

// TestReassemblerDrops: the session counts each reassembly drop under its
// reason, once per dropped message (the rules themselves are pinned in
// wire's TestReassemblerAdd), and holds no reassembly buffer once a train
// ended.
func TestReassemblerDrops(t *testing.T) {
	cfg := testConfig().withDefaults()
	cfg.MaxMessageSize, cfg.MaxReassembly = 10, 10
	var got []string
	s := newSession(&cfg, nullLink{}, params{resolution: wire.DefaultResolution, batchSize: 2048, patch: 1, peerLease: time.Second},
		HandlerFuncs{Network: func(_ *Session, m wire.NetworkMessage) {
			got = append(got, m.(*wire.Push).WireExpr.Suffix)
		}})
	msg := func(key string) []byte { return push(key, nil).Append(nil) }
	rx := func(fs ...*wire.Fragment) {
		t.Helper()
		for _, f := range fs {
			f.Reliable = true
			require.NoError(t, s.rxBatch(f.Append(nil)))
		}
	}
	a := msg("a")
	require.LessOrEqual(t, len(a), 10)
	rx(frag(1, true, true, string(a[:2])), frag(2, false, false, string(a[2:])))
	require.Equal(t, []string{"a"}, got)
	require.Zero(t, s.reasm[chReliable].Held(), "no buffer held after a complete message")
	rx(frag(3, true, true, string(a[:2])), frag(5, true, false, "x"), frag(6, false, false, "x"))  // gap, rest skipped
	rx(frag(7, false, false, string(a)))                                                           // no First
	rx(frag(8, true, true, "123456"), frag(9, true, false, "789012"), frag(10, false, false, "x")) // oversize
	rx(frag(11, true, true, string(a[:2])), &wire.Fragment{SN: 12, Drop: true})                    // Drop marker
	rx(frag(13, true, true, string(a[:2])), frag(14, false, false, string(a[2:])))
	require.Equal(t, []string{"a", "a"}, got)
	require.Equal(t, map[string]uint64{"fragment_gap": 1, "fragment_no_first": 1, "fragment_oversize": 1, "fragment_drop_marker": 1},
		s.Stats().Dropped)
	rx(frag(15, true, true, "ab"))
	require.NotZero(t, s.reasm[chReliable].Held())
	s.releaseRX()
	require.Zero(t, s.reasm[chReliable].Held(), "a partial train is given back at the end of the session")
}

// TestFragmentGapOverSession: a fragment train with a missing SN is
// dropped and counted; the next train is delivered.
func TestFragmentGapOverSession(t *testing.T) {
	ln, acc, rec := startListener(t, testConfig())
	p, s, ack, _ := rawOpen(t, ln, acc, wire.InitSyn{WhatAmI: wire.WhatAmIClient, Patch: 1}, 10*time.Second, 0)
	require.EqualValues(t, 1, ack.Patch)
	msg := push("gap", []byte("0123456789")).Append(nil)
	p.send(&wire.Fragment{Reliable: true, SN: 0, More: true, First: true, Payload: msg[:5]})
	p.send(&wire.Fragment{Reliable: true, SN: 2, More: false, Payload: msg[5:]}) // SN 1 missing
	p.send(&wire.Fragment{Reliable: true, SN: 3, More: true, First: true, Payload: msg[:5]})
	p.send(&wire.Fragment{Reliable: true, SN: 4, More: false, Payload: msg[5:]})
	got := rec.next(t, 5*time.Second)
	require.Equal(t, "0123456789", string(got.payload))
	require.EqualValues(t, 1, s.Stats().Dropped["fragment_gap"])
	select {
	case m := <-rec.msgs:
		t.Fatalf("unexpected %v", m)
	case <-time.After(50 * time.Millisecond):
	}
}
