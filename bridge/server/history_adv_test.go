//go:build cgo && cyclonedds

package server

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/ddspath"
	"github.com/picobridge/picobridge/zenohpath"
	"github.com/picobridge/picobridge/zenohpath/wire"
)

// TestTransientLocalHistoryAdvRoundTrip: late joiners across Zenoh between
// two gateways, in the AdvancedPublisher/AdvancedSubscriber layout that
// zenoh-bridge-ros2dds ≥ 1.6 speaks (advhistory.go). Gateway A bridges a
// TRANSIENT_LOCAL DDS writer (KEEP_LAST 5, 8 samples written) on domain
// dA; it declares the liveliness token `<key>/@adv/pub/<A's zid>/uhlc/_`
// and answers a get on `<key>/@adv/**?_max=3;_anyke` with the newest 3 on
// `<key>`, timestamped, oldest first. Gateway B, connected to A, gets a
// TRANSIENT_LOCAL DDS reader (KEEP_LAST 5) on domain dB: the reader gets
// exactly the writer's last 5, oldest first, once, although both of A's
// queryables (plain key and @adv) answered B's two history queries.
func TestTransientLocalHistoryAdvRoundTrip(t *testing.T) {
	dA := svcDomain()
	dB := 210 + uint32(rand.IntN(10))
	topic := "/tladv_" + testTag()
	key := topic[1:]
	a := startDDSServer(t, fmt.Sprintf(`
zenoh: {listen: [tcp/127.0.0.1:0]}
metrics: {listen: ""}
dds: {domain: %d}
`, dA))
	pa, err := ddspath.Open(ddspath.Config{DomainID: dA})
	require.NoError(t, err)
	defer pa.Close()
	tl := ddspath.QoS{Reliability: ddspath.Reliable, History: ddspath.KeepLast, Depth: 5, Durability: ddspath.TransientLocal}
	w, err := pa.NewWriter("rt"+topic, u32Type, tl)
	require.NoError(t, err)
	for i := range uint32(8) {
		require.NoError(t, w.Write(seqSample(i), time.Time{}))
	}
	require.Eventually(t, func() bool { r, ok := routeOf(a, topic, dirToZenoh); return ok && r.Samples == 5 }, 60*time.Second, 20*time.Millisecond,
		"A bridged the writer's 5 retained samples: %+v", a.Routez().Routes)

	cli, err := zenohpath.Open(context.Background(), zenohpath.Config{Connect: a.Endpoints()})
	require.NoError(t, err)
	defer cli.Close()
	advKey := key + "/@adv/pub/" + a.Router().ZID().String() + "/uhlc/_"
	require.Eventually(t, func() bool {
		replies, err := cli.Liveliness().Get(key+"/@adv/pub/**", &zenohpath.LivelinessGetOptions{Timeout: 5 * time.Second})
		if err != nil {
			return false
		}
		var keys []string
		for rep := range replies {
			if s, ok := rep.Ok(); ok {
				keys = append(keys, s.KeyExpr())
			}
		}
		return len(keys) == 1 && keys[0] == advKey
	}, 20*time.Second, 50*time.Millisecond, "A's AdvancedPublisher token %s", advKey)

	replies, err := cli.Get(key+"/@adv/**?_max=3;_anyke", &zenohpath.GetOptions{Target: zenohpath.QueryTargetAll, Timeout: 10 * time.Second})
	require.NoError(t, err)
	var seqs []uint32
	var last uint64
	for rep := range replies {
		s, ok := rep.Ok()
		require.True(t, ok)
		require.Equal(t, key, s.KeyExpr(), "the cache answers on the publisher's key")
		ts, ok := s.Timestamp()
		require.True(t, ok, "cached samples carry their timestamp")
		require.Equal(t, a.Router().ZID(), ts.ZID)
		require.Greater(t, ts.Time, last, "oldest first")
		last = ts.Time
		seqs = append(seqs, binary.LittleEndian.Uint32(s.Payload()[4:]))
	}
	require.Equal(t, []uint32{5, 6, 7}, seqs, "the newest _max=3")
	replies, err = cli.Get(key+"/@adv/**?_max=3;_sn=0..2;_anyke", &zenohpath.GetOptions{Target: zenohpath.QueryTargetAll, Timeout: 10 * time.Second})
	require.NoError(t, err)
	n := 0
	for range replies {
		n++
	}
	require.Zero(t, n, "a bounded _sn range: no sample has a sequence number")

	// Counted from before B starts: B's Zenoh → DDS route may exist before
	// its DDS reader does (A's zenoh-bridge-ros2dds MP token announces the
	// route), and then B asks A's history as soon as it sees the token.
	before := testutil.ToFloat64(a.histStats.replayed.WithLabelValues("query"))
	b := startDDSServer(t, fmt.Sprintf(`
zenoh: {listen: [tcp/127.0.0.1:0], connect: [%s]}
metrics: {listen: ""}
dds: {domain: %d}
services:
  queries_timeout: {transient_local: 5s}
`, a.Endpoints()[0], dB))
	pb, err := ddspath.Open(ddspath.Config{DomainID: dB})
	require.NoError(t, err)
	defer pb.Close()
	time.Sleep(500 * time.Millisecond) // B's session with A is up (A's queryables reach B)
	rd, err := pb.NewReader("rt"+topic, u32Type, tl)
	require.NoError(t, err)
	require.Eventually(t, func() bool { _, ok := routeOf(b, topic, dirToDDS); return ok }, 30*time.Second, 20*time.Millisecond, "B: route Zenoh → DDS: %+v", b.Routez().Routes)
	var got []uint32
	deadline := time.After(60 * time.Second)
	for len(got) < 5 {
		select {
		case smp := <-rd.C():
			got = append(got, binary.LittleEndian.Uint32(smp.CDR[4:]))
		case <-deadline:
			t.Fatalf("B's late DDS reader got %v, want 5 (B wrote %v history samples, A answered %v; B's routes %+v)", got,
				testutil.ToFloat64(b.histStats.replayed.WithLabelValues("dds")),
				testutil.ToFloat64(a.histStats.replayed.WithLabelValues("query"))-before, b.Routez().Routes)
		}
	}
	select {
	case smp := <-rd.C():
		t.Fatalf("B's late DDS reader got more: %v then %d", got, binary.LittleEndian.Uint32(smp.CDR[4:]))
	case <-time.After(time.Second): // nothing more may come
	}
	require.Equal(t, []uint32{3, 4, 5, 6, 7}, got, "the writer's depth, oldest first, once")
	require.Equal(t, 5.0, testutil.ToFloat64(b.histStats.replayed.WithLabelValues("dds")), "B wrote 5 history samples")
	require.Equal(t, 10.0, testutil.ToFloat64(a.histStats.replayed.WithLabelValues("query"))-before,
		"A answered 5 on each of its queryables (plain key and @adv)")
}

// TestTransientLocalHistoryLatePublisher: detect_late_publishers. A
// TRANSIENT_LOCAL DDS reader's route exists; then a Zenoh AdvancedPublisher
// (a Go client: cache queryable and token on `<key>/@adv/pub/abc123/uhlc/_`,
// 3 samples timestamped by abc123) appears: the gateway asks its cache
// (`_max=<depth>;_anyke`) and the reader gets the 3, oldest first; a live
// sample of that source newer than them comes next; when the token comes
// again (a reconnect), the cache is asked again and nothing already written
// is written twice.
func TestTransientLocalHistoryLatePublisher(t *testing.T) {
	domain := svcDomain()
	topic := "/tllate_" + testTag()
	key := topic[1:]
	s := startDDSServer(t, fmt.Sprintf(`
zenoh: {listen: [tcp/127.0.0.1:0]}
metrics: {listen: ""}
dds: {domain: %d}
services:
  queries_timeout: {transient_local: 3s}
`, domain))
	p, err := ddspath.Open(ddspath.Config{DomainID: domain})
	require.NoError(t, err)
	defer p.Close()
	rd, err := p.NewReader("rt"+topic, u32Type, ddspath.QoS{Reliability: ddspath.Reliable, History: ddspath.KeepLast, Depth: 5, Durability: ddspath.TransientLocal})
	require.NoError(t, err)
	require.Eventually(t, func() bool { _, ok := routeOf(s, topic, dirToDDS); return ok }, 30*time.Second, 20*time.Millisecond, "route Zenoh → DDS")

	cli, err := zenohpath.Open(context.Background(), zenohpath.Config{Connect: s.Endpoints()})
	require.NoError(t, err)
	defer cli.Close()
	src := wire.MustZID([]byte{0x23, 0xc1, 0xab})
	require.Equal(t, "abc123", src.String())
	adv := key + "/@adv/pub/abc123/uhlc/_"
	var mu sync.Mutex
	var params []string
	_, err = cli.DeclareQueryable(adv, func(q *zenohpath.Query) {
		mu.Lock()
		params = append(params, q.Parameters())
		mu.Unlock()
		for i := range uint64(3) {
			ts := zenohpath.Timestamp{Time: (i + 1) << 32, ZID: src}
			_ = q.Reply(key, seqSample(100+uint32(i)), &zenohpath.ReplyOptions{Timestamp: &ts})
		}
	}, nil)
	require.NoError(t, err)
	tok, err := cli.Liveliness().DeclareToken(adv)
	require.NoError(t, err)
	var got []uint32
	recv := func(want int) {
		deadline := time.After(30 * time.Second)
		for len(got) < want {
			select {
			case smp := <-rd.C():
				got = append(got, binary.LittleEndian.Uint32(smp.CDR[4:]))
			case <-deadline:
				t.Fatalf("DDS reader got %v, want %d samples", got, want)
			}
		}
	}
	recv(3)
	require.Equal(t, []uint32{100, 101, 102}, got, "the late publisher's cache, oldest first")
	live := zenohpath.Timestamp{Time: 4 << 32, ZID: src}
	require.NoError(t, cli.Put(key, seqSample(103), &zenohpath.PutOptions{Timestamp: &live}))
	recv(4)
	require.NoError(t, tok.Undeclare())
	time.Sleep(200 * time.Millisecond)
	_, err = cli.Liveliness().DeclareToken(adv)
	require.NoError(t, err)
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(params) == 2 }, 20*time.Second, 20*time.Millisecond, "the token came again: asked again")
	select {
	case smp := <-rd.C():
		t.Fatalf("got %v, then %d: written twice", got, binary.LittleEndian.Uint32(smp.CDR[4:]))
	case <-time.After(time.Second):
	}
	require.Equal(t, []uint32{100, 101, 102, 103}, got)
	mu.Lock()
	defer mu.Unlock()
	for _, p := range params {
		require.Regexp(t, regexp.MustCompile(`^_max=\d+;_anyke$`), p)
	}
	require.Equal(t, 3.0, testutil.ToFloat64(s.histStats.replayed.WithLabelValues("dds")), "3 written from the cache, 3 skipped the second time")
}
