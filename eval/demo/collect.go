package demo

import (
	"sort"
	"sync"
	"time"

	"github.com/picobridge/picobridge/bridge"
	"github.com/picobridge/picobridge/ddspath/replay"
	"github.com/picobridge/picobridge/ddspath/ros2"
	"github.com/picobridge/picobridge/sim/devsim"
)

// recordingSink wraps the DDS sink and records, per topic, every write
// attempt (the denominator of the demo's criterion: a sample the replay
// meant to send counts whether or not the write succeeded) and the header
// stamp of each (the replay rewrites each stamp to its send time, so stamps
// identify messages and are strictly increasing).
type recordingSink struct {
	replay.Sink
	mu       sync.Mutex
	stamps   map[string][]int64
	attempts map[string]int
	errors   map[string]int
}

func newRecordingSink(s replay.Sink) *recordingSink {
	return &recordingSink{Sink: s, stamps: map[string][]int64{}, attempts: map[string]int{}, errors: map[string]int{}}
}

func (r *recordingSink) Write(topic string, cdr []byte, sourceTime time.Time) error {
	st, serr := ros2.HeaderStamp(cdr)
	err := r.Sink.Write(topic, cdr, sourceTime)
	r.mu.Lock()
	r.attempts[topic]++
	if err != nil {
		r.errors[topic]++
	}
	if serr == nil {
		r.stamps[topic] = append(r.stamps[topic], st.UnixNano())
	}
	r.mu.Unlock()
	return err
}

// written is the stamps of every write attempt of topic, in order.
func (r *recordingSink) written(topic string) []int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]int64(nil), r.stamps[topic]...)
}

// count is the number of write attempts of topic.
func (r *recordingSink) count(topic string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.attempts[topic]
}

// writeErrors is the number of failed writes of topic.
func (r *recordingSink) writeErrors(topic string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.errors[topic]
}

// sampleRec is one sample at one device subscriber (devsim.SampleEvent, trimmed).
type sampleRec struct {
	Device    string
	Key       string
	Stamp     int64 // ns, 0 if none
	Received  time.Time
	Delivered time.Time
	Outcome   string
	Size      int
}

func (s sampleRec) latency() time.Duration {
	if s.Stamp == 0 || s.Delivered.IsZero() {
		return 0
	}
	return s.Delivered.Sub(time.Unix(0, s.Stamp))
}

// collector keeps every sample event of the run (a 60 s run is a few
// thousand) and the class of each device over time.
type collector struct {
	start   time.Time
	mu      sync.Mutex
	samples []sampleRec
	// per device and key: stamps delivered, in delivery order
	delivered map[string]map[string][]int64
	classes   map[string][]classPoint
}

type classPoint struct {
	At    time.Duration // since start
	Class string
}

func newCollector(start time.Time) *collector {
	return &collector{start: start, delivered: map[string]map[string][]int64{}, classes: map[string][]classPoint{}}
}

func (c *collector) onSample(e devsim.SampleEvent) {
	r := sampleRec{Device: e.Device, Key: e.Key, Received: e.Received, Delivered: e.Delivered, Outcome: e.Outcome, Size: e.Size}
	if !e.Stamp.IsZero() {
		r.Stamp = e.Stamp.UnixNano()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.samples = append(c.samples, r)
	if e.Outcome == devsim.OutcomeDelivered {
		m := c.delivered[e.Device]
		if m == nil {
			m = map[string][]int64{}
			c.delivered[e.Device] = m
		}
		m[e.Key] = append(m[e.Key], r.Stamp)
	}
}

func (c *collector) snapshot() []sampleRec {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]sampleRec(nil), c.samples...)
}

func (c *collector) deliveredStamps(dev, key string) []int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]int64(nil), c.delivered[dev][key]...)
}

// observeClasses records each device's class now and the transitions it
// went through (exact times from the classifier history).
func (c *collector) observeClasses(dz bridge.DevicezResponse, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, d := range dz.Devices {
		pts := c.classes[d.Name]
		if len(pts) == 0 {
			// The class at attach time: the first transition's From.
			first := d.Classifier.Class.String()
			if h := d.Classifier.History; len(h) > 0 {
				first = h[0].From.String()
			}
			pts = append(pts, classPoint{At: 0, Class: first})
		}
		for _, tr := range d.Classifier.History {
			at := tr.At.Sub(c.start)
			if at > pts[len(pts)-1].At || (at == pts[len(pts)-1].At && tr.To.String() != pts[len(pts)-1].Class) {
				pts = append(pts, classPoint{At: at, Class: tr.To.String()})
			}
		}
		if cur := d.Classifier.Class.String(); cur != pts[len(pts)-1].Class {
			pts = append(pts, classPoint{At: now.Sub(c.start), Class: cur})
		}
		c.classes[d.Name] = pts
	}
}

func (c *collector) classTimeline(dev string) []classPoint {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]classPoint(nil), c.classes[dev]...)
}

// percentiles of latencies in ms (nearest rank); zero when empty.
func percentiles(lat []float64, ps ...float64) []float64 {
	out := make([]float64, len(ps))
	if len(lat) == 0 {
		return out
	}
	s := append([]float64(nil), lat...)
	sort.Float64s(s)
	for i, p := range ps {
		k := int(p/100*float64(len(s))+0.5) - 1
		if k < 0 {
			k = 0
		}
		if k >= len(s) {
			k = len(s) - 1
		}
		out[i] = s[k]
	}
	return out
}

// inOrder reports whether stamps are strictly increasing; it returns the
// number of stamps not above their predecessor.
func outOfOrder(stamps []int64) int {
	n := 0
	for i := 1; i < len(stamps); i++ {
		if stamps[i] <= stamps[i-1] {
			n++
		}
	}
	return n
}
