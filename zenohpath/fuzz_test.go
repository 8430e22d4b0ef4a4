package zenohpath

import (
	"fmt"
	"testing"

	"github.com/picobridge/picobridge/zenohpath/wire"
)

// FuzzRouterHandle feeds arbitrary network messages from one face of a router
// with other faces holding subscribers, queryables, tokens and interests: the
// router must never panic, whatever ids, scopes and orders it is sent.
func FuzzRouterHandle(f *testing.F) {
	seeds := []wire.NetworkMessage{
		declSub(1, "demo/**"),
		&wire.Declare{Body: &wire.DeclareKeyExpr{ID: 1, WireExpr: wireKey("demo/example")}},
		&wire.Push{WireExpr: wire.WireExpr{Scope: 1, Suffix: "/a", Mapping: wire.MappingSender}, Body: &wire.Put{Payload: []byte("x")}},
		&wire.Interest{Mode: wire.InterestCurrentFuture, ID: 2, Options: 0xd3, WireExpr: wire.WireExpr{Scope: 1, Mapping: wire.MappingSender}},
		&wire.Request{ID: 1, WireExpr: wireKey("demo/**"), Body: &wire.Query{}},
		&wire.Response{ID: 1, WireExpr: wireKey("demo/a"), Body: &wire.Reply{Body: &wire.Put{}}},
		&wire.ResponseFinal{ID: 1},
		&wire.Declare{Body: &wire.UndeclareSubscriber{ID: 1}},
		declTok(3, "group1/a"),
		&wire.Interest{Mode: wire.InterestFinal, ID: 2},
	}
	for _, m := range seeds {
		f.Add(m.Append(nil), m.Append(nil))
	}
	f.Fuzz(func(t *testing.T, a, b []byte) {
		r := NewRouter(RouterConfig{})
		defer r.Close()
		x, _ := r.addFace(&fakeLink{}, RandomZID(), wire.WhatAmIClient, false)
		y, _ := r.addFace(&fakeLink{}, RandomZID(), wire.WhatAmIClient, false)
		r.handle(y, declSub(1, "**"))
		r.handle(y, declQbl(1, "**", true))
		r.handle(y, &wire.Interest{Mode: wire.InterestCurrentFuture, ID: 9, Options: 0xff, WireExpr: wireKey("**")})
		for _, in := range [][]byte{a, b, a} {
			for len(in) > 0 {
				m, n, err := wire.ParseNetwork(in)
				if err != nil || n == 0 {
					break
				}
				r.handle(x, m)
				in = in[n:]
			}
		}
		r.removeFace(x)
	})
}

// BenchmarkRoutePush measures routing one PUSH among 100 faces with 10
// subscribers each (1 matching face).
func BenchmarkRoutePush(b *testing.B) {
	r := NewRouter(RouterConfig{})
	defer r.Close()
	for i := range 100 {
		f, _ := r.addFace(nopLink{}, RandomZID(), wire.WhatAmIClient, false)
		for j := range 10 {
			r.handle(f, declSub(uint32(j), fmt.Sprintf("fleet/dev%d/topic%d", i, j)))
		}
	}
	pub, _ := r.addFace(nopLink{}, RandomZID(), wire.WhatAmIClient, false)
	p := push("fleet/dev42/topic7", "payload")
	b.ReportAllocs()
	for b.Loop() {
		r.handle(pub, p)
	}
}

type nopLink struct{}

func (nopLink) send(wire.NetworkMessage, sendOptions) error { return nil }
func (nopLink) sendShared(*shared, sendOptions) error       { return nil }
func (nopLink) close()                                      {}

// FuzzUpstreamHandle feeds arbitrary network messages from an upstream face
// while our faces' interests are forwarded to it (a Current-only one being
// relayed, a CurrentFuture one kept), and then from one of our faces: the
// router must never panic, and closing every face leaves no forwarded
// interest, watcher or told face behind.
func FuzzUpstreamHandle(f *testing.F) {
	seeds := []wire.NetworkMessage{
		&wire.Declare{HasInterestID: true, InterestID: 1, Body: &wire.DeclareToken{ID: 1, WireExpr: wireKey("t/a")}},
		&wire.Declare{HasInterestID: true, InterestID: 1, Body: &wire.DeclareFinal{}},
		&wire.Declare{HasInterestID: true, InterestID: 2, Body: &wire.DeclareSubscriber{ID: 1, WireExpr: wireKey("p/1")}},
		&wire.Declare{HasInterestID: true, InterestID: 2, Body: &wire.DeclareFinal{}},
		&wire.Declare{Body: &wire.UndeclareSubscriber{ID: 1}},
		&wire.Declare{Body: &wire.DeclareQueryable{ID: 2, WireExpr: wireKey("p/**"), HasInfo: true, Complete: true}},
		&wire.Interest{Mode: wire.InterestFinal, ID: 2},
		&wire.Interest{Mode: wire.InterestCurrent, ID: 3, Options: 0x1f, WireExpr: wireKey("p/**")},
		push("p/1", "x"),
	}
	for _, m := range seeds {
		f.Add(m.Append(nil), m.Append(nil))
	}
	f.Fuzz(func(t *testing.T, a, b []byte) {
		r := NewRouter(RouterConfig{})
		defer r.Close()
		up, _ := r.addFace(&fakeLink{}, RandomZID(), wire.WhatAmIRouter, true)
		x, _ := r.addFace(&fakeLink{}, RandomZID(), wire.WhatAmIClient, false)
		r.handle(x, tokInterest(wire.InterestCurrent, 5, "t/**"))
		r.handle(x, &wire.Interest{Mode: wire.InterestCurrentFuture, ID: 6, Options: 0x93, WireExpr: wireKey("p/1")})
		r.handle(x, declSub(1, "q/**"))
		for i, in := range [][]byte{a, b, a} {
			from := up
			if i == 1 {
				from = x
			}
			for len(in) > 0 {
				m, n, err := wire.ParseNetwork(in)
				if err != nil || n == 0 {
					break
				}
				r.handle(from, m)
				in = in[n:]
			}
		}
		r.removeFace(x)
		r.removeFace(up)
		r.mu.Lock()
		defer r.mu.Unlock()
		if n := len(r.ints.exact) + len(r.ints.wild); n != 0 || len(r.ups) != 0 || len(up.fwd) != 0 {
			t.Fatalf("left behind: %d indexed interests, %d upstreams, %d forwarded interests", n, len(r.ups), len(up.fwd))
		}
		for k := range r.ents {
			if len(r.ents[k]) != 0 {
				t.Fatalf("%d entities of kind %v left", len(r.ents[k]), kind(k))
			}
		}
	})
}
