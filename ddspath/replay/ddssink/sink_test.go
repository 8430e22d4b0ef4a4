//go:build cgo && cyclonedds

package ddssink_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/ddspath"
	"github.com/picobridge/picobridge/ddspath/replay"
	"github.com/picobridge/picobridge/ddspath/replay/ddssink"
	"github.com/picobridge/picobridge/ddspath/ros2"
	"github.com/picobridge/picobridge/ddspath/rosbag"
)

// uniqueTopic keeps this package's topics apart from other packages' tests on the same host.
func uniqueTopic(base string) string {
	return fmt.Sprintf("/ddssink_test/%s_%d", base, time.Now().UnixNano())
}

func recv(t *testing.T, r *ddspath.Reader, n int) []*ddspath.Sample {
	t.Helper()
	var out []*ddspath.Sample
	timeout := time.After(10 * time.Second)
	for len(out) < n {
		select {
		case s := <-r.C():
			out = append(out, s)
		case <-timeout:
			t.Fatalf("received %d of %d samples", len(out), n)
		}
	}
	return out
}

func waitReaderMatched(t *testing.T, r *ddspath.Reader) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for r.Matched() < 1 {
		require.True(t, time.Now().Before(deadline), "reader never matched")
		time.Sleep(5 * time.Millisecond)
	}
}

func cdr(n int, fill byte) []byte {
	b := make([]byte, n)
	copy(b, []byte{0, 1, 0, 0})
	for i := 4; i < n; i++ {
		b[i] = fill + byte(i)
	}
	return b
}

func TestSinkWritesExactBytesAndTimestamps(t *testing.T) {
	dom := testDomain()
	pw, pr := openParticipant(t, dom), openParticipant(t, dom)
	s, err := ddssink.New(pw, ddssink.Options{})
	require.NoError(t, err)
	defer s.Close()

	name := uniqueTopic("scan")
	info := replay.TopicInfo{Name: name, Type: "sensor_msgs/msg/LaserScan", QoS: []rosbag.QoSProfile{{
		History: rosbag.HistoryUnknown, Reliability: rosbag.ReliabilityReliable, Durability: rosbag.DurabilityVolatile}}}
	require.NoError(t, s.Declare(info))
	require.NoError(t, s.Declare(info), "declaring again is a no-op")
	require.Equal(t, []string{name}, s.Topics())

	ddsTopic := "rt" + name
	w := s.Writer(name)
	require.NotNil(t, w)
	require.Equal(t, ddsTopic, w.Topic())
	require.Equal(t, ddspath.Reliable, w.QoS().Reliability)
	require.Equal(t, int32(replay.DefaultDepth), w.QoS().Depth)

	r, err := pr.NewReader(ddsTopic, "sensor_msgs::msg::dds_::LaserScan_",
		ddspath.QoS{Reliability: ddspath.Reliable, History: ddspath.KeepAll}, ddspath.WithQueue(1000, ddspath.Block))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, s.WaitMatched(ctx, 1))
	waitReaderMatched(t, r)

	const n = 200
	base := time.Unix(1742407985, 965670153)
	var sent [][]byte
	for i := 0; i < n; i++ {
		b := cdr(8+i*7, byte(i))
		sent = append(sent, append([]byte(nil), b...))
		require.NoError(t, s.Write(name, b, base.Add(time.Duration(i)*time.Millisecond+time.Duration(i))))
		// The sink (ddspath) copied the bytes: reusing the buffer must not matter.
		for j := range b {
			b[j] = 0xff
		}
	}
	got := recv(t, r, n)
	for i, smp := range got {
		require.Equal(t, sent[i], smp.CDR, "sample %d", i)
		require.Equal(t, base.Add(time.Duration(i)*time.Millisecond+time.Duration(i)).UnixNano(),
			smp.SourceTimestamp.UnixNano(), "sample %d", i)
		require.Equal(t, "sensor_msgs::msg::dds_::LaserScan_", smp.TypeName)
	}
	require.NoError(t, s.WaitForAcks(ctx))

	st := s.Stats().Topics[name]
	require.Equal(t, ddsTopic, st.DDSTopic)
	require.Equal(t, "sensor_msgs::msg::dds_::LaserScan_", st.DDSType)
	require.Equal(t, uint64(n), st.Written)
	var total uint64
	for _, b := range sent {
		total += uint64(len(b))
	}
	require.Equal(t, total, st.Bytes)
	require.Zero(t, st.Errors+st.Timeouts)
	require.Equal(t, 1, st.Matched)
	require.Equal(t, uint64(n), s.Stats().Written())
}

func TestSinkErrors(t *testing.T) {
	dom := testDomain()
	p := openParticipant(t, dom)
	_, err := ddssink.New(nil, ddssink.Options{})
	require.Error(t, err)
	_, err = ddssink.New(p, ddssink.Options{WaitMatched: -1})
	require.Error(t, err)

	s, err := ddssink.New(p, ddssink.Options{FlushTimeout: -1})
	require.NoError(t, err)
	name := uniqueTopic("imu")
	require.NoError(t, s.Declare(replay.TopicInfo{Name: name, Type: "sensor_msgs/msg/Imu"}))
	require.ErrorContains(t, s.Declare(replay.TopicInfo{Name: name, Type: "sensor_msgs/msg/LaserScan"}), "declared with type")
	require.Error(t, s.Declare(replay.TopicInfo{Name: "no_slash", Type: "sensor_msgs/msg/Imu"}))
	require.Error(t, s.Declare(replay.TopicInfo{Name: uniqueTopic("bad_type"), Type: "not a type"}))
	require.ErrorIs(t, s.Write("/undeclared", cdr(8, 0), time.Time{}), ddssink.ErrNotDeclared)
	require.Error(t, s.Write(name, []byte{0, 1}, time.Time{}), "shorter than the encapsulation header")
	require.Equal(t, uint64(1), s.Stats().Topics[name].Errors)

	require.NoError(t, s.Close())
	require.NoError(t, s.Close(), "idempotent")
	require.ErrorIs(t, s.Write(name, cdr(8, 0), time.Time{}), ddspath.ErrClosed)
	require.ErrorIs(t, s.Declare(replay.TopicInfo{Name: name, Type: "sensor_msgs/msg/Imu"}), ddspath.ErrClosed)
	require.Empty(t, s.Topics())

	// The caller's participant is still usable.
	w, err := p.NewWriter("rt"+uniqueTopic("after"), "std_msgs::msg::dds_::String_", ddspath.ROSDefaultQoS())
	require.NoError(t, err)
	require.NoError(t, w.Close())
}

func TestSinkWaitMatchedOption(t *testing.T) {
	dom := testDomain()
	p := openParticipant(t, dom)
	s, err := ddssink.New(p, ddssink.Options{WaitMatched: 1, MatchTimeout: 200 * time.Millisecond, FlushTimeout: -1})
	require.NoError(t, err)
	defer s.Close()
	start := time.Now()
	err = s.Declare(replay.TopicInfo{Name: uniqueTopic("lonely"), Type: "sensor_msgs/msg/Imu"})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.GreaterOrEqual(t, time.Since(start), 200*time.Millisecond)

	// With a reader already there, Declare returns once it matched.
	name := uniqueTopic("met")
	pr := openParticipant(t, dom)
	_, err = pr.NewReader("rt"+name, "sensor_msgs::msg::dds_::Imu_", ddspath.ROSDefaultQoS())
	require.NoError(t, err)
	s2, err := ddssink.New(p, ddssink.Options{WaitMatched: 1, MatchTimeout: 10 * time.Second})
	require.NoError(t, err)
	defer s2.Close()
	require.NoError(t, s2.Declare(replay.TopicInfo{Name: name, Type: "sensor_msgs/msg/Imu"}))
	require.Equal(t, 1, s2.Writer(name).Matched())

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, s2.WaitMatched(ctx, 2), context.DeadlineExceeded)
}

// TestSinkOpenOwnsParticipant: a Sink from Open closes its participant.
func TestSinkOpenOwnsParticipant(t *testing.T) {
	s, err := ddssink.Open(ddspath.Config{DomainID: testDomain()}, ddssink.Options{})
	require.NoError(t, err)
	p := s.Participant()
	require.NoError(t, s.Declare(replay.TopicInfo{Name: uniqueTopic("owned"), Type: "sensor_msgs/msg/Imu"}))
	require.NoError(t, s.Close())
	_, err = p.NewWriter("rt"+uniqueTopic("x"), "std_msgs::msg::dds_::String_", ddspath.ROSDefaultQoS())
	require.ErrorIs(t, err, ddspath.ErrClosed)
}

// TestSinkTransientLocalFromRecording: a topic recorded TRANSIENT_LOCAL gets a TRANSIENT_LOCAL
// writer, so a late reader still receives the last Depth messages.
func TestSinkTransientLocalFromRecording(t *testing.T) {
	dom := testDomain()
	pw, pr := openParticipant(t, dom), openParticipant(t, dom)
	s, err := ddssink.New(pw, ddssink.Options{})
	require.NoError(t, err)
	defer s.Close()
	name := uniqueTopic("map")
	require.NoError(t, s.Declare(replay.TopicInfo{Name: name, Type: "std_msgs/msg/String", QoS: []rosbag.QoSProfile{{
		History: rosbag.HistoryKeepLast, Depth: 2, Reliability: rosbag.ReliabilityReliable,
		Durability: rosbag.DurabilityTransientLocal}}}))
	for i := 0; i < 5; i++ {
		require.NoError(t, s.Write(name, cdr(16, byte(i)), time.Unix(100, int64(i))))
	}
	r, err := pr.NewReader("rt"+name, "std_msgs::msg::dds_::String_",
		ddspath.QoS{Reliability: ddspath.Reliable, History: ddspath.KeepLast, Depth: 10, Durability: ddspath.TransientLocal})
	require.NoError(t, err)
	got := recv(t, r, 2)
	require.Equal(t, cdr(16, 3), got[0].CDR)
	require.Equal(t, cdr(16, 4), got[1].CDR)
	require.Equal(t, int64(100e9+4), got[1].SourceTimestamp.UnixNano())
}

// TestEngineThroughSink runs the replay engine with a synthetic LaserScan source into the
// sink: every scan arrives, stamped with its DDS source timestamp.
func TestEngineThroughSink(t *testing.T) {
	dom := testDomain()
	pw, pr := openParticipant(t, dom), openParticipant(t, dom)
	name := uniqueTopic("synthetic_scan")
	src, err := replay.NewSyntheticScan(replay.ScanConfig{Topic: name, Rate: 1000, Count: 50})
	require.NoError(t, err)
	r, err := pr.NewReader("rt"+name, "sensor_msgs::msg::dds_::LaserScan_",
		ddspath.QoS{Reliability: ddspath.Reliable, History: ddspath.KeepAll}, ddspath.WithQueue(100, ddspath.Block))
	require.NoError(t, err)
	s, err := ddssink.New(pw, ddssink.Options{WaitMatched: 1})
	require.NoError(t, err)
	defer s.Close()
	e := replay.New(s, replay.Options{}, src)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// Options.WaitMatched: the engine's Declare returns once the writer matched the reader.
	require.NoError(t, e.Run(ctx))
	got := recv(t, r, 50)
	for i, smp := range got {
		st, err := ros2.HeaderStamp(smp.CDR)
		require.NoError(t, err)
		require.Equal(t, smp.SourceTimestamp.UnixNano(), st.UnixNano(), "scan %d", i)
	}
	require.Equal(t, uint64(50), e.Stats().Sent)
	require.Equal(t, uint64(50), s.Stats().Topics[name].Written)
}

func TestSinkKeepAllOption(t *testing.T) {
	p := openParticipant(t, testDomain())
	s, err := ddssink.New(p, ddssink.Options{KeepAll: true, MaxBlocking: -1, FlushTimeout: -1})
	require.NoError(t, err)
	defer s.Close()
	rel := rosbag.QoSProfile{History: rosbag.HistoryUnknown, Reliability: rosbag.ReliabilityReliable, Durability: rosbag.DurabilityVolatile}
	be := rosbag.QoSProfile{History: rosbag.HistoryKeepLast, Depth: 5, Reliability: rosbag.ReliabilityBestEffort, Durability: rosbag.DurabilityVolatile}
	tl := rosbag.QoSProfile{History: rosbag.HistoryKeepLast, Depth: 1, Reliability: rosbag.ReliabilityReliable, Durability: rosbag.DurabilityTransientLocal}
	for _, tc := range []struct {
		prof    rosbag.QoSProfile
		history ddspath.History
	}{{rel, ddspath.KeepAll}, {be, ddspath.KeepLast}, {tl, ddspath.KeepLast}} {
		name := uniqueTopic("keepall")
		require.NoError(t, s.Declare(replay.TopicInfo{Name: name, Type: "sensor_msgs/msg/Imu", QoS: []rosbag.QoSProfile{tc.prof}}))
		q := s.Writer(name).QoS()
		require.Equal(t, tc.history, q.History, tc.prof.String())
		require.Equal(t, time.Duration(-1), q.MaxBlocking)
	}
}

// TestSinkKeepAllWaitsForSlowReader: with KeepAll, a burst into a reader whose KEEP_ALL cache
// holds 16 samples and which takes one per millisecond blocks the writes instead of losing
// any.
func TestSinkKeepAllWaitsForSlowReader(t *testing.T) {
	dom := testDomain()
	pw, pr := openParticipant(t, dom), openParticipant(t, dom)
	s, err := ddssink.New(pw, ddssink.Options{KeepAll: true})
	require.NoError(t, err)
	defer s.Close()
	name := uniqueTopic("burst")
	r, err := pr.NewReader("rt"+name, "sensor_msgs::msg::dds_::Imu_",
		ddspath.QoS{Reliability: ddspath.Reliable, History: ddspath.KeepAll, MaxSamples: 16},
		ddspath.WithQueue(4, ddspath.Block))
	require.NoError(t, err)
	require.NoError(t, s.Declare(replay.TopicInfo{Name: name, Type: "sensor_msgs/msg/Imu"}))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, s.WaitMatched(ctx, 1))

	const n = 300
	got := make(chan []*ddspath.Sample, 1)
	go func() {
		var out []*ddspath.Sample
		for len(out) < n {
			select {
			case smp := <-r.C():
				out = append(out, smp)
				time.Sleep(time.Millisecond)
			case <-ctx.Done():
				got <- out
				return
			}
		}
		got <- out
	}()
	start := time.Now()
	for i := 0; i < n; i++ {
		require.NoError(t, s.Write(name, cdr(324, byte(i)), time.Unix(0, int64(i+1))))
	}
	t.Logf("%d writes took %v (blocked on the slow reader)", n, time.Since(start))
	out := <-got
	require.Len(t, out, n)
	for i, smp := range out {
		require.Equal(t, cdr(324, byte(i)), smp.CDR, "sample %d", i)
	}
	require.Zero(t, r.Stats().Dropped)
	st := s.Stats().Topics[name]
	require.Equal(t, uint64(n), st.Written)
	require.Zero(t, st.Timeouts)
}
