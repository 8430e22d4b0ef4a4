package bridge

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

const ms = time.Millisecond

func testPolicy() PolicyConfig { return DefaultConfig().Policy }

func testShape() Shaping {
	return Shaping{MaxMessageBytes: 1024, RingDepth: 4, FlushInterval: 50 * ms}
}

func newTestEgress(t *testing.T, pol PolicyConfig, shape Shaping) (*egress, *bytes.Buffer) {
	t.Helper()
	var logs bytes.Buffer
	log := &onceLogger{log: slog.New(slog.NewTextHandler(&logs, nil))}
	return newEgress("dev", shape, pol, &deviceStats{label: "dev"}, log), &logs
}

func (e *egress) dropped(l Lane, r DropReason) uint64 { return e.stats.lanes[l].dropped[r].Load() }

func keys(ss []Sample) []string {
	var out []string
	for _, s := range ss {
		out = append(out, s.Key+"="+string(s.Payload))
	}
	return out
}

// 30 Hz into one key for 1 s: 10 Hz pass in NORMAL, 3 Hz for a NONCRITICAL device.
func TestBatchedTokenBucket(t *testing.T) {
	for _, tc := range []struct {
		hz   float64
		want int
	}{{10, 10}, {3, 3}} {
		e, _ := newTestEgress(t, testPolicy(), testShape())
		e.setBatchedRate(tc.hz, t0)
		sent := 0
		for i := range 300 { // 10 s, every 33.33 ms
			now := t0.Add(time.Duration(i) * time.Second / 30)
			e.offerBatched(Sample{Key: "scan", Payload: []byte("x"), Time: now}, now)
			sent += len(e.flush(now, nil))
		}
		require.InDelta(t, 10*tc.want, sent, 1, "%v Hz", tc.hz)
		require.Equal(t, uint64(300-sent), e.dropped(LaneBatched, DropRateLimit))
	}
	// the rate follows the device class at once
	e, _ := newTestEgress(t, testPolicy(), testShape())
	e.offerBatched(Sample{Key: "k", Time: t0}, t0)
	e.setBatchedRate(3, t0)
	e.offerBatched(Sample{Key: "k", Time: t0.Add(150 * ms)}, t0.Add(150*ms)) // 10 Hz would pass, 3 Hz not
	require.Equal(t, uint64(1), e.dropped(LaneBatched, DropRateLimit))
}

func TestBatchedStaleDrop(t *testing.T) {
	e, logs := newTestEgress(t, testPolicy(), testShape())
	e.offerBatched(Sample{Key: "old", Payload: []byte("1"), Time: t0.Add(-250 * ms)}, t0) // source time already 250 ms ago
	e.offerBatched(Sample{Key: "fresh", Payload: []byte("2"), Time: t0}, t0)
	e.offerBatched(Sample{Key: "edge", Payload: []byte("3"), Time: t0.Add(-200 * ms)}, t0) // exactly stale_after: kept
	require.Equal(t, []string{"fresh=2", "edge=3"}, keys(e.flush(t0, nil)))
	require.Equal(t, uint64(1), e.dropped(LaneBatched, DropStale))
	// a flush that comes too late makes everything stale
	e.offerBatched(Sample{Key: "late", Payload: []byte("4"), Time: t0.Add(time.Second)}, t0.Add(time.Second))
	require.Empty(t, e.flush(t0.Add(1201*ms), nil))
	require.Equal(t, uint64(2), e.dropped(LaneBatched, DropStale))
	require.Equal(t, 1, strings.Count(logs.String(), "reason=stale"), "logged once per cause and device")
}

func TestBatchedKeepLatest(t *testing.T) {
	pol := testPolicy()
	pol.Batched.RateHz = 1000
	pol.Batched.Burst = 100
	e, _ := newTestEgress(t, pol, testShape())
	for i := range 5 {
		e.offerBatched(Sample{Key: "a", Payload: fmt.Appendf(nil, "%d", i), Time: t0}, t0)
	}
	e.offerBatched(Sample{Key: "b", Payload: []byte("x"), Time: t0}, t0)
	_, b, _ := e.depth(t0)
	require.Equal(t, 2, b, "one pending sample per key")
	require.Equal(t, []string{"a=4", "b=x"}, keys(e.flush(t0, nil)))
	require.Equal(t, uint64(4), e.dropped(LaneBatched, DropCongestion))
	require.Empty(t, e.flush(t0.Add(50*ms), nil), "nothing twice")
}

func TestBatchedRingDepthBudget(t *testing.T) {
	pol := testPolicy()
	pol.Batched.RateHz = 1000
	pol.Batched.Burst = 100
	pol.Batched.History = 10
	e, logs := newTestEgress(t, pol, testShape()) // ring depth 4
	for i := range 6 {
		e.offerBatched(Sample{Key: "a", Payload: fmt.Appendf(nil, "%d", i), Time: t0}, t0)
	}
	for i := range 3 {
		e.offerBatched(Sample{Key: "b", Payload: fmt.Appendf(nil, "%d", i), Time: t0}, t0)
	}
	require.Equal(t, []string{"a=2", "a=3", "a=4", "a=5", "b=0", "b=1", "b=2"}, keys(e.flush(t0, nil)),
		"at most ring depth per key per burst, the newest")
	require.Equal(t, uint64(2), e.dropped(LaneBatched, DropRingBudget))
	require.Contains(t, logs.String(), "reason=ring_budget")
}

func TestOversize(t *testing.T) {
	var buf bytes.Buffer
	log := &onceLogger{log: slog.New(slog.NewTextHandler(&buf, nil))}
	e := newEgress("dev", testShape(), testPolicy(), &deviceStats{}, log)
	key := "scan"
	fits := make([]byte, 1024-MessageOverhead(key))
	big := make([]byte, len(fits)+1)
	e.offerExpress(Sample{Key: key, Payload: big, Time: t0}, t0)
	e.offerExpress(Sample{Key: key, Payload: big, Time: t0}, t0)
	e.offerBatched(Sample{Key: key, Payload: big, Time: t0}, t0)
	require.Equal(t, uint64(2), e.dropped(LaneExpress, DropOversize))
	require.Equal(t, uint64(1), e.dropped(LaneBatched, DropOversize))
	require.Equal(t, 1, strings.Count(buf.String(), "lane=express reason=oversize"), "once per cause and device")
	require.Equal(t, 1, strings.Count(buf.String(), "lane=batched reason=oversize"))
	e.offerExpress(Sample{Key: key, Payload: fits, Time: t0}, t0)
	s, ok, _ := e.nextExpress(t0)
	require.True(t, ok)
	require.Len(t, s.Payload, len(fits))
}

func TestQueueFull(t *testing.T) {
	pol := testPolicy()
	pol.Express.MaxKeys = 2
	pol.Batched.MaxKeys = 2
	e, _ := newTestEgress(t, pol, testShape())
	for _, k := range []string{"a", "b", "c"} {
		e.offerExpress(Sample{Key: k, Time: t0}, t0)
		e.offerBatched(Sample{Key: k, Time: t0}, t0)
	}
	require.Equal(t, uint64(1), e.dropped(LaneExpress, DropQueueFull))
	require.Equal(t, uint64(1), e.dropped(LaneBatched, DropQueueFull))
	// once flushed, an idle key makes room for a new one
	require.Len(t, e.flush(t0, nil), 2)
	e.offerBatched(Sample{Key: "c", Time: t0}, t0)
	require.Equal(t, uint64(1), e.dropped(LaneBatched, DropQueueFull))
	require.Len(t, e.flush(t0, nil), 1)
}

// The express lane keeps the latest samples per key while the device's
// scheduler unit has not run, and is never paced by the device's socket
// window: every pending sample is available at once (invariant 9).
func TestExpressKeepLatestNoCeiling(t *testing.T) {
	shape := testShape()
	pol := testPolicy()
	pol.Express.Depth = 1 // one pending sample per key: the latest
	e, _ := newTestEgress(t, pol, shape)
	e.offerExpress(Sample{Key: "cmd", Payload: []byte("1"), Time: t0}, t0)
	e.offerExpress(Sample{Key: "imu", Payload: []byte("1"), Time: t0}, t0)
	s, ok, _ := e.nextExpress(t0)
	require.True(t, ok)
	require.Equal(t, "cmd=1", keys([]Sample{s})[0])
	// before the lane runs again, newer samples replace pending ones
	e.offerExpress(Sample{Key: "imu", Payload: []byte("2"), Time: t0}, t0)
	e.offerExpress(Sample{Key: "cmd", Payload: []byte("2"), Time: t0}, t0)
	e.offerExpress(Sample{Key: "cmd", Payload: []byte("3"), Time: t0}, t0)
	ex, _, lag := e.depth(t0.Add(10 * ms))
	require.Equal(t, 2, ex)
	require.Equal(t, 10*ms, lag)
	var got []string
	for {
		s, ok, wait := e.nextExpress(t0) // the same instant: no rate ceiling
		if !ok {
			require.Zero(t, wait, "nothing pending")
			break
		}
		got = append(got, keys([]Sample{s})...)
	}
	require.Equal(t, []string{"imu=2", "cmd=3"}, got, "first-come key order, latest sample per key")
	require.Equal(t, uint64(2), e.dropped(LaneExpress, DropCongestion))
}

func TestSinkErrorsCounted(t *testing.T) {
	e, _ := newTestEgress(t, testPolicy(), testShape())
	e.count(LaneExpress, 1, nil)
	e.count(LaneExpress, 1, ErrCongested)
	e.count(LaneBatched, 3, fmt.Errorf("link broken"))
	e.count(LaneExpress, 1, fmt.Errorf("%w: transport closed", ErrDeviceClosed))
	e.count(LaneBatched, 2, ErrDeviceClosed)
	require.Equal(t, uint64(1), e.stats.lanes[LaneExpress].forwarded.Load())
	require.Equal(t, uint64(1), e.dropped(LaneExpress, DropCongestion))
	require.Equal(t, uint64(3), e.dropped(LaneBatched, DropCongestion))
	require.Equal(t, uint64(1), e.dropped(LaneExpress, DropClosed))
	require.Equal(t, uint64(2), e.dropped(LaneBatched, DropClosed))
	require.Equal(t, uint64(1), e.stats.errors.Load(), "congestion and a closed session are no errors")
}

func TestDiscard(t *testing.T) {
	e, _ := newTestEgress(t, testPolicy(), testShape())
	e.offerExpress(Sample{Key: "a", Time: t0}, t0)
	e.offerBatched(Sample{Key: "b", Time: t0}, t0)
	e.discard(DropClosed)
	require.Equal(t, uint64(1), e.dropped(LaneExpress, DropClosed))
	require.Equal(t, uint64(1), e.dropped(LaneBatched, DropClosed))
	ex, b, _ := e.depth(t0)
	require.Zero(t, ex+b)
}

func BenchmarkOfferBatched(b *testing.B) {
	pol := testPolicy()
	pol.Batched.RateHz = 1e9
	pol.Batched.Burst = 1 << 30
	e := newEgress("dev", testShape(), pol, &deviceStats{}, nil)
	s := Sample{Key: "scan", Payload: make([]byte, 64), Time: t0}
	b.ReportAllocs()
	for b.Loop() {
		e.offerBatched(s, t0)
	}
}

func BenchmarkOfferExpress(b *testing.B) {
	e := newEgress("dev", testShape(), testPolicy(), &deviceStats{}, nil)
	s := Sample{Key: "cmd", Payload: make([]byte, 64), Time: t0}
	b.ReportAllocs()
	for b.Loop() {
		e.offerExpress(s, t0)
	}
}

// The express FIFO: samples of a key queue up to the depth and go out in
// order; beyond it the oldest is dropped (congestion). The depth never
// exceeds the device's ring depth.
func TestExpressFIFODepth(t *testing.T) {
	shape := testShape()
	pol := testPolicy()
	pol.Express.Depth = 3
	e, _ := newTestEgress(t, pol, shape)
	require.Equal(t, 3, e.exp.depth)
	for i := range 5 {
		e.offerExpress(Sample{Key: "cmd", Payload: []byte{'0' + byte(i)}, Time: t0}, t0)
	}
	e.offerExpress(Sample{Key: "imu", Payload: []byte("0"), Time: t0}, t0)
	ex, _, _ := e.depth(t0)
	require.Equal(t, 4, ex)
	var got []string
	for now := t0; ; now = now.Add(100 * ms) {
		s, ok, _ := e.nextExpress(now)
		if !ok {
			break
		}
		got = append(got, keys([]Sample{s})...)
	}
	require.Equal(t, []string{"cmd=2", "imu=0", "cmd=3", "cmd=4"}, got, "oldest dropped, in order, keys take turns")
	require.Equal(t, uint64(2), e.dropped(LaneExpress, DropCongestion))
	require.False(t, e.expressWaiting())

	shape.RingDepth = 2
	pol.Express.Depth = 8
	e, _ = newTestEgress(t, pol, shape)
	require.Equal(t, 2, e.exp.depth, "never more than the ring depth")
	pol.Express.Depth = 0
	e, _ = newTestEgress(t, pol, testShape())
	require.Equal(t, DefaultExpressDepth, e.exp.depth)
}
