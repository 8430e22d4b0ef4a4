//go:build cgo && cyclonedds

package ddssink_test

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/ddspath"
	"github.com/picobridge/picobridge/ddspath/replay"
	"github.com/picobridge/picobridge/ddspath/replay/ddssink"
	"github.com/picobridge/picobridge/ddspath/ros2"
	"github.com/picobridge/picobridge/ddspath/rosbag"
	"github.com/picobridge/picobridge/internal/fastddspeer"
)

// replaySpeed is the speed factor of the acceptance replay: the 123 s bag is due within
// ~0.1 ms, so the replay runs as fast as the reliable KEEP_ALL writers let it (they block
// while too much is unacknowledged; nothing is dropped).
const replaySpeed = 1e6

// TestReplayHallwayRoomLoopToFastDDS is the acceptance test of the DDS issue: replaying
// hallway_room_loop onto DDS is seen by the Fast DDS peer with the bag's exact message count
// and sizes for /scan and /imu_data. Header stamps are rewritten to the send time (the CLI
// default), so each received payload must equal the recorded one except for the 8 stamp
// bytes, and the stamp must equal the DDS source timestamp.
func TestReplayHallwayRoomLoopToFastDDS(t *testing.T) {
	t0 := time.Now()
	bagDir := needBag(t, "hallway_room_loop")
	bin := needPeer(t)
	tBuilt := time.Now()

	b, err := rosbag.Open(bagDir)
	require.NoError(t, err)
	defer b.Close()

	type want struct {
		ddsType string
		count   int
		size    int
		msgs    [][]byte
	}
	topics := []string{"/scan", "/imu_data"}
	wants := map[string]*want{}
	for _, name := range topics {
		tp, ok := b.Topic(name)
		require.True(t, ok, name)
		ddsType, err := ros2.TypeToDDS(tp.Type)
		require.NoError(t, err)
		require.Equal(t, tp.MinSize, tp.MaxSize, "%s: fixed-size messages expected", name)
		wants[name] = &want{ddsType: ddsType, count: int(tp.MessageCount), size: int(tp.MinSize)}
	}
	// The numbers.
	require.Equal(t, 896, wants["/scan"].count)
	require.Equal(t, 1504, wants["/scan"].size)
	require.Equal(t, 3698, wants["/imu_data"].count)
	require.Equal(t, 324, wants["/imu_data"].size)

	// The recorded payloads, read independently of the replay (the engine rewrites stamps in
	// its own copies).
	cur, err := b.Messages(context.Background(), rosbag.ReadOptions{Topics: topics})
	require.NoError(t, err)
	for cur.Next() {
		m := cur.Message()
		w := wants[m.Topic.Name]
		w.msgs = append(w.msgs, append([]byte(nil), m.Data...))
	}
	require.NoError(t, cur.Err())
	cur.Close()

	dom := testDomain()
	peers := map[string]*fastddspeer.Peer{}
	for _, name := range topics {
		w := wants[name]
		ddsTopic, err := ros2.TopicToDDS(name)
		require.NoError(t, err)
		// RELIABLE KEEP_ALL (max_samples 5000 > 3698) VOLATILE: the peer's defaults.
		pr, err := fastddspeer.Start(bin, "--sub", ddsTopic, "--type", w.ddsType,
			"--count", strconv.Itoa(w.count), "--domain", strconv.Itoa(int(dom)),
			"--timeout", "45", "--hex")
		require.NoError(t, err)
		t.Cleanup(pr.Kill)
		peers[name] = pr
	}
	for _, name := range topics {
		_, err := peers[name].WaitLine("ready", 20*time.Second)
		require.NoError(t, err)
	}
	tReady := time.Now()

	p := openParticipant(t, dom)
	// KeepAll: RELIABLE KEEP_ALL writers block while the peers lag instead of overwriting
	// unacknowledged samples (the recorded KEEP_LAST 10 never blocks and would lose
	// messages whenever a peer falls 10 behind during the burst).
	sink, err := ddssink.New(p, ddssink.Options{KeepAll: true})
	require.NoError(t, err)
	defer sink.Close()

	src, err := replay.NewBagSource(b, replay.BagOptions{Topics: topics, Speed: replaySpeed})
	require.NoError(t, err)
	// Declare before Run and wait for both sides to match; the engine's Declare is then a
	// no-op.
	for _, ti := range src.Topics() {
		require.NoError(t, sink.Declare(ti))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(t, sink.WaitMatched(ctx, 1))
	for _, name := range topics {
		_, err := peers[name].WaitLine("matched 1", 20*time.Second)
		require.NoError(t, err, name)
	}

	tMatched := time.Now()
	e := replay.New(sink, replay.Options{RewriteStamps: true, StopOnError: true}, src)
	start := time.Now()
	require.NoError(t, e.Run(ctx))
	replayDur := time.Since(start)
	require.NoError(t, sink.WaitForAcks(ctx))
	est := e.Stats()

	// Every peer exits 0 after exactly its count (exit 3 on timeout).
	var wg sync.WaitGroup
	errs := make([]error, len(topics))
	for i, name := range topics {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = peers[name].Wait(45 * time.Second) }()
	}
	wg.Wait()
	tDone := time.Now()
	for i, name := range topics {
		require.NoError(t, errs[i], name)
	}

	sst := sink.Stats()
	for _, name := range topics {
		w := wants[name]
		ts := sst.Topics[name]
		require.Equal(t, uint64(w.count), est.Topics[name].Sent, "%s: engine sent", name)
		require.Zero(t, est.Topics[name].Errors, "%s: engine write errors", name)
		require.Zero(t, est.Topics[name].StampErrors, "%s: stamp errors", name)
		require.Equal(t, uint64(w.count), ts.Written, "%s: sink written", name)
		require.Equal(t, uint64(w.count*w.size), ts.Bytes, "%s: sink bytes", name)
		require.Zero(t, ts.Timeouts+ts.Errors, "%s: sink write failures", name)
		require.Equal(t, ddspath.KeepAll, ts.QoS.History, name)
		require.Equal(t, ddspath.Reliable, ts.QoS.Reliability, name)

		samples, err := peers[name].Samples()
		require.NoError(t, err)
		sumLine, err := peers[name].WaitLine("summary ", time.Second)
		require.NoError(t, err)
		sum, err := fastddspeer.ParseSummary(sumLine)
		require.NoError(t, err)
		require.Equal(t, w.count, sum.Count, "%s: peer summary count", name)
		require.Equal(t, int64(w.count*w.size), sum.Bytes, "%s: peer summary bytes", name)
		require.Len(t, samples, w.count, "%s: peer samples", name)

		var lastSrc int64
		for i, s := range samples {
			require.Equal(t, i, s.Index, "%s: sample index", name)
			require.Equal(t, w.size, s.Size, "%s sample %d: size", name, i)
			require.Len(t, s.Bytes, w.size, "%s sample %d: payload", name, i)
			rec := w.msgs[i]
			// Encapsulation header and everything after the stamp: as recorded.
			require.Equal(t, rec[:4], s.Bytes[:4], "%s sample %d: encapsulation", name, i)
			if string(rec[12:]) != string(s.Bytes[12:]) {
				t.Fatalf("%s sample %d: payload after the stamp differs from the bag", name, i)
			}
			// Stamp rewritten to the send time = the DDS source timestamp.
			st, err := ros2.HeaderStamp(s.Bytes)
			require.NoError(t, err)
			require.Equal(t, s.SrcNs, st.UnixNano(), "%s sample %d: stamp = source timestamp", name, i)
			require.GreaterOrEqual(t, s.SrcNs, lastSrc, "%s sample %d: order", name, i)
			lastSrc = s.SrcNs
		}
		t.Logf("%s → %s: Fast DDS peer received %d × %d B = %d B (bag: %d × %d B), latency p50 %.0f µs p99 %.0f µs",
			name, ts.DDSTopic, sum.Count, w.size, sum.Bytes, w.count, w.size, sum.P50us, sum.P99us)
	}
	ms := func(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
	t.Logf("domain %d, replay of %d messages in %v (%.0f msg/s), test wall time %v "+
		"(peer build %v, bag read + peers ready %v, matched %v, replay+acks %v, peers exit %v)",
		dom, est.Sent, ms(replayDur), float64(est.Sent)/replayDur.Seconds(), ms(time.Since(t0)),
		ms(tBuilt.Sub(t0)), ms(tReady.Sub(tBuilt)), ms(tMatched.Sub(tReady)), ms(tDone.Sub(tMatched)), ms(time.Since(tDone)))

}
