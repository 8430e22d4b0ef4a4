package zenohpath

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/zenohpath/transport"
	"github.com/picobridge/picobridge/zenohpath/wire"
)

// TestForwardAllocs pins the steady PUSH forward path at zero allocations
// per message (issue 25 item 2): a batch (one reliable FRAME, one PUSH with
// an 8 B PUT, BLOCK) is decoded by a wire.Parser as the transport's read
// loop does, routed by Router.handle through the cached route, encoded once
// into a pooled buffer and queued on every subscriber's transport session
// (SendShared), whose writers copy it into their batches and write it to
// loopback TCP clients. testing.AllocsPerRun counts the allocations of every
// goroutine of the process, so the writers' and the clients' reads are held
// to it too. The wire expressions are those real publishers send: the full
// key at scope 0 (Rust, the Go client), a key id the publisher declared with
// an empty suffix (zenoh-pico's z_declare_publisher), and a key id plus a
// suffix.
func TestForwardAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's sync.Pool drops pooled objects at random: allocations are not steady under -race")
	}
	const runs = 1000
	qos := wire.NetExt{QoS: wire.NewQoS(wire.PriorityData, wire.CongestionBlock, false), HasQoS: true}
	put := &wire.Put{Payload: make([]byte, forwardPayload)}
	cases := []struct {
		name string
		decl string // key the publisher declares as id 7 ("" none)
		we   wire.WireExpr
	}{
		{"scope0", "", wireKey("bench/fwd")},
		{"keyid", "bench/fwd", wire.WireExpr{Scope: 7, Mapping: wire.MappingSender}},
		{"keyid+suffix", "bench", wire.WireExpr{Scope: 7, Suffix: "/fwd", Mapping: wire.MappingSender}},
	}
	for _, n := range []int{1, 3} {
		fb := newFwdBench(t, n)
		for _, c := range cases {
			t.Run(c.name+"/N="+itoa(uint64(n)), func(t *testing.T) {
				pub, ok := fb.r.addFace(nopLink{}, RandomZID(), wire.WhatAmIClient, false)
				require.True(t, ok)
				t.Cleanup(func() { fb.r.removeFace(pub) })
				if c.decl != "" {
					fb.r.handle(pub, &wire.Declare{Body: &wire.DeclareKeyExpr{ID: 7, WireExpr: wireKey(c.decl)}})
				}
				batch := fwdBatch(&wire.Push{WireExpr: c.we, NetExt: qos, Body: put})
				var p wire.Parser
				walk := func(_ wire.TransportMessage, m wire.NetworkMessage) error {
					if m != nil {
						fb.r.handle(pub, m)
					}
					return nil
				}
				// Each run forwards one PUSH and waits until every
				// subscriber client received it: the steady state, where
				// the writers keep up and a few pooled encodings circulate.
				// (A burst that queues more messages than the pools hold
				// allocates until they have grown to its depth.)
				stall := time.NewTimer(time.Hour)
				run := func() {
					want := fb.delivered.Load() + int64(n)
					if err := p.WalkBatch(batch, walk); err != nil {
						t.Fatal(err)
					}
					stall.Reset(30 * time.Second)
					for fb.delivered.Load() < want {
						select {
						case <-fb.notify:
						case <-stall.C:
							t.Fatalf("PUSH not delivered to all %d subscribers in 30 s", n)
						}
					}
					stall.Stop()
				}
				for range 100 { // route cache, interned key, pools
					run()
				}
				allocs := testing.AllocsPerRun(runs, run)
				require.Zero(t, allocs, "allocations per forwarded PUSH (decode, route, encode, enqueue, write)")
			})
		}
	}
}

// TestEncodeAllocs: the fan-out encoding (shared, transport.Encoded) comes
// from pools and goes back to them once released.
func TestEncodeAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's sync.Pool drops pooled objects at random")
	}
	m := fwdPush()
	allocs := testing.AllocsPerRun(1000, func() {
		sm := sharedPush(*m)
		_ = sm.bytes()
		sm.release()
	})
	require.Zero(t, allocs)
	_ = transport.Encode // the pool behind shared.encoded
}

// routerSessions returns the transport sessions of the router's faces.
func routerSessions(r *Router) []*transport.Session {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*transport.Session
	for _, f := range r.faces {
		if l, ok := f.link.(sessionLink); ok {
			out = append(out, l.s)
		}
	}
	return out
}

// inlineBatches sums the router's inline writes (transport.Stats).
func inlineBatches(r *Router) uint64 {
	var n uint64
	for _, s := range routerSessions(r) {
		n += s.Stats().InlineBatches
	}
	return n
}

// TestForwardInlineOneFace (issue 25 item 3): a PUSH routed to a single
// idle face is written by the router's read goroutine itself (one inline
// batch, no writer goroutine woken); one routed to several faces is left to
// their writer goroutines (no inline batch), as a fan-out must be.
func TestForwardInlineOneFace(t *testing.T) {
	for _, n := range []int{1, 3} {
		t.Run("N="+itoa(uint64(n)), func(t *testing.T) {
			fb := newFwdBench(t, n)
			pub, err := transport.Dial(context.Background(), fb.ln.Endpoint(), transport.Config{ZID: RandomZID(), WhatAmI: wire.WhatAmIClient}, transport.HandlerFuncs{})
			require.NoError(t, err)
			t.Cleanup(func() { _ = pub.Close(transport.ReasonShutdown) })
			m := fwdPush()
			m.QoS = wire.NewQoS(wire.PriorityData, wire.CongestionBlock, true)
			o := transport.SendOptions{Reliable: true, Express: true, Priority: wire.PriorityData}
			const k = 5
			before := inlineBatches(fb.r)
			for i := range k {
				time.Sleep(5 * time.Millisecond) // every writer idle, past inlineMinGap
				require.NoError(t, pub.Send(m, o))
				fb.wait(t, int64(n*(i+1)))
			}
			got := inlineBatches(fb.r) - before
			if n == 1 {
				require.Equal(t, uint64(k), got, "every forward to the one idle face written inline")
			} else {
				require.Zero(t, got, "a fan-out to several faces is written by their writers")
			}
		})
	}
}
