package fleet

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/internal/interop"
	"github.com/picobridge/picobridge/zenohpath"
	"github.com/picobridge/picobridge/zenohpath/transport"
)

const (
	// nominalLease is the lease both routers announce in the partition test: a silent cut
	// is noticed within it (zenohd's is 10 s; 3 s keeps the test short, and a process the
	// host stalls for up to 2.25 s keeps its links).
	nominalLease = 3 * time.Second
	// connectRetryMax is the longest wait between two dials of Router.Connect (server.go:
	// from 100 ms doubling to 5 s, reset after a dial that succeeded).
	connectRetryMax = 5 * time.Second

	partitionDevices = 16  // devices per router
	partitionRateHz  = 100 // the publisher's samples per second
	partitionMaxSeq  = 8192
)

// partitionTimes are the durations of the partition test: the nominal ones scaled by
// PICOBRIDGE_TIMESCALE, since a process the host does not run for a lease loses its
// sessions however healthy the link.
type partitionTimes struct {
	lease time.Duration // both routers'
	cut   time.Duration // the link stays cut longer than the lease: both ends give it up
	// slack is the time, on top of what the lease and the retry schedule give, that a
	// handshake, the link-state exchange and the declarations may take on a loaded host
	// under -race (measured: under 10 ms on an idle one).
	slack time.Duration
}

func partitionTiming() partitionTimes {
	lease := interop.Scale(nominalLease)
	return partitionTimes{lease: lease, cut: lease + interop.Scale(time.Second), slack: interop.Scale(time.Second)}
}

// TestPartitionHealInProcess (issue 29 item 3, the small scale of Partition): two Go
// routers in a mesh, R2 dialling R1 as a router through a cut proxy, 16 raw device
// sessions on each subscribing to the fan key (and holding a liveliness token), and a
// publisher on R1 pushing numbered samples at 100 Hz. The R1–R2 link is cut for 4 s
// (lease 3 s), then healed. Two cuts: "reset" closes the forwarded connections (both ends
// notice at once), "silent" drops every byte and passes no close (each end notices when
// its lease expires). Exact counts:
//
//   - side A (R1's devices) receives every sample exactly once, before, during and after
//     the cut;
//   - side B (R2's devices) receives every sample before the cut and every sample from
//     the first one after the heal to the end, each once, nothing in between: one gap per
//     device, the same for all 16;
//   - during the cut each router forgets the other's subscription and tokens and the link
//     (failover), for the silent cut within the lease;
//   - after the heal each router holds exactly one router face and the other's
//     subscriptions once (one subscriber for the other's 16, aggregated as the mesh
//     announces them, and its 16 tokens), and every B device receives again within
//     min(cut, 5 s) + 1 s: R2 redials after a wait that doubles from 100 ms, so the wait
//     in progress at the heal is at most the time since it lost the link (the cut), and
//     at most 5 s;
//   - no loop: picobridge_router_dropped_total{reason="loop"} (and "unknown_router") stay 0
//     on both routers, R2 routes no sample back to R1, and R1 routes each sample once over
//     the healed link.
//
// The durations scale with PICOBRIDGE_TIMESCALE, and the bounds count only the time the
// process ran (stallMonitor measures the host's stalls and poll leaves them out). A host
// that does not run this process for longer than lease − lease/4 (2.25 s) still expires
// the healthy link and fails the test; the failure then prints the longest stall.
func TestPartitionHealInProcess(t *testing.T) {
	for _, silent := range []bool{false, true} {
		name := map[bool]string{false: "reset", true: "silent"}[silent]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			testPartitionHeal(t, silent)
		})
	}
}

// meshNode is one in-process router of the partition test.
type meshNode struct {
	r    *zenohpath.Router
	addr string // host:port it listens on
	reg  *prometheus.Registry
}

// startMeshRouter starts a router that announces itself as a router and dials as one
// (a mesh node, zenohpath/mesh.go) with lease, on a free loopback port. Its log is
// printed if the test fails.
func startMeshRouter(t *testing.T, name string, lease time.Duration) *meshNode {
	t.Helper()
	reg := prometheus.NewRegistry()
	m, err := zenohpath.NewMetrics(reg)
	require.NoError(t, err)
	logs := &syncBuf{}
	r := zenohpath.NewRouter(zenohpath.RouterConfig{
		Logger:       slog.New(slog.NewTextHandler(logs, nil)).With("router", name),
		Metrics:      m,
		DialAsRouter: true,
		Transport:    transport.Config{Lease: lease},
	})
	t.Cleanup(func() {
		_ = r.Close()
		if t.Failed() {
			logs.mu.Lock()
			t.Logf("%s (%s) log:\n%s", name, r.ZID(), logs.b.String())
			logs.mu.Unlock()
		}
	})
	ln, err := r.Listen(context.Background(), "tcp/127.0.0.1:0")
	require.NoError(t, err)
	return &meshNode{r: r, addr: ln.Addr().String(), reg: reg}
}

// dropped is the router's picobridge_router_dropped_total by reason.
func (n *meshNode) dropped(t *testing.T) map[string]float64 {
	t.Helper()
	mfs, err := n.reg.Gather()
	require.NoError(t, err)
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "picobridge_router_dropped_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "reason" {
					out[l.GetValue()] += m.GetCounter().GetValue()
				}
			}
		}
	}
	return out
}

// linkPushes is the number of samples the router queued to its router face (the mesh
// link; FaceInfo.PushesSent), -1 without exactly one.
func (n *meshNode) linkPushes() int64 {
	var got []int64
	for _, f := range n.r.Faces() {
		if f.WhatAmI == "router" {
			got = append(got, f.PushesSent)
		}
	}
	if len(got) != 1 {
		return -1
	}
	return got[0]
}

// meshTable sums up a router's route table.
type meshTable struct {
	Devices int // client faces with exactly one subscriber and one token
	Bare    int // client faces without entities (the publisher)
	Links   int // router faces (the mesh link; what it brings is held by the mesh, below)
	Other   int // any other face
	// Every subscriber and liveliness token, those learnt from the other router included.
	Subs, Toks int
	Mesh       []string // routers reachable over the link-state graph
}

func tableOf(r *zenohpath.Router) meshTable {
	st := r.Status()
	tb := meshTable{Subs: st.Subscribers, Toks: st.Tokens, Mesh: r.MeshRouters()}
	for _, f := range st.Faces {
		none := f.Subscribers+f.Tokens+f.Queryables == 0
		switch {
		case f.WhatAmI == "router" && none:
			tb.Links++
		case f.WhatAmI == "client" && f.Subscribers == 1 && f.Tokens == 1 && f.Queryables == 0:
			tb.Devices++
		case f.WhatAmI == "client" && none:
			tb.Bare++
		default:
			tb.Other++
		}
	}
	return tb
}

// waitTable polls r's table every 5 ms until it is want, and returns how long that took
// (wall clock); once the process ran for longer than within it fails showing the
// difference.
func (m *stallMonitor) waitTable(t *testing.T, what string, r *zenohpath.Router, want meshTable, within time.Duration) time.Duration {
	t.Helper()
	var got meshTable
	d, ok := m.poll(within, func() bool {
		got = tableOf(r)
		return fmt.Sprint(got) == fmt.Sprint(want)
	})
	if !ok {
		require.Equal(t, want, got, "%s: route table after the process ran %v (wall clock %v)", what, within, d.Round(time.Millisecond))
	}
	return d
}

// hasSeq reports whether session i of g received sample seq.
func hasSeq(g *loadgen, i int, seq uint32) bool {
	return g.seen[i][seq/64].Load()&(1<<(seq%64)) != 0
}

// allFrom reports whether every session of g received a sample in [from, to).
func allFrom(g *loadgen, from, to uint32) bool {
	for i := range g.n {
		found := false
		for q := from; q < to && !found; q++ {
			found = hasSeq(g, i, q)
		}
		if !found {
			return false
		}
	}
	return true
}

// waitAll polls every 5 ms until cond holds and returns how long that took (wall clock),
// or fails once the process ran for longer than within.
func (m *stallMonitor) waitAll(t *testing.T, what string, within time.Duration, cond func() bool) time.Duration {
	t.Helper()
	d, ok := m.poll(within, cond)
	if !ok {
		t.Fatalf("%s: not within %v of running (%v wall clock, the rest stalled)", what, within, d.Round(time.Millisecond))
	}
	return d
}

// seqRuns lists the maximal runs [from, to) of the samples below end that session i of g
// received.
func seqRuns(g *loadgen, i int, end uint32) [][2]uint32 {
	var out [][2]uint32
	for q := uint32(0); q < end; q++ {
		if !hasSeq(g, i, q) {
			continue
		}
		if n := len(out); n > 0 && out[n-1][1] == q {
			out[n-1][1] = q + 1
		} else {
			out = append(out, [2]uint32{q, q + 1})
		}
	}
	return out
}

func testPartitionHeal(t *testing.T, silent bool) {
	const n = partitionDevices
	tm := partitionTiming()
	stalls := startStallMonitor(t)
	r1 := startMeshRouter(t, "R1", tm.lease)
	px, err := newCutProxy(r1.addr)
	require.NoError(t, err)
	t.Cleanup(px.close)
	r2 := startMeshRouter(t, "R2", tm.lease)
	require.NoError(t, r2.r.Connect(context.Background(), "tcp/"+px.addr, true))
	z1, z2 := r1.r.ZID().String(), r2.r.ZID().String()
	// linked: n devices, the other router's n devices known as one subscription (the mesh
	// announces one per key and source router) and n tokens, one router face.
	linked := func(bare int, other string) meshTable {
		return meshTable{Devices: n, Bare: bare, Links: 1, Subs: n + 1, Toks: 2 * n, Mesh: []string{other}}
	}
	// apart: the link and all the other router brought are gone.
	apart := func(bare int) meshTable {
		return meshTable{Devices: n, Bare: bare, Subs: n, Toks: n, Mesh: []string{}}
	}
	long := interop.Scale(10 * time.Second) // for what has no bound of its own

	// The devices' sessions are not what the cut tests: zenoh-pico's lease (10 s), so that
	// a loaded host does not expire them.
	ga, _ := startTestLoadgenWith(t, r1.addr, n, false, 10*time.Second, partitionMaxSeq)
	defer ga.leave()
	gb, _ := startTestLoadgenWith(t, r2.addr, n, false, 10*time.Second, partitionMaxSeq)
	defer gb.leave()
	stalls.waitTable(t, "R1 linked", r1.r, linked(0, z2), long)
	stalls.waitTable(t, "R2 linked", r2.r, linked(0, z1), long)

	pctx, cancel := context.WithCancel(context.Background())
	// The publisher's writes wait as long as it takes: a stalled host loses no sample at
	// the source.
	pub := &critPub{addr: r1.addr, size: 64, batch: 2048, timeout: long, done: make(chan struct{})}
	go pub.run(pctx, partitionRateHz)
	stopped := false
	stopPub := func() {
		if !stopped {
			stopped = true
			cancel()
			pub.stop()
		}
	}
	defer stopPub()
	stalls.waitTable(t, "R1 with the publisher", r1.r, linked(1, z2), long)

	// Before the cut: half a second of samples reached both sides (checked sample by
	// sample at the end).
	sPre := pub.next() + partitionRateHz/2
	stalls.waitAll(t, "both sides received the samples before the cut", long, func() bool {
		return allFrom(ga, sPre-1, pub.next()) && allFrom(gb, sPre-1, pub.next())
	})
	tCut := time.Now()
	if silent {
		px.blackhole()
	} else {
		px.cut()
	}
	sCut := pub.next() // published after the cut: cannot reach B before the heal

	// Failover: each router gives the link up and forgets what the other brought; the
	// silent cut only by lease expiry: after at least lease − lease/4 (the last keep-alive
	// came at most lease/4 before the cut) and at most the lease.
	failBound := tm.slack
	if silent {
		failBound += tm.lease
	}
	stalls.waitTable(t, "R1 apart", r1.r, apart(1), failBound)
	fail1 := time.Since(tCut)
	stalls.waitTable(t, "R2 apart", r2.r, apart(0), failBound)
	fail2 := time.Since(tCut)
	if silent {
		require.GreaterOrEqual(t, min(fail1, fail2), tm.lease/2, "a silent cut is noticed by lease expiry only")
	}
	time.Sleep(time.Until(tCut.Add(tm.cut)))

	// Heal: R2 redials within its retry wait in progress, at most min(cut, 5 s).
	sHeal := pub.next()
	tHeal := time.Now()
	cutFor := tHeal.Sub(tCut)
	require.NoError(t, px.heal())
	healBound := min(cutFor, connectRetryMax) + tm.slack
	heal := stalls.waitAll(t, "every B device receives again after the heal", healBound, func() bool {
		return allFrom(gb, sHeal, pub.next())
	})
	stalls.waitTable(t, "R1 linked again", r1.r, linked(1, z2), tm.slack)
	stalls.waitTable(t, "R2 linked again", r2.r, linked(0, z1), tm.slack)

	// One more second of samples over the healed link, then the last one reaches both sides.
	time.Sleep(time.Second)
	stopPub()
	sEnd := pub.next()
	require.Zero(t, pub.fails.Load(), "every tick's sample was written to R1")
	require.Less(t, sEnd, uint32(partitionMaxSeq))
	stalls.waitAll(t, "both sides received the last sample", long, func() bool {
		return allFrom(ga, sEnd-1, sEnd) && allFrom(gb, sEnd-1, sEnd)
	})
	time.Sleep(100 * time.Millisecond) // a duplicate or a looped copy would arrive meanwhile

	// Side A: every sample, once.
	for i := range n {
		require.Equal(t, [][2]uint32{{0, sEnd}}, seqRuns(ga, i, sEnd), "A device %d", i)
	}
	require.Zero(t, ga.dups.Load(), "A: duplicates")
	require.EqualValues(t, n*int(sEnd), ga.deliv.Load(), "A: deliveries")

	// Side B: everything before the cut and from the first sample after the heal to the
	// end, once; one gap, the same for every device (R2 sends each sample to all or none).
	b0 := seqRuns(gb, 0, sEnd)
	require.Len(t, b0, 2, "B device 0: one gap: %v", b0)
	x, y := b0[0][1], b0[1][0]
	require.Equal(t, [][2]uint32{{0, x}, {y, sEnd}}, b0)
	require.GreaterOrEqual(t, x, sPre, "B received everything before the cut")
	require.LessOrEqual(t, x, sCut, "nothing published after the cut crossed it")
	for i := 1; i < n; i++ {
		require.Equal(t, b0, seqRuns(gb, i, sEnd), "B device %d", i)
	}
	require.Zero(t, gb.dups.Load(), "B: duplicates")
	require.EqualValues(t, n*int(x+sEnd-y), gb.deliv.Load(), "B: deliveries")
	require.Zero(t, ga.lost.Load()+gb.lost.Load(), "no device session closed")

	// No loop: nothing dropped as looped or from an unknown router, nothing routed back
	// from R2 towards the publisher, each sample routed once over the healed link.
	for name, node := range map[string]*meshNode{"R1": r1, "R2": r2} {
		d := node.dropped(t)
		require.Zero(t, d["loop"], "%s: loop drops (%v)", name, d)
		require.Zero(t, d["unknown_router"], "%s: declarations from an unknown router (%v)", name, d)
	}
	require.EqualValues(t, 0, r2.linkPushes(), "R2 routed no sample to R1")
	require.EqualValues(t, sEnd-y, r1.linkPushes(), "R1 routed each sample after the heal once to R2")
	stalls.waitTable(t, "R1 at the end", r1.r, linked(0, z2), tm.slack) // the publisher left
	stalls.waitTable(t, "R2 at the end", r2.r, linked(0, z1), 0)

	t.Logf("cut %v (lease %v): failover R1 %v, R2 %v; heal → every B device receiving: %v (bound %v); "+
		"B missed samples [%d, %d) (cut at %d, heal at %d, %d Hz), A missed none; %d samples; R1 drops %v, R2 drops %v; longest stall of the process %v (%v in all)",
		cutFor.Round(time.Millisecond), tm.lease, fail1.Round(time.Millisecond), fail2.Round(time.Millisecond),
		heal.Round(time.Millisecond), healBound.Round(time.Millisecond), x, y, sCut, sHeal, partitionRateHz, sEnd,
		nonZero(r1.dropped(t)), nonZero(r2.dropped(t)), stalls.longest().Round(time.Millisecond),
		time.Duration(stalls.total.Load()).Round(time.Millisecond))
}

// stallMonitor measures how long the host kept this process from running: a goroutine
// sleeps 10 ms at a time and records by how much it overslept, the longest and (above
// 20 ms) the sum. The partition test's bounds are on what the routers do, so its waits
// do not count the stalls (poll); a stall longer than lease − lease/4 still lets a
// healthy link expire, which a failure of the test then names.
type stallMonitor struct {
	max   atomic.Int64 // ns
	total atomic.Int64 // ns, oversleeps above stallFloor
	stop  chan struct{}
	done  chan struct{}
}

// stallFloor: an oversleep up to this is scheduling noise, not a stall.
const stallFloor = 20 * time.Millisecond

func startStallMonitor(t *testing.T) *stallMonitor {
	m := &stallMonitor{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(m.done)
		for {
			t0 := time.Now()
			select {
			case <-m.stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
			d := time.Since(t0) - 10*time.Millisecond
			if int64(d) > m.max.Load() {
				m.max.Store(int64(d))
			}
			if d > stallFloor {
				m.total.Add(int64(d))
			}
		}
	}()
	t.Cleanup(func() {
		close(m.stop)
		<-m.done
		if t.Failed() {
			t.Logf("longest stall of this process: %v (leases expire on a stall over lease − lease/4; PICOBRIDGE_TIMESCALE scales them)",
				m.longest().Round(time.Millisecond))
		}
	})
	return m
}

func (m *stallMonitor) longest() time.Duration { return time.Duration(m.max.Load()) }

// poll calls cond every 5 ms until it holds (true) or the process ran for longer than
// within (false: the wall clock minus the stalls since the start); it returns the wall
// clock time it took. Before giving up it lets the monitor record a stall it has not
// woken from yet.
func (m *stallMonitor) poll(within time.Duration, cond func() bool) (time.Duration, bool) {
	t0, s0 := time.Now(), m.total.Load()
	ran := func() time.Duration { return time.Since(t0) - time.Duration(m.total.Load()-s0) }
	for {
		if cond() {
			return time.Since(t0), true
		}
		if ran() > within {
			time.Sleep(2 * stallFloor)
			if ran() > within && !cond() {
				return time.Since(t0), false
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// nonZero keeps the non-zero counts, in a stable order for printing.
func nonZero(m map[string]float64) []string {
	var out []string
	for k, v := range m {
		if v != 0 {
			out = append(out, fmt.Sprintf("%s=%g", k, v))
		}
	}
	slices.Sort(out)
	return out
}
