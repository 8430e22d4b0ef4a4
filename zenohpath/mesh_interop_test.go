package zenohpath_test

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/internal/interop"
	"github.com/picobridge/picobridge/zenohpath"
	"github.com/picobridge/picobridge/zenohpath/routing"
	"github.com/picobridge/picobridge/zenohpath/wire"
)

// startMeshRouter runs a Go router (picobridge router) listening on
// loopback; with dial, it also dials that endpoint as a router.
func startMeshRouter(t *testing.T, dial string) (*zenohpath.Router, string) {
	t.Helper()
	r := zenohpath.NewRouter(zenohpath.RouterConfig{DialAsRouter: true})
	t.Cleanup(func() { require.NoError(t, r.Close()) })
	ln, err := r.Listen(context.Background(), "tcp/127.0.0.1:0")
	require.NoError(t, err)
	if dial != "" {
		ctx, cancel := context.WithTimeout(context.Background(), interop.Scale(10*time.Second))
		defer cancel()
		require.NoError(t, r.Connect(ctx, dial, true))
	}
	return r, ln.Endpoint()
}

// readyZID waits for p's ready event and returns its zid.
func readyZID(t *testing.T, p *interop.Proc) string {
	t.Helper()
	var ready struct {
		ZID string `json:"zid"`
	}
	require.NoError(t, p.WaitEvent("ready", 20*time.Second).Decode(&ready))
	require.NotEmpty(t, ready.ZID)
	return ready.ZID
}

// meshSuite: clients on either router see each other's publications
// (exact counts, in order, no duplicates), queries and tokens.
func meshSuite(t *testing.T, goEP, rustEP string) {
	for _, dir := range []struct{ name, subEP, pubEP string }{
		{"rust_to_go", goEP, rustEP},
		{"go_to_rust", rustEP, goEP},
	} {
		t.Run("pubsub_"+dir.name, func(t *testing.T) {
			key := "mesh/ps/" + dir.name
			n := 100
			sub := interop.StartReady(t, "sub", key, "--connect", dir.subEP, "--count", strconv.Itoa(n), "--quiet", "--timeout", interop.Seconds(30*time.Second))
			pub := interop.Start(t, "pub", key, "--connect", dir.pubEP, "--count", strconv.Itoa(n), "--wait-matching", "--timeout", interop.Seconds(20*time.Second))
			pub.WaitEvent("matched", 20*time.Second)
			var s interop.SubSummary
			require.NoError(t, sub.WaitEvent("done", 30*time.Second).Decode(&s))
			require.True(t, s.Complete, "%+v", s)
			require.Equal(t, n, s.Count)
			require.True(t, s.InOrder)
			require.Zero(t, s.Dups)
			t.Logf("%s: %d/%d samples", dir.name, s.Count, n)
		})
		t.Run("get_"+dir.name, func(t *testing.T) {
			key := "mesh/q/" + dir.name
			interop.StartReady(t, "queryable", key, "--connect", dir.subEP, "--reply-count", "1")
			get := interop.Start(t, "get", key, "--connect", dir.pubEP, "--wait-matching")
			r := get.WaitEvent("reply", 20*time.Second)
			require.True(t, r.OK)
			require.Equal(t, key, r.Key)
			get.WaitEvent("done", 20*time.Second)
		})
		t.Run("liveliness_"+dir.name, func(t *testing.T) {
			key := "mesh/lv/" + dir.name
			lsub := interop.StartReady(t, "liveliness-sub", key, "--connect", dir.pubEP)
			tok := interop.StartReady(t, "token", key, "--connect", dir.subEP)
			ev := lsub.WaitEvent("liveliness", 20*time.Second)
			require.Equal(t, "put", ev.Kind)
			tok.Kill()
			ev = lsub.WaitEvent("liveliness", 20*time.Second)
			require.Equal(t, "delete", ev.Kind)
		})
	}
}

// TestInteropMeshRustDialsGo: a real Rust router in router mode whose
// connect endpoint is picobridge's listener (what zenohd users write
// first): the two routers exchange link-state and carry pub/sub, queries
// and liveliness both ways.
func TestInteropMeshRustDialsGo(t *testing.T) {
	skipShort(t)
	interop.FindPython(t)
	r, goEP := startMeshRouter(t, "")
	rustEP := interop.FreeEndpoint(t)
	zid := readyZID(t, interop.Start(t, "router", "--mode", "router", "--listen", rustEP, "--connect", goEP))
	eventually(t, "the Rust router in the link-state graph", 20*time.Second, func() bool {
		return slices.Equal(r.MeshRouters(), []string{zid})
	})
	meshSuite(t, goEP, rustEP)
}

// TestInteropMeshGoDialsRust: picobridge router -e dials a real Rust
// router as a router (zenohd's way) and the same works.
func TestInteropMeshGoDialsRust(t *testing.T) {
	skipShort(t)
	interop.FindPython(t)
	rustEP := interop.FreeEndpoint(t)
	zid := readyZID(t, interop.Start(t, "router", "--mode", "router", "--listen", rustEP))
	r, goEP := startMeshRouter(t, rustEP)
	eventually(t, "the Rust router in the link-state graph", 20*time.Second, func() bool {
		return slices.Equal(r.MeshRouters(), []string{zid})
	})
	meshSuite(t, goEP, rustEP)
}

// TestInteropMeshAdminSpace: with picobridge in a mesh with a Rust router,
// a get on @/** from a Python client of the Rust router sees the gateway's
// admin space (@/<zid>/router and its link-state view);
// a Go client there reads the JSON summary (the Rust router is a router
// neighbour with an edge weight) and the dot graph (one edge).
func TestInteropMeshAdminSpace(t *testing.T) {
	skipShort(t)
	interop.FindPython(t)
	r, goEP := startMeshRouter(t, "")
	adm, err := r.ServeAdminSpace(zenohpath.AdminConfig{Version: "test"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = adm.Close() })
	require.Empty(t, r.Faces(), "the admin session is not a face")
	rustEP := interop.FreeEndpoint(t)
	zid := readyZID(t, interop.Start(t, "router", "--mode", "router", "--listen", rustEP, "--connect", goEP))
	eventually(t, "the Rust router in the link-state graph", 20*time.Second, func() bool {
		return slices.Equal(r.MeshRouters(), []string{zid})
	})
	root := r.AdminKey()
	require.Equal(t, "@/"+r.ZID().String()+"/router", root)

	var keys []string
	deadline := time.Now().Add(interop.Scale(30 * time.Second))
	for !slices.Contains(keys, root) || !slices.Contains(keys, root+"/linkstate/north") {
		require.False(t, time.Now().After(deadline), "replies seen: %v", keys)
		get := interop.Start(t, "get", "@/**", "--connect", rustEP, "--target", "all")
		get.WaitEvent("done", 20*time.Second)
		keys = keys[:0]
		for _, ev := range get.Events() {
			if ev.Ev == "reply" && ev.OK {
				keys = append(keys, ev.Key)
			}
		}
	}
	// The Rust router here is eclipse-zenoh's embedded one, whose admin
	// space is off by default (zenohd forces it on): only the Python
	// client's own session entries and ours answer.
	require.NotContains(t, keys, "@/"+zid+"/router")

	ctx, cancel := context.WithTimeout(context.Background(), interop.Scale(10*time.Second))
	defer cancel()
	c, err := zenohpath.Open(ctx, zenohpath.Config{Connect: []string{rustEP}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	replies, err := c.Get(root+"/**", &zenohpath.GetOptions{Target: zenohpath.QueryTargetAll})
	require.NoError(t, err)
	got := map[string][]byte{}
	for rp := range replies {
		if s, ok := rp.Ok(); ok {
			got[s.KeyExpr()] = s.Payload()
		}
	}
	require.Contains(t, got, root)
	var sum zenohpath.AdminSummary
	require.NoError(t, json.Unmarshal(got[root], &sum))
	require.Equal(t, r.ZID().String(), sum.ZID)
	require.Equal(t, "test", sum.Version)
	require.Len(t, sum.Sessions, 1)
	require.Equal(t, zid, sum.Sessions[0].Peer)
	require.Equal(t, "router", sum.Sessions[0].WhatAmI)
	require.Equal(t, "north", sum.Sessions[0].Region)
	require.NotNil(t, sum.Sessions[0].Weight)
	require.Equal(t, uint16(100), sum.Sessions[0].Weight.ActualWeight)
	dot := string(got[root+"/linkstate/north"])
	require.Contains(t, dot, r.ZID().String())
	require.Contains(t, dot, zid)
	require.Equal(t, 1, strings.Count(dot, " -- "), dot)
}

// parseDot reads a link-state graph in Graphviz dot (zenohd's and ours):
// the cost of each edge, keyed by its two zids in sorted order.
func parseDot(t *testing.T, dot string) map[[2]string]float64 {
	t.Helper()
	labels := map[string]string{}
	edges := map[[2]string]float64{}
	for _, line := range strings.Split(dot, "\n") {
		line = strings.TrimSpace(line)
		i := strings.Index(line, `[ label = "`)
		if i < 0 {
			continue
		}
		val := strings.TrimSuffix(line[i+len(`[ label = "`):], `" ]`)
		head := strings.TrimSpace(line[:i])
		a, b, isEdge := strings.Cut(head, " -- ")
		if !isEdge {
			labels[head] = val
			continue
		}
		w, err := strconv.ParseFloat(val, 64)
		require.NoError(t, err, "edge label %q", val)
		k := [2]string{labels[a], labels[strings.TrimSpace(b)]}
		if k[1] < k[0] {
			k[0], k[1] = k[1], k[0]
		}
		edges[k] = w
	}
	return edges
}

// TestInteropMeshEdgeCostsMatchRust: our edge costs (with Rust's
// tie-breaking factor) are the ones the Rust routers compute for the same
// edges, as their admin space shows them. Fixed zids whose order as
// little-endian byte strings (ZenohIdProto's Ord) differs from their order
// as u128 numbers, the case the factor once got wrong: then Go and Rust
// routers chose different paths among equal-hop ones, and data was dropped
// or looped.
func TestInteropMeshEdgeCostsMatchRust(t *testing.T) {
	skipShort(t)
	interop.FindPython(t)
	goZID, err := parseHexZID("aa000000000000000000000000000001")
	require.NoError(t, err)
	r := zenohpath.NewRouter(zenohpath.RouterConfig{ZID: goZID})
	t.Cleanup(func() { _ = r.Close() })
	ln, err := r.Listen(context.Background(), "tcp/127.0.0.1:0")
	require.NoError(t, err)
	adm, err := r.ServeAdminSpace(zenohpath.AdminConfig{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = adm.Close() })
	rust := []string{"a5", "1234567890abcdef1122334455667788"}
	for _, id := range rust {
		interop.StartReady(t, "router", "--mode", "router", "--listen", interop.FreeEndpoint(t), "--connect", ln.Endpoint(), "--cfg", `id="`+id+`"`, "--cfg", "adminspace/enabled=true")
	}
	eventually(t, "both Rust routers in the graph", 20*time.Second, func() bool { return len(r.MeshRouters()) == 2 })
	s, err := zenohpath.Open(context.Background(), zenohpath.Config{Router: r})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	dot := func(zid string) map[[2]string]float64 {
		var edges map[[2]string]float64
		eventually(t, "the link-state graph of "+zid, 20*time.Second, func() bool {
			ch, err := s.Get("@/"+zid+"/router/linkstate/north", nil)
			require.NoError(t, err)
			for rep := range ch {
				if smp, ok := rep.Ok(); ok {
					edges = parseDot(t, string(smp.Payload()))
				}
			}
			return len(edges) == 2
		})
		return edges
	}
	ours := dot(goZID.String())
	for _, id := range rust {
		theirs := dot(id)
		for k, w := range theirs {
			require.Contains(t, ours, k)
			require.InDelta(t, w, ours[k], 1e-9, "edge %s–%s: Rust %v, ours %v", k[0], k[1], w, ours[k])
		}
		t.Logf("%s: %v", id, theirs)
	}
}

// parseHexZID parses a zid as zenohd prints it (the u128 in hex).
func parseHexZID(s string) (wire.ZID, error) {
	b, err := hex.DecodeString(s)
	if err != nil {
		return wire.ZID{}, err
	}
	slices.Reverse(b)
	return wire.MustZID(b), nil
}

// TestInteropMeshWeightsMatchRust: configured link weights (zenohd's
// routing.router.linkstate.transport_weights, zenoh-mesh-auth.md §1.6)
// in a triangle of our router G and two real Rust routers R1, R2 (both
// dial G, R2 dials R1). G sets 1000 towards R2; R1 sets 30 towards G and
// 60 towards R2; R2 sets 500 towards G and 40 towards R1. So the edges
// cost G–R1 30 (one end set, received from R1), R1–R2 60 (the larger of
// two Rust ends), G–R2 1000 (the larger: ours, sent in our H block, over
// R2's 500), each times the tie factor, and the two-hop path G–R1–R2 (90)
// is cheaper than the direct edge. Every router's graph (ours and both
// Rust admin linkstate/north views) shows exactly these costs, both admin
// summaries show the src/dst/actual weights of the G–R2 session, every
// router agrees on the path (our next hop, Rust's route/successor), and
// 100 publications from G to a subscriber on R2 all go through R1: the
// face to R1 gets 100 PUSHes, the direct face to R2 none.
func TestInteropMeshWeightsMatchRust(t *testing.T) {
	skipShort(t)
	interop.FindPython(t)
	const gHex, r1, r2 = "aa000000000000000000000000000001", "a5", "1234567890abcdef1122334455667788"
	g, err := parseHexZID(gHex)
	require.NoError(t, err)
	z1, err := parseHexZID(r1)
	require.NoError(t, err)
	z2, err := parseHexZID(r2)
	require.NoError(t, err)
	r := zenohpath.NewRouter(zenohpath.RouterConfig{ZID: g, TransportWeights: map[wire.ZID]uint16{z2: 1000}})
	t.Cleanup(func() { _ = r.Close() })
	ln, err := r.Listen(context.Background(), "tcp/127.0.0.1:0")
	require.NoError(t, err)
	adm, err := r.ServeAdminSpace(zenohpath.AdminConfig{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = adm.Close() })

	weights := func(ws ...string) string {
		var parts []string
		for i := 0; i < len(ws); i += 2 {
			parts = append(parts, `{dst_zid:"`+ws[i]+`",weight:`+ws[i+1]+`}`)
		}
		return "routing/router/linkstate/transport_weights=[" + strings.Join(parts, ",") + "]"
	}
	ep1, ep2 := interop.FreeEndpoint(t), interop.FreeEndpoint(t)
	interop.StartReady(t, "router", "--mode", "router", "--listen", ep1, "--connect", ln.Endpoint(),
		"--cfg", `id="`+r1+`"`, "--cfg", "adminspace/enabled=true", "--cfg", weights(gHex, "30", r2, "60"))
	interop.StartReady(t, "router", "--mode", "router", "--listen", ep2, "--connect", ln.Endpoint(), "--connect", ep1,
		"--cfg", `id="`+r2+`"`, "--cfg", "adminspace/enabled=true", "--cfg", weights(gHex, "500", r1, "40"))
	eventually(t, "both Rust routers in the graph", 20*time.Second, func() bool { return len(r.MeshRouters()) == 2 })

	pair := func(a, b string) [2]string {
		if b < a {
			a, b = b, a
		}
		return [2]string{a, b}
	}
	want := map[[2]string]float64{
		pair(gHex, r1): routing.EdgeCost(g, z1, 0, 30),
		pair(r1, r2):   routing.EdgeCost(z1, z2, 60, 40),
		pair(gHex, r2): routing.EdgeCost(g, z2, 1000, 500),
	}
	t.Logf("expected costs: %v", want)
	s, err := zenohpath.Open(context.Background(), zenohpath.Config{Router: r})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	get := func(key string) []byte {
		ch, err := s.Get(key, nil)
		require.NoError(t, err)
		var out []byte
		for rep := range ch {
			if smp, ok := rep.Ok(); ok {
				out = smp.Payload()
			}
		}
		return out
	}
	for _, id := range []string{gHex, r1, r2} {
		var edges map[[2]string]float64
		eventually(t, "the weighted link-state graph of "+id, 30*time.Second, func() bool {
			edges = parseDot(t, string(get("@/"+id+"/router/linkstate/north")))
			if len(edges) != len(want) {
				return false
			}
			for k, w := range want {
				if d := edges[k] - w; d > 1e-9 || d < -1e-9 {
					return false
				}
			}
			return true
		})
		t.Logf("%s: %v", id, edges)
	}

	// The G–R1 and G–R2 sessions as the admin summaries show them.
	for _, tc := range []struct {
		node, peer string
		src, dst   uint16
	}{{gHex, r2, 1000, 500}, {r2, gHex, 500, 1000}, {gHex, r1, 0, 30}, {r1, gHex, 30, 0}} {
		var sum zenohpath.AdminSummary
		require.NoError(t, json.Unmarshal(get("@/"+tc.node+"/router"), &sum), tc.node)
		i := slices.IndexFunc(sum.Sessions, func(x zenohpath.AdminSession) bool { return x.Peer == tc.peer })
		require.GreaterOrEqual(t, i, 0, "%s has a session with %s", tc.node, tc.peer)
		w := sum.Sessions[i].Weight
		require.NotNil(t, w, "%s → %s", tc.node, tc.peer)
		opt := func(v uint16) *uint16 {
			if v == 0 {
				return nil
			}
			return &v
		}
		require.Equal(t, opt(tc.src), w.SrcWeight, "%s → %s src_weight", tc.node, tc.peer)
		require.Equal(t, opt(tc.dst), w.DstWeight, "%s → %s dst_weight", tc.node, tc.peer)
		require.Equal(t, uint16(want[pair(tc.node, tc.peer)]), w.ActualWeight, "%s → %s actual_weight", tc.node, tc.peer)
	}

	// Every router routes along G–R1–R2.
	require.Equal(t, r1, r.MeshNextHop(r2), "our next hop towards R2")
	for _, tc := range []struct{ at, src, dst, succ string }{
		{r2, r2, gHex, r1}, {r1, gHex, r2, r2}, {r1, r2, gHex, gHex},
	} {
		require.Equal(t, `"`+tc.succ+`"`, string(get("@/"+tc.at+"/router/route/successor/src/"+tc.src+"/dst/"+tc.dst)),
			"%s: successor from %s to %s", tc.at, tc.src, tc.dst)
	}

	// 100 samples from G to a subscriber on R2, all through R1.
	const n = 100
	sub := interop.StartReady(t, "sub", "weights/x", "--connect", ep2, "--count", strconv.Itoa(n), "--quiet", "--timeout", interop.Seconds(30*time.Second))
	pub, err := s.DeclarePublisher("weights/x", zenohpath.PublisherOptions{CongestionControl: zenohpath.CongestionControlBlock})
	require.NoError(t, err)
	eventually(t, "G's publisher matches the subscriber on R2", 20*time.Second, pub.HasMatchingSubscribers)
	pushes := func() map[string]int64 {
		out := map[string]int64{}
		for _, f := range r.Faces() {
			out[f.ZID] += f.PushesSent
		}
		return out
	}
	before := pushes()
	for i := range uint64(n) {
		p := []byte("zpq1\x00\x00\x00\x00\x00\x00\x00\x00")
		binary.LittleEndian.PutUint64(p[4:], i)
		require.NoError(t, pub.Put(p, nil))
	}
	var sum interop.SubSummary
	require.NoError(t, sub.WaitEvent("done", 30*time.Second).Decode(&sum))
	require.True(t, sum.Complete, "%+v", sum)
	require.Equal(t, n, sum.Count)
	require.Equal(t, n, sum.Unique)
	require.Zero(t, sum.Dups)
	require.True(t, sum.InOrder)
	after := pushes()
	require.Equal(t, int64(n), after[r1]-before[r1], "PUSHes to R1")
	require.Equal(t, int64(0), after[r2]-before[r2], "PUSHes on the direct (expensive) edge to R2")
	t.Logf("samples: %d/%d at R2's subscriber; PUSHes from G: %d to R1, %d to R2", sum.Count, n, after[r1]-before[r1], after[r2]-before[r2])
}
