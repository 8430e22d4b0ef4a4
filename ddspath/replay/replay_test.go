package replay

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/ddspath/ros2"
	"github.com/picobridge/picobridge/ddspath/rosbag"
	"github.com/picobridge/picobridge/ddspath/rosbag/rosbagtest"
)

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

type write struct {
	topic string
	at    time.Time
	stamp ros2.Time
	size  int
	tail  []byte // bytes after the stamp, kept only when keepTail
}

// recSink records writes; failEvery > 0 makes every n-th write fail.
type recSink struct {
	mu        sync.Mutex
	declared  []TopicInfo
	writes    []write
	keepTail  bool
	failEvery int
	calls     int
}

func (r *recSink) Declare(t TopicInfo) error {
	r.declared = append(r.declared, t)
	return nil
}

func (r *recSink) Write(topic string, cdr []byte, at time.Time) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls++
	if r.failEvery > 0 && r.calls%r.failEvery == 0 {
		return errors.New("sink full")
	}
	w := write{topic: topic, at: at, size: len(cdr)}
	w.stamp, _ = ros2.HeaderStamp(cdr)
	if r.keepTail {
		w.tail = append([]byte(nil), cdr[12:]...)
	}
	r.writes = append(r.writes, w)
	return nil
}

func openBag(t *testing.T, name string) *rosbag.Bag {
	t.Helper()
	b, err := rosbag.Open(rosbagtest.MumbleBag(t, name))
	require.NoError(t, err)
	t.Cleanup(func() { b.Close() })
	return b
}

func TestReplayRecordedTiming(t *testing.T) {
	b := openBag(t, "hallway_room_loop")
	src, err := NewBagSource(b, BagOptions{})
	require.NoError(t, err)
	sink := &recSink{}
	clock := NewVirtualClock(t0)
	e := New(sink, Options{Clock: clock, RewriteStamps: true}, src)
	require.NoError(t, e.Run(context.Background()))

	require.Len(t, sink.declared, 2)
	require.Len(t, sink.writes, 4594)
	// The replay reproduces the recorded receive-time offsets exactly.
	c, err := b.Messages(context.Background(), rosbag.ReadOptions{})
	require.NoError(t, err)
	defer c.Close()
	var first int64
	for i := 0; c.Next(); i++ {
		m := c.Message()
		if i == 0 {
			first = m.Timestamp
		}
		w := sink.writes[i]
		require.Equal(t, m.Topic.Name, w.topic)
		require.Equal(t, t0.Add(time.Duration(m.Timestamp-first)), w.at, "message %d", i)
		require.Equal(t, ros2.TimeOf(w.at), w.stamp, "stamp rewritten to send time")
		require.Equal(t, len(m.Data), w.size)
	}
	require.NoError(t, c.Err())

	st := e.Stats()
	require.Equal(t, uint64(4594), st.Sent)
	require.Equal(t, uint64(896), st.Topics["/scan"].Sent)
	require.Equal(t, uint64(3698), st.Topics["/imu_data"].Sent)
	require.Equal(t, uint64(896*1504+3698*324), st.Bytes)
	require.Zero(t, st.Errors)
	require.Zero(t, st.MaxLag)
	require.Equal(t, 123227530798*time.Nanosecond, st.Elapsed)
	require.Equal(t, t0.Add(st.Elapsed), clock.Now())
}

func TestReplaySpeedAndSelection(t *testing.T) {
	b := openBag(t, "no_loop_room")
	src, err := NewBagSource(b, BagOptions{Topics: []string{"/scan"}, Speed: 4})
	require.NoError(t, err)
	sink := &recSink{}
	e := New(sink, Options{Clock: NewVirtualClock(t0)}, src)
	require.NoError(t, e.Run(context.Background()))
	require.Len(t, sink.declared, 1)
	require.Equal(t, "/scan", sink.declared[0].Name)
	require.Equal(t, rosbag.ReliabilityReliable, sink.declared[0].QoS[0].Reliability)
	require.Len(t, sink.writes, 508)
	scan, _ := b.Topic("/scan")
	span := scan.End.Sub(scan.Start)
	require.InDelta(t, float64(span)/4, float64(e.Stats().Elapsed), 1)
	// Stamps untouched without RewriteStamps: the first is the recorded one.
	first, err := b.Messages(context.Background(), rosbag.ReadOptions{Topics: []string{"/scan"}})
	require.NoError(t, err)
	defer first.Close()
	require.True(t, first.Next())
	st, err := ros2.HeaderStamp(first.Message().Data)
	require.NoError(t, err)
	require.Equal(t, st, sink.writes[0].stamp)

	for _, bad := range []float64{-1, math.NaN(), math.Inf(1)} {
		_, err := NewBagSource(b, BagOptions{Speed: bad})
		require.Error(t, err)
	}
	_, err = NewBagSource(b, BagOptions{Topics: []string{"/odom"}})
	require.ErrorIs(t, err, rosbag.ErrUnknownTopic)
}

func TestReplayFixedRateLoops(t *testing.T) {
	b := openBag(t, "hallway_room_loop")
	src, err := NewFixedRateSource(b, "/scan", 30)
	require.NoError(t, err)
	require.True(t, src.Endless())
	sink := &recSink{keepTail: true}
	e := New(sink, Options{Clock: NewVirtualClock(t0), RewriteStamps: true, Duration: 40 * time.Second}, src)
	require.NoError(t, e.Run(context.Background()))
	require.Len(t, sink.writes, 1200) // 30 Hz for 40 s, due times 0 .. 39.967 s
	for i, w := range sink.writes {
		want := t0.Add(time.Duration(math.Round(float64(i) * 1e9 / 30)))
		require.Equal(t, want, w.at, "scan %d", i)
		require.Equal(t, ros2.TimeOf(want), w.stamp)
	}
	// After the 896 recorded scans it starts over with the first.
	require.Equal(t, sink.writes[0].tail, sink.writes[896].tail)
	require.Equal(t, sink.writes[5].tail, sink.writes[901].tail)
	require.NotEqual(t, sink.writes[0].tail, sink.writes[1].tail)

	_, err = NewFixedRateSource(b, "/scan", 0)
	require.Error(t, err)
	_, err = NewFixedRateSource(b, "/nope", 30)
	require.ErrorIs(t, err, rosbag.ErrUnknownTopic)
}

func TestReplayMixedFixedAndRecorded(t *testing.T) {
	b := openBag(t, "no_loop_room")
	fixed, err := NewFixedRateSource(b, "/scan", 30)
	require.NoError(t, err)
	rec, err := NewBagSource(b, BagOptions{Topics: []string{"/imu_data"}})
	require.NoError(t, err)
	sink := &recSink{}
	e := New(sink, Options{Clock: NewVirtualClock(t0)}, fixed, rec)
	require.NoError(t, e.Run(context.Background()), "ends when the recorded source ends")
	imu, _ := b.Topic("/imu_data")
	last := imu.End.Sub(imu.Start)
	wantScans := 0
	for i := 0; time.Duration(math.Round(float64(i)*1e9/30)) <= last; i++ {
		wantScans++
	}
	st := e.Stats()
	require.Equal(t, uint64(2122), st.Topics["/imu_data"].Sent)
	require.Equal(t, uint64(wantScans), st.Topics["/scan"].Sent)
	for i := 1; i < len(sink.writes); i++ {
		require.False(t, sink.writes[i].at.Before(sink.writes[i-1].at), "write %d out of order", i)
	}
}

func TestReplayLoopBag(t *testing.T) {
	b := openBag(t, "no_loop_room")
	src, err := NewBagSource(b, BagOptions{Topics: []string{"/scan"}, Loop: true})
	require.NoError(t, err)
	require.True(t, src.Endless())
	scan, _ := b.Topic("/scan")
	span := scan.End.Sub(scan.Start)
	gap := span / 507
	sink := &recSink{}
	e := New(sink, Options{Clock: NewVirtualClock(t0), Duration: 2*(span+gap) + time.Second}, src)
	require.NoError(t, e.Run(context.Background()))
	require.Greater(t, len(sink.writes), 2*508)
	require.Less(t, len(sink.writes), 2*508+20)
	require.Equal(t, t0.Add(span+gap), sink.writes[508].at)
	require.Equal(t, t0.Add(2*(span+gap)), sink.writes[1016].at)
}

func TestReplayCancel(t *testing.T) {
	scan, err := NewSyntheticScan(ScanConfig{Rate: 100})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	clock := NewVirtualClock(t0)
	sleeps := 0
	clock.OnSleep = func(time.Time) {
		sleeps++
		if sleeps == 100 {
			cancel()
		}
	}
	e := New(&recSink{}, Options{Clock: clock}, scan)
	err = e.Run(ctx)
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, uint64(99), e.Stats().Sent)
}

func TestReplaySinkErrors(t *testing.T) {
	scan, err := NewSyntheticScan(ScanConfig{Count: 30})
	require.NoError(t, err)
	sink := &recSink{failEvery: 3}
	e := New(sink, Options{Clock: NewVirtualClock(t0)}, scan)
	require.NoError(t, e.Run(context.Background()))
	st := e.Stats()
	require.Equal(t, uint64(20), st.Sent)
	require.Equal(t, uint64(10), st.Errors)
	require.Equal(t, uint64(10), st.Topics["/scan"].Errors)

	scan, err = NewSyntheticScan(ScanConfig{Count: 30})
	require.NoError(t, err)
	e = New(&recSink{failEvery: 3}, Options{Clock: NewVirtualClock(t0), StopOnError: true}, scan)
	require.ErrorContains(t, e.Run(context.Background()), "sink full")
	require.Equal(t, uint64(2), e.Stats().Sent)
}

func TestReplayErrors(t *testing.T) {
	require.Error(t, New(&recSink{}, Options{}).Run(context.Background()))
	a, err := NewSyntheticScan(ScanConfig{Count: 1})
	require.NoError(t, err)
	bad := &fakeSource{topics: []TopicInfo{{Name: "/scan", Type: "std_msgs/msg/String"}}}
	require.ErrorContains(t, New(&recSink{}, Options{Clock: NewVirtualClock(t0)}, a, bad).Run(context.Background()), "has type")
	// A source error ends the run.
	boom := &fakeSource{topics: []TopicInfo{{Name: "/x", Type: "std_msgs/msg/String"}}, err: errors.New("boom")}
	require.ErrorContains(t, New(&recSink{}, Options{Clock: NewVirtualClock(t0)}, boom).Run(context.Background()), "boom")
	// Finite sources that are all empty: nothing to do, even with an endless one.
	empty := &fakeSource{topics: []TopicInfo{{Name: "/y", Type: "std_msgs/msg/String"}}}
	endless, err := NewSyntheticScan(ScanConfig{})
	require.NoError(t, err)
	sink := &recSink{}
	require.NoError(t, New(sink, Options{Clock: NewVirtualClock(t0)}, empty, endless).Run(context.Background()))
	require.Empty(t, sink.writes)
}

type fakeSource struct {
	topics []TopicInfo
	err    error
}

func (f *fakeSource) Topics() []TopicInfo { return f.topics }
func (f *fakeSource) Endless() bool       { return false }
func (f *fakeSource) Close() error        { return nil }
func (f *fakeSource) Next(context.Context) (Item, error) {
	if f.err != nil {
		return Item{}, f.err
	}
	return Item{}, io.EOF
}

func TestSyntheticScan(t *testing.T) {
	for _, e := range []ros2.Endianness{ros2.LittleEndian, ros2.BigEndian} {
		src, err := NewSyntheticScan(ScanConfig{Topic: "/robot1/scan", FrameID: "base_laser", Rate: 30, Ranges: 720, Count: 45, Endianness: e})
		require.NoError(t, err)
		require.False(t, src.Endless())
		var got []ros2.LaserScan
		var times []time.Time
		sink := sinkFunc(func(topic string, cdr []byte, at time.Time) error {
			require.Equal(t, "/robot1/scan", topic)
			pe, err := ros2.ParseEncapsulation(cdr)
			require.NoError(t, err)
			require.Equal(t, e, pe)
			m, err := ros2.DecodeLaserScan(cdr)
			require.NoError(t, err)
			got = append(got, m)
			times = append(times, at)
			return nil
		})
		eng := New(sink, Options{Clock: NewVirtualClock(t0)}, src)
		require.NoError(t, eng.Run(context.Background()))
		require.Len(t, got, 45)
		for i, m := range got {
			require.Equal(t, "base_laser", m.Header.FrameID)
			require.Len(t, m.Ranges, 720)
			require.Equal(t, ros2.TimeOf(times[i]), m.Header.Stamp, "synthetic scans are always stamped")
			require.Equal(t, t0.Add(time.Duration(math.Round(float64(i)*1e9/30))), times[i])
			for _, r := range m.Ranges {
				require.GreaterOrEqual(t, r, m.RangeMin)
				require.LessOrEqual(t, r, m.RangeMax)
			}
		}
		// Straight ahead at heading 0 the wall is 3 m away; at 90° it is 2 m.
		require.InDelta(t, 3.0, got[0].Ranges[0], 1e-3)
		require.InDelta(t, 2.0, got[0].Ranges[180], 1e-3)
		require.NotEqual(t, got[0].Ranges, got[1].Ranges, "the robot turns")
		require.InDelta(t, 2*math.Pi/720, got[0].AngleIncrement, 1e-7)
	}
	s, err := NewSyntheticScan(ScanConfig{})
	require.NoError(t, err)
	require.Equal(t, []TopicInfo{{Name: "/scan", Type: ros2.LaserScanType}}, s.Topics())
	m := s.Scan(3)
	require.Len(t, m.Ranges, 360)
	require.Equal(t, "laser_frame", m.Header.FrameID)

	for _, bad := range []ScanConfig{{Topic: "scan"}, {Rate: -1}, {Ranges: -5}, {Count: -1}, {RangeMin: 5, RangeMax: 1}} {
		_, err := NewSyntheticScan(bad)
		require.Error(t, err, "%+v", bad)
	}
}

type sinkFunc func(topic string, cdr []byte, at time.Time) error

func (f sinkFunc) Declare(TopicInfo) error { return nil }
func (f sinkFunc) Write(topic string, cdr []byte, at time.Time) error {
	return f(topic, cdr, at)
}

// TestWallClock runs the real clock inside a synctest bubble: time is fake, so the test
// neither sleeps nor flakes.
func TestWallClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, err := NewSyntheticScan(ScanConfig{Rate: 100, Count: 10})
		require.NoError(t, err)
		sink := &recSink{}
		start := time.Now()
		e := New(sink, Options{RewriteStamps: true}, src)
		require.NoError(t, e.Run(context.Background()))
		require.Equal(t, 90*time.Millisecond, time.Since(start))
		require.Len(t, sink.writes, 10)
		require.Equal(t, start.Add(50*time.Millisecond), sink.writes[5].at)

		ctx, cancel := context.WithTimeout(context.Background(), 25*time.Millisecond)
		defer cancel()
		src, err = NewSyntheticScan(ScanConfig{Rate: 100})
		require.NoError(t, err)
		e = New(&recSink{}, Options{}, src)
		require.ErrorIs(t, e.Run(ctx), context.DeadlineExceeded)
		require.Equal(t, uint64(3), e.Stats().Sent) // due at 0, 10, 20 ms
	})
}

func TestPrintSink(t *testing.T) {
	var buf bytes.Buffer
	src, err := NewSyntheticScan(ScanConfig{Rate: 4, Count: 3, Ranges: 10})
	require.NoError(t, err)
	clock := NewVirtualClock(t0)
	e := New(NewPrintSink(&buf, t0), Options{Clock: clock}, src)
	require.NoError(t, e.Run(context.Background()))
	want := strings.Join([]string{
		"declare /scan type sensor_msgs/msg/LaserScan (DDS rt/scan sensor_msgs::msg::dds_::LaserScan_)",
		"+0.000000s /scan sensor_msgs/msg/LaserScan 104 B stamp=1795953600.000000000",
		"+0.250000s /scan sensor_msgs/msg/LaserScan 104 B stamp=1795953600.250000000",
		"+0.500000s /scan sensor_msgs/msg/LaserScan 104 B stamp=1795953600.500000000",
		"",
	}, "\n")
	require.Equal(t, want, buf.String())
	require.NoError(t, DiscardSink{}.Declare(TopicInfo{}))
	require.NoError(t, DiscardSink{}.Write("", nil, t0))
}

func TestVirtualClock(t *testing.T) {
	c := NewVirtualClock(t0)
	c.Advance(time.Second)
	c.Advance(-time.Hour)
	require.Equal(t, t0.Add(time.Second), c.Now())
	require.NoError(t, c.SleepUntil(context.Background(), t0))
	require.Equal(t, t0.Add(time.Second), c.Now(), "never goes back")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, c.SleepUntil(ctx, t0.Add(time.Hour)), context.Canceled)
	require.ErrorIs(t, WallClock{}.SleepUntil(ctx, time.Now().Add(time.Hour)), context.Canceled)
	require.NoError(t, WallClock{}.SleepUntil(context.Background(), time.Now().Add(-time.Second)))
}

func BenchmarkReplaySynthetic(b *testing.B) {
	src, err := NewSyntheticScan(ScanConfig{Count: b.N + 1})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	e := New(DiscardSink{}, Options{Clock: NewVirtualClock(t0), RewriteStamps: true}, src)
	b.ResetTimer()
	if err := e.Run(context.Background()); err != nil {
		b.Fatal(err)
	}
}

func TestWriterQoS(t *testing.T) {
	require.Equal(t, WriterQoS{Reliable: true, Depth: 10}, TopicInfo{}.WriterQoS())
	b := openBag(t, "hallway_room_loop")
	src, err := NewBagSource(b, BagOptions{})
	require.NoError(t, err)
	for _, ti := range src.Topics() {
		require.Equal(t, WriterQoS{Reliable: true, Depth: 10}, ti.WriterQoS(), ti.Name)
	}
	mixed := TopicInfo{QoS: []rosbag.QoSProfile{
		{Reliability: rosbag.ReliabilityReliable, Durability: rosbag.DurabilityTransientLocal, History: rosbag.HistoryKeepLast, Depth: 5},
		{Reliability: rosbag.ReliabilityBestEffort, Durability: rosbag.DurabilityTransientLocal, History: rosbag.HistoryKeepLast, Depth: 20},
	}}
	require.Equal(t, WriterQoS{Reliable: false, TransientLocal: true, Depth: 20}, mixed.WriterQoS())
}
