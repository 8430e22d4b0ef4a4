//go:build cgo && cyclonedds

package e2e

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/bridge"
	"github.com/picobridge/picobridge/bridge/server"
	"github.com/picobridge/picobridge/ddspath"
	"github.com/picobridge/picobridge/internal/interop"
	"github.com/picobridge/picobridge/sim/devsim"
	"github.com/picobridge/picobridge/zenohpath"
)

// fedLease is the lease the failover bound is measured against (the Rust
// routers' default, which the gateways keep too).
const fedLease = 10 * time.Second

// zpq is a sample that devsim and zpeer.py both read a sequence number
// from: "zpq1" + u64 LE (sim/devsim/payload.go). The gateways carry
// DDS payloads unchanged, so it serves as the raw CDR of the DDS topic.
func zpq(seq uint64) []byte {
	return binary.LittleEndian.AppendUint64([]byte("zpq1"), seq)
}

// seqLog records sequence numbers (a devsim subscriber's delivered
// samples) for exact counts.
type seqLog struct {
	mu   sync.Mutex
	seqs []uint64
	ring int // samples the device's ring refused (must stay 0)
}

func (l *seqLog) on(e devsim.SampleEvent) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e.Outcome != devsim.OutcomeDelivered {
		l.ring++
		return
	}
	if e.HasSeq {
		l.seqs = append(l.seqs, e.Seq)
	}
}

func (l *seqLog) get() []uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.seqs)
}

// pySeqs are the sequence numbers of a zpeer.py subscriber's samples.
func pySeqs(p *interop.Proc) []uint64 {
	var out []uint64
	for _, e := range p.Events() {
		if e.Ev == "sample" && e.Seq != nil {
			out = append(out, *e.Seq)
		}
	}
	return out
}

func inRange(seqs []uint64, lo, hi uint64) []uint64 {
	var out []uint64
	for _, s := range seqs {
		if s >= lo && s < hi {
			out = append(out, s)
		}
	}
	return out
}

func span(lo, n uint64) []uint64 {
	out := make([]uint64, n)
	for i := range out {
		out[i] = lo + uint64(i)
	}
	return out
}

// TestE2EFederationFailover: two gateways (in-process bridge/server, DDS in
// domains dA and dB, so that they never see each other over DDS) and two
// Rust routers R1, R2 in a square: each Rust router dials B, and A dials
// both as a router (zenoh.connect_as router), two equal-hop paths A–R1–B
// and A–R2–B. On B's side a DDS writer publishes rt/fed_scan; a devsim
// device on A and a Python client on one Rust router receive it. Devices on
// A publish fed_cmd; a DDS reader on B's domain receives it. A query and a
// liveliness token of B's cross the mesh to A. The Rust router on B's path
// to A is killed: the device receives again within lease + 1 s, and every
// count is exact (no duplicate, no loop) before and after.
func TestE2EFederationFailover(t *testing.T) { federationFailover(t, false) }

// TestE2EFederationHungRouter is TestE2EFederationFailover with the Rust
// router on B's path frozen (SIGSTOP) instead of killed: its TCP links stay
// open and silent, so A, B and the other Rust router find out only when its
// lease (10 s) expires; delivery resumes within lease + 1 s of the freeze.
func TestE2EFederationHungRouter(t *testing.T) { federationFailover(t, true) }

func federationFailover(t *testing.T, hang bool) {
	if testing.Short() {
		t.Skip("-short: starts Zenoh processes")
	}
	failure, failed := "kill", "killed"
	if hang {
		failure, failed = "freeze", "frozen"
	}
	interop.FindPython(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)      // after every other cleanup: the servers and sessions use ctx
	dA := 1 + rand.IntN(9) // 1..19 (docs/dds.md: other packages' tests use 20..219)
	dB := dA + 10
	var logs interop.SyncBuffer
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("gateway logs:\n%s", logs.String())
		}
	})
	startGW := func(name string, domain int, extra string) *server.Server {
		yaml := fmt.Sprintf(`zenoh:
  listen: [tcp/127.0.0.1:0]
%sdds:
  domain: %d
metrics:
  listen: 127.0.0.1:0
routes:
  critical: ["/fed_scan"]
devices:
  list:
    - {name: dev1, platform: generic, class: critical}
supervisor:             # a starved test machine must not suspend lanes
  degraded: {lag: 1s}
  emergency: {lag: 5s}
`, extra, domain)
		cfg, err := bridge.ParseConfig(name+".yaml", []byte(yaml))
		require.NoError(t, err)
		s, err := server.Start(ctx, server.Options{Config: cfg,
			Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo})).With("gw", name)})
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	start := time.Now()
	b := startGW("B", dB, "")
	rust := map[string]*interop.Proc{}
	var rustEPs []string
	epOf := map[string]string{} // zid → listen endpoint
	for range 2 {
		ep := interop.FreeEndpoint(t)
		p := interop.Start(t, "router", "--mode", "router", "--listen", ep, "--connect", b.Endpoints()[0], "--cfg", "adminspace/enabled=true")
		var ready struct {
			ZID string `json:"zid"`
		}
		require.NoError(t, p.WaitEvent("ready", interop.Scale(20*time.Second)).Decode(&ready))
		rust[ready.ZID] = p
		rustEPs = append(rustEPs, ep)
		epOf[ready.ZID] = ep
	}
	a := startGW("A", dA, fmt.Sprintf("  connect: [%s, %s]\n  connect_as: router\n", rustEPs[0], rustEPs[1]))
	aZID, bZID := a.Router().ZID().String(), b.Router().ZID().String()
	mesh := func(self string) []string {
		var out []string
		for _, z := range append([]string{aZID, bZID}, slices.Collect(mapsKeys(rust))...) {
			if z != self {
				out = append(out, z)
			}
		}
		slices.Sort(out)
		return out
	}
	waitFor(t, interop.Scale(30*time.Second), "A and B see the other three routers", func() bool {
		ra, rb := a.Router().MeshRouters(), b.Router().MeshRouters()
		slices.Sort(ra)
		slices.Sort(rb)
		return slices.Equal(ra, mesh(aZID)) && slices.Equal(rb, mesh(bZID))
	})
	hop := b.Router().MeshNextHop(aZID)
	require.Contains(t, rust, hop, "B reaches A through a Rust router")
	var surv string
	for z := range rust {
		if z != hop {
			surv = z
		}
	}
	t.Logf("mesh up after %v: B → %s → A (A's next hop to B: %s); the Python client is on %s", time.Since(start).Round(time.Millisecond), hop, a.Router().MeshNextHop(bZID), surv)

	// Receivers of rt/fed_scan: devsim dev1 on A, Python on the Rust
	// router that stays up.
	var dev1 seqLog
	d1, err := devsim.NewDevice(devsim.DeviceConfig{Name: "dev1", Platform: "generic",
		Subscriptions: []devsim.Subscription{{Key: "fed_scan"}}}, devsim.Options{Endpoint: a.Endpoints()[0], OnSample: dev1.on})
	require.NoError(t, err)
	require.NoError(t, d1.Start(ctx))
	t.Cleanup(d1.Stop)
	survEP := epOf[surv]
	py := interop.Start(t, "sub", "fed_scan", "--connect", survEP)
	py.WaitEvent("ready", interop.Scale(20*time.Second))

	// DDS on B's side: the writer of rt/fed_scan, the reader of rt/fed_cmd.
	p, err := ddspath.Open(ddspath.Config{DomainID: uint32(dB)})
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	w, err := p.NewWriter("rt/fed_scan", "std_msgs::msg::dds_::UInt64_", ddspath.ROSDefaultQoS())
	require.NoError(t, err)
	rd, err := p.NewReader("rt/fed_cmd", "std_msgs::msg::dds_::Header_", ddspath.ROSDefaultQoS())
	require.NoError(t, err)
	waitFor(t, interop.Scale(20*time.Second), "B's DDS reader and writer match ours", func() bool { return w.Matched() > 0 && rd.Matched() > 0 })
	write := func(seq uint64) { require.NoError(t, w.Write(zpq(seq), time.Time{})) }

	// Priming: markers until one reached both receivers (matching is not
	// delivery: declarations, trees and DDS matching settle separately).
	const marker = 1 << 40
	t.Cleanup(func() {
		if t.Failed() {
			for name, g := range map[string]*server.Server{"A": a, "B": b} {
				mfs, _ := g.Registry().Gather()
				for _, mf := range mfs {
					if strings.Contains(mf.GetName(), "routed") || strings.Contains(mf.GetName(), "forwarded") || strings.Contains(mf.GetName(), "router_dropped") {
						for _, m := range mf.GetMetric() {
							if v := m.GetCounter().GetValue(); v > 0 {
								t.Logf("%s %s %v %v", name, mf.GetName(), m.GetLabel(), v)
							}
						}
					}
				}
				t.Logf("%s faces %+v", name, g.Router().Faces())
			}
			if ss, err := zenohpath.Open(ctx, zenohpath.Config{Router: a.Router()}); err == nil {
				for _, sel := range []string{"@/*/router/route/successor/**", "@/*/router/linkstate/north"} {
					ch, _ := ss.Get(sel, nil)
					for rep := range ch {
						if smp, ok := rep.Ok(); ok {
							t.Logf("%s = %q", smp.KeyExpr(), smp.Payload())
						}
					}
				}
				_ = ss.Close()
			}
			t.Logf("A=%s B=%s; A's mesh %v, B's mesh %v", aZID, bZID, a.Router().MeshRouters(), b.Router().MeshRouters())
			t.Logf("at the failure: dev1 %d samples, Python %d; B's routes %+v; A's routes %+v", len(dev1.get()), len(pySeqs(py)), b.Routez().Routes, a.Routez().Routes)
		}
	})
	waitFor(t, interop.Scale(30*time.Second), "a marker at dev1 and at the Python client", func() bool {
		write(marker)
		time.Sleep(100 * time.Millisecond)
		return len(dev1.get()) > 0 && len(pySeqs(py)) > 0
	})
	settle := func(what string, n func() int) {
		t.Helper()
		last, since := n(), time.Now()
		waitFor(t, interop.Scale(20*time.Second), what+" quiet for 500 ms", func() bool {
			if c := n(); c != last {
				last, since = c, time.Now()
			}
			return time.Since(since) > 500*time.Millisecond
		})
	}
	settle("markers", func() int { return len(dev1.get()) + len(pySeqs(py)) })
	t.Logf("primed after %v", time.Since(start).Round(time.Millisecond))

	// DDS isolation: A never discovered B's DDS writer (A's only /fed_scan
	// route is toward its own DDS domain, made for B's MP liveliness token
	// as zenoh-bridge-ros2dds does: docs/ros2dds.md).
	for _, r := range a.Routez().Routes {
		if r.Topic == "/fed_scan" {
			require.Equal(t, "zenoh_to_dds", r.Direction, "gateway A bridged /fed_scan from DDS: the domains are not isolated")
		}
	}

	// Phase 1: both paths up, 50 samples at 20 Hz.
	const n = 50
	burst := func(lo uint64) {
		for i := range uint64(n) {
			write(lo + i)
			time.Sleep(50 * time.Millisecond)
		}
	}
	burst(0)
	waitFor(t, interop.Scale(15*time.Second), "phase 1 at dev1 and Python", func() bool {
		return len(inRange(dev1.get(), 0, n)) >= n && len(inRange(pySeqs(py), 0, n)) >= n
	})
	require.Equal(t, span(0, n), inRange(dev1.get(), 0, n), "dev1: phase 1 exactly once, in order")
	require.Equal(t, span(0, n), inRange(pySeqs(py), 0, n), "Python: phase 1 exactly once, in order")

	// A device publication on A reaches the DDS reader on B's side; a
	// query and a liveliness token of B's reach A and the Python side.
	devToDDS(t, ctx, a, rd, "pub1")
	sb, err := zenohpath.Open(ctx, zenohpath.Config{Router: b.Router()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = sb.Close() })
	_, err = sb.DeclareQueryable("fed/q", func(q *zenohpath.Query) { _ = q.Reply("fed/q", []byte("from-b"), nil) }, nil)
	require.NoError(t, err)
	_, err = sb.Liveliness().DeclareToken("fed/alive/b")
	require.NoError(t, err)
	sa, err := zenohpath.Open(ctx, zenohpath.Config{Router: a.Router()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = sa.Close() })
	queryAndToken(t, sa, survEP)

	// Kill (or freeze) the Rust router on B's path to A.
	killed := time.Now()
	if hang {
		rust[hop].Freeze()
	} else {
		rust[hop].Kill()
	}
	var resumed time.Duration
	seq := uint64(1000)
	deadline := time.Now().Add(interop.Scale(fedLease + time.Second + 10*time.Second))
	for resumed == 0 {
		require.False(t, time.Now().After(deadline), "delivery to dev1 did not resume")
		write(seq)
		seq++
		time.Sleep(50 * time.Millisecond)
		if len(inRange(dev1.get(), 1000, seq)) > 0 {
			resumed = time.Since(killed)
		}
	}
	waitFor(t, interop.Scale(20*time.Second), "A and B forget the "+failed+" router", func() bool {
		return len(a.Router().MeshRouters()) == 2 && len(b.Router().MeshRouters()) == 2 && a.Router().MeshNextHop(bZID) == surv
	})
	settle("failover samples", func() int { return len(dev1.get()) + len(pySeqs(py)) })
	gotF := len(inRange(dev1.get(), 1000, seq))
	pyF := len(inRange(pySeqs(py), 1000, seq))
	t.Logf("failover: dev1 received again %v after the %s (lease %v); during failover dev1 got %d/%d, Python %d/%d",
		resumed.Round(time.Millisecond), failure, fedLease, gotF, seq-1000, pyF, seq-1000)
	require.Less(t, resumed, interop.Scale(fedLease+time.Second), "delivery resumes within lease + 1 s")

	// Phase 3: exact again, through the surviving router.
	burst(5000)
	waitFor(t, interop.Scale(15*time.Second), "phase 3 at dev1 and Python", func() bool {
		return len(inRange(dev1.get(), 5000, 5000+n)) >= n && len(inRange(pySeqs(py), 5000, 5000+n)) >= n
	})
	time.Sleep(interop.Scale(time.Second)) // a duplicate or a loop would show now
	require.Equal(t, span(5000, n), inRange(dev1.get(), 5000, 5000+n), "dev1: phase 3 exactly once, in order")
	require.Equal(t, span(5000, n), inRange(pySeqs(py), 5000, 5000+n), "Python: phase 3 exactly once, in order")
	for name, seqs := range map[string][]uint64{"dev1": inRange(dev1.get(), 0, marker), "Python": inRange(pySeqs(py), 0, marker)} {
		seen := map[uint64]int{}
		for _, s := range seqs {
			seen[s]++
			require.Equal(t, 1, seen[s], "%s: sample %d received twice", name, s)
		}
		require.Len(t, seqs, 2*n+len(inRange(seqs, 1000, seq)), "%s: nothing outside the bursts", name)
	}
	require.Zero(t, dev1.ring, "dev1's ring refused samples")
	devToDDS(t, ctx, a, rd, "pub2")
	queryAndToken(t, sa, survEP)
	t.Logf("counts: phase 1 %d/%d at dev1 and Python, phase 3 %d/%d, device → DDS exact twice; total %v",
		n, n, n, n, time.Since(start).Round(time.Millisecond))
}

func mapsKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// devToDDS: a devsim device on A publishes 40 samples on fed_cmd (after a
// primer device's samples reached the DDS reader, once); the DDS reader on
// B's side receives exactly those the device sent, each once.
func devToDDS(t *testing.T, ctx context.Context, a *server.Server, rd *ddspath.Reader, name string) {
	t.Helper()
	primer, err := devsim.NewDevice(devsim.DeviceConfig{Name: name + "-primer", Platform: "generic",
		Publications: []devsim.Publication{{Key: "fed_cmd", RateHz: 20}}}, devsim.Options{Endpoint: a.Endpoints()[0]})
	require.NoError(t, err)
	require.NoError(t, primer.Start(ctx))
	deadline := time.After(interop.Scale(30 * time.Second))
	for primed := false; !primed; {
		select {
		case <-rd.C():
			primed = true
		case <-deadline:
			t.Fatalf("%s: no primer sample reached the DDS reader", name)
		}
	}
	primer.Stop()
	for quiet := false; !quiet; {
		select {
		case <-rd.C():
		case <-time.After(500 * time.Millisecond):
			quiet = true
		}
	}
	const count = 40
	d, err := devsim.NewDevice(devsim.DeviceConfig{Name: name, Platform: "generic",
		Publications: []devsim.Publication{{Key: "fed_cmd", RateHz: 20, Count: count}}}, devsim.Options{Endpoint: a.Endpoints()[0]})
	require.NoError(t, err)
	require.NoError(t, d.Start(ctx))
	defer d.Stop()
	stamps := map[string]bool{}
	pub := func() devsim.PubStats { return d.Stats().Publications["fed_cmd"] }
	deadline = time.After(interop.Scale(20 * time.Second))
	for done := false; !done; {
		select {
		case smp := <-rd.C():
			// frame_id = the device name, NUL-terminated (not the primer's "<name>-primer")
			require.True(t, bytes.Contains(smp.CDR, append([]byte(name), 0)), "%s: a sample from another device: %x", name, smp.CDR)
			st := string(smp.CDR[4:12]) // std_msgs/Header stamp after the encapsulation
			require.False(t, stamps[st], "%s: the same sample twice", name)
			stamps[st] = true
		case <-time.After(100 * time.Millisecond):
			ps := pub()
			done = ps.Attempts == count && uint64(len(stamps)) == ps.Sent
		case <-deadline:
			t.Fatalf("%s: DDS reader got %d samples, device stats %+v", name, len(stamps), pub())
		}
	}
	ps := pub()
	select { // nothing more (a duplicate or a loop)
	case smp := <-rd.C():
		t.Fatalf("%s: extra sample at the DDS reader: %x", name, smp.CDR)
	case <-time.After(interop.Scale(time.Second)):
	}
	require.Positive(t, ps.Sent)
	require.Equal(t, uint64(count), ps.Sent+ps.Filtered, "%s: %+v", name, ps)
	require.Zero(t, ps.TxDrops)
	t.Logf("device → DDS (%s): %d sent (%d filtered before the route opened), %d received at the DDS reader", name, ps.Sent, ps.Filtered, len(stamps))
}

// queryAndToken: a Go session on A gets B's queryable (one reply) and
// B's token (liveliness get and a history subscriber); the Python client
// on the surviving Rust router gets the queryable too.
func queryAndToken(t *testing.T, sa *zenohpath.Session, survEP string) {
	t.Helper()
	var replies []string
	waitFor(t, interop.Scale(20*time.Second), "B's queryable answers A", func() bool {
		ch, err := sa.Get("fed/q", nil)
		require.NoError(t, err)
		replies = replies[:0]
		for r := range ch {
			s, ok := r.Ok()
			require.True(t, ok)
			replies = append(replies, s.KeyExpr()+"="+string(s.Payload()))
		}
		return len(replies) > 0
	})
	require.Equal(t, []string{"fed/q=from-b"}, replies, "one reply, no duplicate")
	ch, err := sa.Liveliness().Get("fed/alive/**", nil)
	require.NoError(t, err)
	var toks []string
	for r := range ch {
		s, ok := r.Ok()
		require.True(t, ok)
		toks = append(toks, s.KeyExpr())
	}
	require.Equal(t, []string{"fed/alive/b"}, toks)
	g := interop.Start(t, "get", "fed/q", "--connect", survEP, "--timeout", interop.Seconds(5*time.Second))
	g.WaitEvent("done", interop.Scale(20*time.Second))
	var got []string
	for _, e := range g.Events() {
		if e.Ev == "reply" && e.OK && e.Payload != nil {
			got = append(got, e.Key+"="+*e.Payload)
		}
	}
	require.Equal(t, []string{"fed/q=from-b"}, got, "Python get on the Rust router")
}
