package replay

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/picobridge/picobridge/ddspath/ros2"
	"github.com/picobridge/picobridge/ddspath/rosbag"
)

// TopicInfo describes a topic before its first message is written.
type TopicInfo struct {
	Name string // ROS 2 topic name, e.g. "/scan" (DDS name: ros2.TopicToDDS)
	Type string // ROS 2 type, e.g. "sensor_msgs/msg/LaserScan" (DDS: ros2.TypeToDDS)
	// QoS are the profiles offered when the bag was recorded; empty for synthetic topics.
	QoS []rosbag.QoSProfile
}

// Sink is the output of a replay. The engine calls Declare once per topic, before any Write
// and before the replay clock starts (so a DDS sink can create its writers and let discovery
// run), then Write for each message from a single goroutine.
type Sink interface {
	Declare(t TopicInfo) error
	// Write publishes one serialized message (CDR with its 4-byte encapsulation header).
	// sourceTime is the send time (the DDS source timestamp to use). cdr is only valid during
	// the call: a sink that keeps it must copy it. An error is counted and the replay goes on.
	Write(topic string, cdr []byte, sourceTime time.Time) error
}

// PrintSink is the dry-run sink: it prints one line per message, what would be published
// and when, relative to Start (or to the first write when Start is zero).
type PrintSink struct {
	W     io.Writer
	Start time.Time

	mu    sync.Mutex
	types map[string]string
}

// NewPrintSink returns a PrintSink writing to w, with times relative to start.
func NewPrintSink(w io.Writer, start time.Time) *PrintSink {
	return &PrintSink{W: w, Start: start}
}

// Declare prints the topic and remembers its type.
func (p *PrintSink) Declare(t TopicInfo) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.types == nil {
		p.types = map[string]string{}
	}
	p.types[t.Name] = t.Type
	dds, _ := ros2.TopicToDDS(t.Name)
	ddsType, _ := ros2.TypeToDDS(t.Type)
	qos := ""
	if len(t.QoS) > 0 {
		qos = " qos=" + t.QoS[0].String()
	}
	_, err := fmt.Fprintf(p.W, "declare %s type %s (DDS %s %s)%s\n", t.Name, t.Type, dds, ddsType, qos)
	return err
}

// Write prints "+<offset> <topic> <type> <bytes> B [stamp=<sec.nsec>]".
func (p *PrintSink) Write(topic string, cdr []byte, sourceTime time.Time) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.Start.IsZero() {
		p.Start = sourceTime
	}
	typ := p.types[topic]
	stamp := ""
	if ros2.HasHeader(typ) {
		if st, err := ros2.HeaderStamp(cdr); err == nil {
			stamp = fmt.Sprintf(" stamp=%d.%09d", st.Sec, st.Nanosec)
		}
	}
	_, err := fmt.Fprintf(p.W, "+%.6fs %s %s %d B%s\n", sourceTime.Sub(p.Start).Seconds(), topic, typ, len(cdr), stamp)
	return err
}

// DiscardSink declares and writes nothing; useful for benchmarks.
type DiscardSink struct{}

// Declare does nothing.
func (DiscardSink) Declare(TopicInfo) error { return nil }

// Write does nothing.
func (DiscardSink) Write(string, []byte, time.Time) error { return nil }

// WriterQoS is the QoS a DDS sink should give a topic's writer, resolved from the profiles
// offered at record time the way rosbag2's player adapts: reliable unless a publisher was
// best effort, transient local only if every publisher was, depth the largest KEEP_LAST depth
// seen or DefaultDepth when none is known (Humble bags record history UNKNOWN, depth 0).
type WriterQoS struct {
	Reliable       bool
	TransientLocal bool
	Depth          int
}

// DefaultDepth is the KEEP_LAST depth used when the recording does not tell one; it is the
// ROS 2 default publisher depth (rclcpp's SystemDefaultsQoS / KeepLast(10)).
const DefaultDepth = 10

// WriterQoS resolves the QoS for a writer of t.
func (t TopicInfo) WriterQoS() WriterQoS {
	q := WriterQoS{Reliable: true, TransientLocal: len(t.QoS) > 0}
	for _, p := range t.QoS {
		if p.Reliability == rosbag.ReliabilityBestEffort {
			q.Reliable = false
		}
		if p.Durability != rosbag.DurabilityTransientLocal {
			q.TransientLocal = false
		}
		if p.History == rosbag.HistoryKeepLast && p.Depth > q.Depth {
			q.Depth = p.Depth
		}
	}
	if q.Depth == 0 {
		q.Depth = DefaultDepth
	}
	return q
}
