package bridge

import (
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/picobridge/picobridge/knobs"
)

// Sample is one message on its way to a device.
type Sample struct {
	// Key is the concrete Zenoh key expression it is published on.
	Key string
	// Payload is the serialized payload (raw CDR for ROS topics). The bridge
	// does not copy it: the caller hands it over and must not modify it
	// after Publish or Offer; sinks may keep it.
	Payload []byte
	// Time is when the sample entered the gateway (or its source timestamp);
	// stale-drop measures from it. Zero: the time of Offer.
	Time time.Time
	// History marks a TRANSIENT_LOCAL history sample offered by Device.Replay:
	// the batched lane never drops it as stale (history is old by design, and
	// Replay offers the next one only once this one has left, so a flush that
	// comes late — a loaded host, a slow link — must not lose it).
	History bool
}

// DeviceSink is the egress toward one device. The lead adapts a zenohpath
// face (a zenoh-pico client session) to it. The two lanes call it from two
// goroutines of their own, so an implementation must be safe for concurrent
// use and should not block for long: when the link's queue is full it
// returns ErrCongested (the samples are then counted as dropped with reason
// congestion), ErrDeviceClosed when the device's session has closed (counted
// as closed), any other error also counts toward the supervisor's errors.
// Every method must return once the device's session is closed: Close
// waits for the lane goroutines.
type DeviceSink interface {
	// SendExpress sends one sample now, in its own frame: Zenoh EXPRESS
	// flag (no TX batching), reliable, priority RealTime (1), congestion
	// control drop.
	SendExpress(s Sample) error
	// SendBatch sends the samples of one flush: best effort, priority
	// Data (5), batched into frames of at most the device's batch size
	// (knobs.Capacity.BatchSize); each sample is already within the device's
	// largest message. The slice is only valid during the call.
	SendBatch(samples []Sample) error
	// SendProbe publishes a probe ping (ProbeSize bytes) on key: best
	// effort, express, priority RealTime.
	SendProbe(key string, payload []byte) error
}

// ErrCongested is what a DeviceSink returns when the device's link cannot
// take more now.
var ErrCongested = errors.New("bridge: device link congested")

// ErrDeviceClosed is what a DeviceSink returns once the device's session
// has closed (the device left or lost its link; the server detaches it
// right after). Not a gateway fault: the samples are counted as closed,
// not as congestion, and not toward the supervisor's errors.
var ErrDeviceClosed = errors.New("bridge: device session closed")

// Lane is one of a device's two egress lanes.
type Lane uint8

const (
	// LaneExpress carries critical routes: each sample at once.
	LaneExpress Lane = iota
	// LaneBatched carries noncritical routes: rate-limited, coalesced, flushed on the device's cadence.
	LaneBatched
	numLanes
)

func (l Lane) String() string {
	if l == LaneExpress {
		return "express"
	}
	return "batched"
}

// DropReason says why a sample was not forwarded (invariant 2).
type DropReason uint8

const (
	// DropRateLimit: refused by the batched lane's token bucket.
	DropRateLimit DropReason = iota
	// DropStale: older than policy.batched.stale_after when its flush came.
	DropStale
	// DropOversize: larger than the device can receive (knobs: frag_max_size, batch size, subscriber slot).
	DropOversize
	// DropRingBudget: more samples of one key in one flush than the device's subscriber ring depth.
	DropRingBudget
	// DropQueueFull: the lane already holds its maximum of distinct keys.
	DropQueueFull
	// DropCongestion: replaced by a newer sample of its key before the device
	// could take it (keep-latest), or refused by the sink (ErrCongested, errors).
	DropCongestion
	// DropSuspended: the supervisor suspended the lane (DEGRADED: batched;
	// EMERGENCY: both).
	DropSuspended
	// DropLinkBudget: held back by the device's link budget
	// (policy.link, bytes/s) and replaced by a newer sample of its key
	// before the budget let it go (noncritical traffic is shed first).
	DropLinkBudget
	// DropClosed: the device's session had closed (it left or lost its
	// link): the sink returned ErrDeviceClosed, or the device detached (or
	// the gateway closed) with samples pending.
	DropClosed
	numReasons
)

var reasonNames = [numReasons]string{"rate_limit", "stale", "oversize", "ring_budget", "queue_full", "congestion", "suspended", "link_budget", "closed"}

func (r DropReason) String() string {
	if r < numReasons {
		return reasonNames[r]
	}
	return "unknown"
}

// DropReasons lists every reason in label order.
func DropReasons() []DropReason {
	rs := make([]DropReason, numReasons)
	for i := range rs {
		rs[i] = DropReason(i)
	}
	return rs
}

// laneStats are one lane's counters; deviceStats outlive a connection so
// that metric counters never go backwards.
type laneStats struct {
	forwarded atomic.Uint64
	dropped   [numReasons]atomic.Uint64
}

type deviceStats struct {
	label   string
	lanes   [numLanes]laneStats
	flushes atomic.Uint64
	// stallHolds counts batched flushes held while the device's TCP
	// connection was in retransmission-timeout recovery (linkStalled).
	stallHolds atomic.Uint64
	errors     atomic.Uint64 // sink errors other than ErrCongested
	probes     atomic.Uint64
	// trans counts classifier transitions by the class entered.
	trans [3]atomic.Uint64
	// critDropped counts dropped samples of critical routes, whatever
	// their lane, by reason.
	critDropped [numReasons]atomic.Uint64
	// critForwarded counts forwarded samples of critical routes, whatever their lane.
	critForwarded atomic.Uint64
	// traffic meters what the device is offered, per subscription (traffic.go).
	traffic trafficMeter
}

func (s *deviceStats) transitions(to Class) {
	if int(to) < len(s.trans) {
		s.trans[to].Add(1)
	}
}

func (s *deviceStats) drop(l Lane, r DropReason, n int) {
	s.lanes[l].dropped[r].Add(uint64(n))
}

// Shaping is what a device's lanes derive from its capacity model and the
// policy. It bounds only what the device can receive (invariant 9): each
// sample ≤ MaxMessageBytes, ≤ RingDepth samples per subscriber per burst
// (the express lane's per-key depth, the batched lane's per-flush budget),
// batch bytes ≤ the device's batch size (the transport), and the link
// budget. The device's socket window is not here: it caps what the device
// sends, never what it receives (anchors.md §2.6).
type Shaping struct {
	// MaxMessageBytes is the largest message a subscription of the device
	// with a small-class slot receives: knobs.Capacity.MaxSampleBytes(false)
	// (frag_max_size or one batch, and subscriber_buffer_size).
	MaxMessageBytes int
	// LargeMessageBytes is the same for a subscription listed in
	// devices.list[].large_subscriptions: MaxSampleBytes(true) (the large
	// slot, subscriber_large_size, when the device has large slots).
	LargeMessageBytes int
	// RingDepth is the most samples of one subscription per burst
	// (subscriber_ring_depth, knobs.Capacity.SamplesPerBurst).
	RingDepth int
	// FlushInterval is the batched lane's cadence: the gateway's
	// policy.batched.flush_interval, not a device knob.
	FlushInterval time.Duration
}

// ShapingOf derives a device's shaping from its capacity and the batched
// lane's flush interval (policy.batched.flush_interval; ≤ 0:
// knobs.DefaultGatewayFlush).
func ShapingOf(c knobs.Capacity, flush time.Duration) Shaping {
	if flush <= 0 {
		flush = knobs.DefaultGatewayFlush
	}
	return Shaping{
		MaxMessageBytes:   c.MaxSampleBytes(false),
		LargeMessageBytes: c.MaxSampleBytes(true),
		RingDepth:         c.SamplesPerBurst(),
		FlushInterval:     max(flush, time.Millisecond),
	}
}

// MessageOverhead is the conservative per-sample encoding cost the lanes
// add to a payload before comparing it with MaxMessageBytes: PUSH and PUT
// headers, extensions, the payload length and the key expression written
// out in full (zenoh-wire.md §5; a declared key id only makes it smaller).
func MessageOverhead(key string) int { return 16 + len(key) }

// egress is one device's two lanes. Each lane has its own lock, so a flood
// on the batched lane never waits on, or makes wait, the express lane.
type egress struct {
	device string
	shape  Shaping
	pol    PolicyConfig
	stats  *deviceStats
	log    *onceLogger
	crit   *critLogger // rate-limited lines about dropped critical samples; nil: none
	// link is the device's byte budget (policy.link), shared by both
	// lanes; it outlives the egress too.
	link *linkBudget
	// wakeExpress and wakeBatched make the scheduler run a lane (nil in
	// tests that drive the lanes by hand).
	wakeExpress, wakeBatched func()
	// subsOf maps a key to the device's subscriptions that include it (the
	// ring budget counts per subscription); nil: every key is its own
	// subscription.
	subsOf subsSource
	// oversizeHint, when set, gives the setting that would fix the first
	// oversize drop (announce.go); "" for none.
	oversizeHint func(size int) string
	oversizeSeen atomic.Bool

	exp struct {
		mu    sync.Mutex
		n     atomic.Int32               // samples pending, read by the batched lane without exp.mu
		items map[string][]pendingSample // per key, oldest first, ≤ depth; a key with none is deleted
		order []string                   // keys with pending samples, in service order
		depth int                        // samples kept per key: min(policy.express.depth, RingDepth)
		// linkPaced: the last attempt waited for the link budget (critical
		// traffic alone exceeds it); WaitExpressRoom does not wait for it.
		linkPaced atomic.Bool
		// sinkAt is when the lane's current SendExpress call began, in ns
		// since the gateway started + 1 (0: not in a call); slow: the last
		// call returned an error (ErrCongested: the link is full) or took
		// expressStall or longer. WaitExpressRoom waits for neither
		// a call that reached expressStall nor a slow lane (expressdrain.go).
		sinkAt atomic.Int64
		slow   atomic.Bool
	}
	bat struct {
		mu      sync.Mutex
		keys    map[string]*keyQueue
		order   []*keyQueue
		rate    float64
		pending int
		rot     int            // first key of the next flush, advanced when a flush held samples back
		perSub  map[int]int    // samples per subscription in the current flush window
		perKey  map[string]int // samples per key in one flush (its occupancy), reused
		winAt   time.Time      // start of the flush window perSub counts in
		outCrit int            // samples of critical routes in the last flush's result
		retry   time.Duration  // after a flush that held samples: when to try again (0: the next flush)
	}
}

type pendingSample struct {
	s  Sample
	at time.Time // when queued
}

type keyQueue struct {
	key   string
	items []Sample // oldest first, ≤ history
	lim   *rate.Limiter
	crit  bool       // the key's route is critical (a demoted critical route)
	held  DropReason // why the last flush held its samples back (a newer one replacing them counts so); numReasons: not held
	gen   uint64     // generation of subs
	subs  []int      // the device's subscriptions that include key
}

func newEgress(device string, shape Shaping, pol PolicyConfig, stats *deviceStats, log *onceLogger) *egress {
	e := &egress{device: device, shape: shape, pol: pol, stats: stats, log: log,
		link: &linkBudget{}}
	e.exp.items = map[string][]pendingSample{}
	e.exp.depth = expressDepth(pol.Express.Depth, shape.RingDepth)
	e.bat.keys = map[string]*keyQueue{}
	e.bat.rate = pol.Batched.RateHz
	return e
}

// expressDepth is how many samples of one key the express lane holds: the
// policy's depth (DefaultExpressDepth when unset), never more than the
// device's subscriber ring depth (a larger burst would overflow the
// device's ring, invariant 3), at least 1.
func expressDepth(policy, ring int) int {
	if policy <= 0 {
		policy = DefaultExpressDepth
	}
	return max(min(policy, ring), 1)
}

// drop counts n samples of lane l dropped for r; those of a critical
// route are also counted apart and logged, rate-limited (critLogger).
func (e *egress) drop(l Lane, r DropReason, n int, crit bool, now time.Time) {
	if n <= 0 {
		return
	}
	e.stats.drop(l, r, n)
	if crit {
		e.stats.critDropped[r].Add(uint64(n))
		e.crit.note(r, n, now)
	}
}

// sampleBytes is what a sample costs the link budget: payload and the
// conservative message overhead.
func sampleBytes(s Sample) int { return len(s.Payload) + MessageOverhead(s.Key) }

// oversize reports whether s cannot reach the device, counting and logging
// it: larger than the small-class slot of the device's subscriptions, and
// than the large slot when a subscription including its key is listed in
// large_subscriptions (the device would drop it silently in its ring).
func (e *egress) oversize(l Lane, s Sample, crit bool, now time.Time) bool {
	size := sampleBytes(s)
	if size <= e.shape.MaxMessageBytes {
		return false
	}
	limit := e.shape.MaxMessageBytes
	if e.subsOf != nil && e.shape.LargeMessageBytes > limit && e.subsOf.largeFor(s.Key) {
		limit = e.shape.LargeMessageBytes
		if size <= limit {
			return false
		}
	}
	e.drop(l, DropOversize, 1, crit, now)
	attrs := []slog.Attr{slog.String("key", s.Key), slog.Int("bytes", size), slog.Int("max_bytes", limit)}
	if e.oversizeHint != nil && e.oversizeSeen.CompareAndSwap(false, true) {
		if fix := e.oversizeHint(size); fix != "" {
			attrs = append(attrs, slog.String("fix", fix))
		}
	}
	e.log.once(l, DropOversize, "sample larger than the device can receive", attrs...)
	return true
}

// batchedPending is how many samples wait for the next flush.
func (e *egress) batchedPending() int {
	e.bat.mu.Lock()
	defer e.bat.mu.Unlock()
	return e.bat.pending
}

// sendExpress hands s to the sink and counts the outcome.
func (e *egress) sendExpress(sink DeviceSink, s Sample, now time.Time) error {
	err := sink.SendExpress(s)
	e.countCrit(LaneExpress, 1, 1, err, now)
	return err
}

func (e *egress) count(l Lane, n int, err error) { e.countCrit(l, n, 0, err, time.Time{}) }

// countCrit is count for n samples of which crit are of critical routes.
func (e *egress) countCrit(l Lane, n, crit int, err error, now time.Time) {
	if l == LaneExpress {
		crit = n
	}
	if err != nil {
		r := DropCongestion
		if errors.Is(err, ErrDeviceClosed) {
			r = DropClosed
		}
		e.drop(l, r, n-crit, false, now)
		e.drop(l, r, crit, true, now)
	}
	switch {
	case err == nil:
		e.stats.lanes[l].forwarded.Add(uint64(n))
		e.stats.critForwarded.Add(uint64(crit))
	case errors.Is(err, ErrCongested):
		e.log.once(l, DropCongestion, "device link congested", slog.Int("samples", n))
	case errors.Is(err, ErrDeviceClosed):
		e.log.once(l, DropClosed, "device session closed", slog.Int("samples", n))
	default:
		e.stats.errors.Add(1)
		e.log.once(l, DropCongestion, "device sink error", slog.Any("err", err), slog.Int("samples", n))
	}
}

// discard drops everything pending, counted for r: closed when the device
// went away (or the gateway closed), suspended when its lanes were
// replaced by a reconfiguration.
func (e *egress) discard(r DropReason) {
	e.exp.mu.Lock()
	n := int(e.exp.n.Load())
	clear(e.exp.items)
	e.exp.order = nil
	e.exp.n.Store(0)
	e.exp.mu.Unlock()
	e.stats.drop(LaneExpress, r, n)
	e.bat.mu.Lock()
	m := e.bat.pending
	for _, q := range e.bat.order {
		q.items = nil
	}
	e.bat.pending = 0
	e.bat.mu.Unlock()
	e.stats.drop(LaneBatched, r, m)
}

// depth returns the samples pending per lane and the age of the oldest
// pending express sample.
func (e *egress) depth(now time.Time) (express, batched int, lag time.Duration) {
	e.exp.mu.Lock()
	express = int(e.exp.n.Load())
	for _, q := range e.exp.items {
		lag = max(lag, now.Sub(q[0].at))
	}
	e.exp.mu.Unlock()
	e.bat.mu.Lock()
	batched = e.bat.pending
	e.bat.mu.Unlock()
	return express, batched, lag
}

// capacity is how many samples the lanes can hold.
func (e *egress) capacity() (express, batched int) {
	return e.pol.Express.MaxKeys * e.exp.depth, e.pol.Batched.MaxKeys * e.pol.Batched.History
}
