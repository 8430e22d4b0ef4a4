// Package ddssink publishes a replay (package replay) onto DDS: it implements replay.Sink
// with one ddspath raw-CDR writer per declared topic, named and typed the ROS 2 way
// ("/scan" → "rt/scan", "sensor_msgs/msg/LaserScan" → "sensor_msgs::msg::dds_::LaserScan_"),
// with the writer QoS resolved from the QoS recorded in the bag (replay.TopicInfo.WriterQoS).
//
// The implementation needs ddspath's Cyclone DDS build (cgo and -tags cyclonedds); in other
// builds New and Open return ddspath.ErrUnavailable. See docs/replay.md.
//
// Typical use (what `picobridge bag replay` does):
//
//	s, err := ddssink.Open(ddspath.Config{DomainID: 0}, ddssink.Options{})
//	defer s.Close()                         // waits for acks (FlushTimeout), closes writers and participant
//	e := replay.New(s, replay.Options{RewriteStamps: true}, src)
//	err = e.Run(ctx)
//
// To be sure that subscribers see the first message, either set Options.WaitMatched (Declare
// then blocks until each new writer has matched that many readers), or call Declare for the
// source's topics yourself and WaitMatched before Run: Declare is idempotent, so the engine's
// own Declare calls are then no-ops.
package ddssink

import (
	"errors"
	"time"

	"github.com/picobridge/picobridge/ddspath"
	"github.com/picobridge/picobridge/ddspath/replay"
)

// Defaults of Options.
const (
	// DefaultMaxBlocking is how long a write may block on a reliable KEEP_ALL writer whose
	// history holds too much unacknowledged data before it fails with ddspath.ErrTimeout
	// (the sample is dropped; the replay counts an error and goes on). Longer than the DDS
	// default of 100 ms so that a fast replay waits for its readers rather than dropping.
	DefaultMaxBlocking = 5 * time.Second
	// DefaultMatchTimeout bounds the wait of Options.WaitMatched.
	DefaultMatchTimeout = 10 * time.Second
	// DefaultFlushTimeout bounds the wait for acknowledgments in Close.
	DefaultFlushTimeout = 2 * time.Second
)

// ErrNotDeclared is returned by Write for a topic that was never declared.
var ErrNotDeclared = errors.New("ddssink: topic not declared")

// Options configure a Sink. The zero value is what `bag replay` wants.
type Options struct {
	// QoS chooses the writer QoS of a declared topic; nil means RecordedQoS with MaxBlocking.
	QoS func(t replay.TopicInfo) ddspath.QoS
	// MaxBlocking is the reliability max_blocking_time RecordedQoS uses; 0 means
	// DefaultMaxBlocking, negative means infinite. Ignored when QoS is set.
	MaxBlocking time.Duration
	// KeepAll gives RELIABLE VOLATILE topics a KEEP_ALL writer instead of the recorded
	// KEEP_LAST depth: Write then blocks (up to MaxBlocking) while Cyclone's writer history
	// holds too many unacknowledged bytes, instead of overwriting unacknowledged samples. Use
	// it to replay faster than real time without losing messages (the acceptance test does).
	// TRANSIENT_LOCAL topics keep KEEP_LAST (a KEEP_ALL transient-local history would retain
	// every message for late joiners). Ignored when QoS is set.
	KeepAll bool
	// WaitMatched makes Declare wait until the new writer has matched at least this many
	// readers (0: don't wait), for at most MatchTimeout; a timeout is a Declare error.
	WaitMatched  int
	MatchTimeout time.Duration // 0 means DefaultMatchTimeout
	// FlushTimeout bounds how long Close waits for readers to acknowledge what was written;
	// 0 means DefaultFlushTimeout, negative means don't wait.
	FlushTimeout time.Duration
}

// TopicStats counts the writes of one topic.
type TopicStats struct {
	DDSTopic string      // e.g. "rt/scan"
	DDSType  string      // e.g. "sensor_msgs::msg::dds_::LaserScan_"
	QoS      ddspath.QoS // the writer's normalized QoS
	Written  uint64      // successful writes
	Bytes    uint64      // bytes of the successful writes
	Timeouts uint64      // writes that failed with ddspath.ErrTimeout (sample dropped)
	Errors   uint64      // other failed writes (e.g. a sample shorter than its 4-byte header)
	Matched  int         // readers matched now
}

// Stats is a snapshot of a Sink's counters, by ROS 2 topic name.
type Stats struct {
	Topics map[string]TopicStats
}

// Written is the total of successful writes.
func (s Stats) Written() uint64 {
	var n uint64
	for _, t := range s.Topics {
		n += t.Written
	}
	return n
}

// RecordedQoS maps the QoS recorded in a bag (replay.TopicInfo.WriterQoS: reliable unless a
// recorded publisher was best effort, transient local only if all were, KEEP_LAST with the
// deepest recorded depth or replay.DefaultDepth) onto a ddspath writer QoS with the given
// max_blocking_time (0: DefaultMaxBlocking, negative: infinite).
//
// Note that a KEEP_LAST writer never blocks: Cyclone (like Fast DDS) drops the oldest sample
// from a full history even when a reliable reader has not acknowledged it yet, so a replay
// faster than its readers keep up with silently loses messages. Options.KeepAll avoids that.
func RecordedQoS(t replay.TopicInfo, maxBlocking time.Duration) ddspath.QoS {
	w := t.WriterQoS()
	if maxBlocking == 0 {
		maxBlocking = DefaultMaxBlocking
	}
	q := ddspath.QoS{
		Reliability: ddspath.BestEffort,
		History:     ddspath.KeepLast,
		Depth:       int32(min(w.Depth, 1<<30)),
		Durability:  ddspath.Volatile,
		MaxBlocking: maxBlocking,
	}
	if w.Reliable {
		q.Reliability = ddspath.Reliable
	}
	if w.TransientLocal {
		q.Durability = ddspath.TransientLocal
	}
	return q
}

var _ replay.Sink = (*Sink)(nil)
