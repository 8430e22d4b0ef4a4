package wire_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/picobridge/picobridge/zenohpath/wire"
	"github.com/picobridge/picobridge/zenohpath/wire/zvec"
)

// seedMessages are appended values of every message kind.
func seedMessages() (transport []wire.TransportMessage, network []wire.NetworkMessage, zenoh []wire.ZenohMessage) {
	zid := wire.MustZID([]byte{1, 2, 3, 4, 5, 6, 7, 8})
	ts := wire.Timestamp{Time: 7713657436024128632, ZID: zid}
	put := &wire.Put{HasTimestamp: true, Timestamp: ts, HasEncoding: true, Encoding: wire.Encoding{ID: 1, Schema: []byte("utf8")},
		HasSourceInfo: true, SourceInfo: wire.SourceInfo{ZID: zid, EID: 1, SN: 2}, Attachment: []byte{1, 2, 3}, Payload: []byte("hello")}
	del := &wire.Del{HasTimestamp: true, Timestamp: ts, Attachment: []byte{9}}
	query := &wire.Query{HasConsolidation: true, Consolidation: 2, Parameters: "a=b", HasBody: true,
		Body: wire.QueryBody{Encoding: wire.Encoding{ID: 5}, Payload: []byte("{}")}, Attachment: []byte{1}}
	reply := &wire.Reply{Body: &wire.Put{Payload: []byte("r")}}
	errb := &wire.Err{HasEncoding: true, Encoding: wire.Encoding{ID: 4}, Payload: []byte("e")}
	zenoh = []wire.ZenohMessage{put, del, query, reply, errb}
	we := wire.WireExpr{Scope: 1, Suffix: "/a/**", Mapping: wire.MappingSender}
	netx := wire.NetExt{HasQoS: true, QoS: wire.NewQoS(wire.PriorityRealTime, wire.CongestionBlock, true), HasTimestamp: true, Timestamp: ts}
	network = []wire.NetworkMessage{
		&wire.Push{WireExpr: we, NetExt: netx, Body: put},
		&wire.Push{WireExpr: wire.WireExpr{Scope: 1}, Body: del},
		&wire.Request{ID: 1, WireExpr: we, NetExt: netx, HasTarget: true, Target: wire.TargetAll, HasBudget: true, Budget: 3,
			HasTimeout: true, Timeout: 10 * time.Second, Body: query},
		&wire.Response{ID: 1, WireExpr: we, HasResponderID: true, ResponderID: wire.EntityGlobalID{ZID: zid, EID: 4}, Body: reply},
		&wire.Response{ID: 2, WireExpr: we, Body: errb},
		&wire.ResponseFinal{ID: 1, NetExt: netx},
		&wire.Declare{HasInterestID: true, InterestID: 2, Body: &wire.DeclareKeyExpr{ID: 1, WireExpr: wire.WireExpr{Suffix: "demo"}}},
		&wire.Declare{Body: &wire.UndeclareKeyExpr{ID: 1}},
		&wire.Declare{Body: &wire.DeclareSubscriber{ID: 1, WireExpr: we}},
		&wire.Declare{Body: &wire.UndeclareSubscriber{ID: 1, HasWireExpr: true, WireExpr: we}},
		&wire.Declare{Body: &wire.DeclareQueryable{ID: 1, WireExpr: we, HasInfo: true, Complete: true, Distance: 1}},
		&wire.Declare{Body: &wire.UndeclareQueryable{ID: 1}},
		&wire.Declare{Body: &wire.DeclareToken{ID: 1, WireExpr: we}},
		&wire.Declare{Body: &wire.UndeclareToken{ID: 1, HasWireExpr: true, WireExpr: we}},
		&wire.Declare{HasInterestID: true, InterestID: 2, Body: &wire.DeclareFinal{}},
		&wire.Interest{Mode: wire.InterestCurrentFuture, ID: 2, Options: 0xd3, WireExpr: we},
		&wire.Interest{Mode: wire.InterestFinal, ID: 2},
		&wire.NetworkOAM{ID: 1, Body: wire.OAMBody{Enc: wire.ExtEncZBuf, Body: []byte{1}}},
	}
	var payload []byte
	for _, n := range network[:3] {
		payload = n.Append(payload)
	}
	transport = []wire.TransportMessage{
		&wire.InitSyn{Version: 9, WhatAmI: wire.WhatAmIClient, ZID: zid, HasSize: true, Resolution: 0x0a, BatchSize: 2048, Patch: 1},
		&wire.InitAck{Version: 9, ZID: zid, Cookie: []byte{1, 2}, Patch: 1, Exts: []wire.Ext{{Header: wire.ExtInitQoS}}},
		&wire.OpenSyn{Lease: 10 * time.Second, Cookie: []byte{1, 2}},
		&wire.OpenAck{Lease: 2500 * time.Millisecond, InitialSN: 11259375},
		&wire.Close{Session: true, Reason: wire.CloseExpired},
		&wire.KeepAlive{},
		&wire.Frame{Reliable: true, SN: 3, Payload: payload},
		&wire.Fragment{More: true, SN: 4, First: true, Payload: payload[:7]},
		&wire.Join{Version: 9, ZID: zid, Lease: time.Second, NextSNReliable: 1, Patch: 1},
		&wire.TransportOAM{ID: 1, Body: wire.OAMBody{Enc: wire.ExtEncZ64, Value: 7}},
	}
	return transport, network, zenoh
}

// seedBatches returns the transcript batches (none if the testdata is absent).
func seedBatches() [][]byte {
	dir, err := zvec.FindTestdata()
	if err != nil {
		return nil
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.zvec"))
	var out [][]byte
	for _, path := range files {
		fh, err := os.Open(path)
		if err != nil {
			continue
		}
		f, err := zvec.Parse(fh)
		fh.Close()
		if err != nil {
			continue
		}
		for _, l := range f.Lines {
			out = append(out, l.Batch)
		}
	}
	return out
}

// networkSeeds returns every network message found in the transcripts'
// frames, plus the appended values.
func networkSeeds() [][]byte {
	_, network, _ := seedMessages()
	var out [][]byte
	for _, n := range network {
		out = append(out, n.Append(nil))
	}
	var p wire.Parser
	for _, b := range seedBatches() {
		_ = p.WalkBatch(b, func(_ wire.TransportMessage, n wire.NetworkMessage) error {
			if n != nil {
				out = append(out, n.Append(nil))
			}
			return nil
		})
	}
	return out
}

type message interface {
	Append([]byte) []byte
	Len() int
}

// checkRoundTrip verifies the invariants of a successfully parsed message:
// n is within the input, Len agrees with Append, and the appended form
// parses again to a message that appends to the same bytes (a fixpoint:
// the first append may canonicalize a non-minimal input).
func checkRoundTrip(t *testing.T, in []byte, n int, m message, parse func([]byte) (message, int, error)) {
	t.Helper()
	if n < 1 || n > len(in) {
		t.Fatalf("consumed %d of %d", n, len(in))
	}
	out := m.Append(nil)
	if len(out) != m.Len() {
		t.Fatalf("Len %d, Append %d bytes: %x", m.Len(), len(out), in[:n])
	}
	m2, n2, err := parse(out)
	if err != nil {
		t.Fatalf("re-parse of %x (from %x): %v", out, in[:n], err)
	}
	if n2 != len(out) {
		t.Fatalf("re-parse consumed %d of %d", n2, len(out))
	}
	if out2 := m2.Append(nil); !bytes.Equal(out, out2) {
		t.Fatalf("not a fixpoint: %x -> %x -> %x", in[:n], out, out2)
	}
}

func FuzzParseTransport(f *testing.F) {
	transport, _, _ := seedMessages()
	for _, m := range transport {
		f.Add(m.Append(nil))
	}
	for _, b := range seedBatches() {
		f.Add(b)
	}
	parse := func(b []byte) (message, int, error) { return wire.ParseTransport(b) }
	f.Fuzz(func(t *testing.T, b []byte) {
		m, n, err := wire.ParseTransport(b)
		if err != nil {
			return
		}
		checkRoundTrip(t, b, n, m, parse)
	})
}

func FuzzParseNetwork(f *testing.F) {
	for _, b := range networkSeeds() {
		f.Add(b)
	}
	parse := func(b []byte) (message, int, error) { return wire.ParseNetwork(b) }
	var p wire.Parser // also exercise the reusing parser on the same input
	f.Fuzz(func(t *testing.T, b []byte) {
		m, n, err := wire.ParseNetwork(b)
		m2, n2, err2 := p.Network(b)
		if (err == nil) != (err2 == nil) || n != n2 {
			t.Fatalf("Parser and ParseNetwork disagree: %v / %v", err, err2)
		}
		if err != nil {
			return
		}
		if !bytes.Equal(m.Append(nil), m2.Append(nil)) {
			t.Fatalf("Parser and ParseNetwork decode differently")
		}
		checkRoundTrip(t, b, n, m, parse)
	})
}

func FuzzParseZenohMessage(f *testing.F) {
	_, network, zenoh := seedMessages()
	for _, z := range zenoh {
		f.Add(z.Append(nil))
	}
	_ = network
	parse := func(b []byte) (message, int, error) { return wire.ParseZenohMessage(b) }
	f.Fuzz(func(t *testing.T, b []byte) {
		m, n, err := wire.ParseZenohMessage(b)
		if err != nil {
			return
		}
		checkRoundTrip(t, b, n, m, parse)
	})
}

func FuzzParseBatch(f *testing.F) {
	transport, _, _ := seedMessages()
	for _, m := range transport {
		f.Add(m.Append(nil))
	}
	for _, b := range seedBatches() {
		f.Add(b)
	}
	var p wire.Parser
	var r wire.Reassembler
	f.Fuzz(func(t *testing.T, batch []byte) {
		// rebuild the batch from the decoded messages: it must decode
		// again to the same rebuilt bytes
		rebuild := func(in []byte) ([]byte, error) {
			var out []byte
			err := p.WalkBatch(in, func(tm wire.TransportMessage, nm wire.NetworkMessage) error {
				if nm != nil {
					b := nm.Append(nil)
					if len(b) != nm.Len() {
						t.Fatalf("network Len %d != %d", nm.Len(), len(b))
					}
					out = append(out, b...)
					return nil
				}
				switch m := tm.(type) {
				case *wire.Frame:
					h := *m
					h.Payload = nil
					out = h.Append(out)
					if len(out) == 0 || h.HeaderLen() != h.Len() {
						t.Fatalf("frame header length")
					}
					return nil
				case *wire.Fragment:
					if msg, done, err := r.Push(m); err == nil && done {
						var p2 wire.Parser
						_, _, _ = p2.Network(msg)
					}
				}
				b := tm.Append(nil)
				if len(b) != tm.Len() {
					t.Fatalf("transport Len %d != %d", tm.Len(), len(b))
				}
				out = append(out, b...)
				return nil
			})
			return out, err
		}
		out, err := rebuild(batch)
		// the range iterators see the same messages and the same error
		var viaIter []byte
		var iterErr error
	walk:
		for tm, err := range p.TransportMessages(batch) {
			if err != nil {
				iterErr = err
				break
			}
			if fr, ok := tm.(*wire.Frame); ok {
				h := *fr
				h.Payload = nil
				viaIter = h.Append(viaIter)
				for nm, err := range p.NetworkMessages(fr.Payload) {
					if err != nil {
						iterErr = err
						break walk
					}
					viaIter = nm.Append(viaIter)
				}
				continue
			}
			viaIter = tm.Append(viaIter)
		}
		if (err == nil) != (iterErr == nil) {
			t.Fatalf("WalkBatch err %v, iterators err %v", err, iterErr)
		}
		if err == nil && !bytes.Equal(out, viaIter) {
			t.Fatalf("WalkBatch and iterators differ: %x vs %x", out, viaIter)
		}
		if err != nil {
			var we *wire.Error
			if !asWireError(err, &we) || we.Offset < 0 || we.Offset > len(batch) {
				t.Fatalf("bad error %v", err)
			}
			return
		}
		out2, err := rebuild(out)
		if err != nil {
			t.Fatalf("rebuilt batch %x (from %x) fails: %v", out, batch, err)
		}
		if !bytes.Equal(out, out2) {
			t.Fatalf("not a fixpoint: %x -> %x -> %x", batch, out, out2)
		}
	})
}

func FuzzParseScouting(f *testing.F) {
	zid := wire.MustZID([]byte{1, 2, 3})
	f.Add(wire.Scout{Version: 9, What: wire.WhatRouter, ZID: zid}.Append(nil))
	f.Add(wire.Hello{Version: 9, ZID: zid, Locators: []string{"tcp/127.0.0.1:7447"}}.Append(nil))
	parse := func(b []byte) (message, int, error) { return wire.ParseScouting(b) }
	f.Fuzz(func(t *testing.T, b []byte) {
		m, n, err := wire.ParseScouting(b)
		if err != nil {
			return
		}
		checkRoundTrip(t, b, n, m, parse)
	})
}

// FuzzParseExtChain: a nested extension chain (the INIT/OPEN Auth body)
// never panics, and what decodes re-encodes to the same bytes when every
// VLE was minimal.
func FuzzParseExtChain(f *testing.F) {
	f.Add([]byte{0x02})
	f.Add([]byte{0x82, 0x22, 0x05, 0x42, 0x01, 0x00})
	f.Add([]byte{0x62})
	f.Add([]byte{0x80})
	f.Fuzz(func(t *testing.T, b []byte) {
		exts, err := wire.ParseExtChain(b)
		if err != nil {
			return
		}
		if len(b) == 0 != (len(exts) == 0) {
			t.Fatalf("%d extensions from %d bytes", len(exts), len(b))
		}
		again, err := wire.ParseExtChain(wire.AppendExtChain(nil, exts))
		if err != nil || len(again) != len(exts) {
			t.Fatalf("re-encoded chain: %v, %d extensions of %d", err, len(again), len(exts))
		}
	})
}
