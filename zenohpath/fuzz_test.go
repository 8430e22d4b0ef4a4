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
