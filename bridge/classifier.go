package bridge

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/picobridge/picobridge/probe"
)

// Class is a device's class as the classifier sees it.
type Class uint8

const (
	// ClassUnknown: not enough probe data yet.
	ClassUnknown Class = iota
	// ClassCritical: the link is good; critical routes go on the express lane.
	ClassCritical
	// ClassNoncritical: the link is slow or lossy; the device gets best effort at a reduced rate.
	ClassNoncritical
)

func (c Class) String() string {
	switch c {
	case ClassCritical:
		return "CRITICAL"
	case ClassNoncritical:
		return "NONCRITICAL"
	}
	return "UNKNOWN"
}

// Label is the lower-case form used in metric labels and JSON.
func (c Class) Label() string {
	switch c {
	case ClassCritical:
		return "critical"
	case ClassNoncritical:
		return "noncritical"
	}
	return "unknown"
}

// MarshalText writes String.
func (c Class) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// UnmarshalText reads String's forms (and Label's).
func (c *Class) UnmarshalText(b []byte) error {
	for _, x := range []Class{ClassUnknown, ClassCritical, ClassNoncritical} {
		if string(b) == x.String() || string(b) == x.Label() {
			*c = x
			return nil
		}
	}
	return fmt.Errorf("bridge: unknown class %q", b)
}

// Reading is one evaluation's input: the window's mean RTT and loss.
type Reading struct {
	RTT     time.Duration `json:"rtt_ns"` // mean over answered probes; 0 when none answered
	Loss    float64       `json:"loss"`   // lost / settled, 0..1
	Samples int           `json:"samples"`
	Replies int           `json:"replies"`
}

// Transition is one change of a device's effective class.
type Transition struct {
	At     time.Time `json:"at"`
	From   Class     `json:"from"`
	To     Class     `json:"to"`
	Reason string    `json:"reason"`
}

// ErrUnexpectedPong: a pong whose sequence number no pending ping has (late,
// duplicate, or not ours). It is not counted; the caller may ignore it.
var ErrUnexpectedPong = errors.New("probe: unexpected pong")

// Classifier is one device's probe classifier (Adaptive Bridge paper): pings
// at 5 Hz, a 50-probe window giving mean RTT and loss, evaluations at 1 Hz,
// hysteresis over `consecutive` evaluations. It is safe for concurrent use;
// times are passed in, so tests drive it with any clock.
type Classifier struct {
	mu  sync.Mutex
	cfg ClassifierConfig

	epoch   time.Time // gw_send is ns since epoch
	nextSeq uint32
	pending map[uint32]pendingPing // unanswered pings by seq
	window  probe.Window           // settled probes: mean RTT and loss
	sent    uint64

	state    Class // from readings
	override ClassOverride
	good     int // consecutive good readings
	bad      int // consecutive bad readings
	last     Reading
	lastAt   time.Time
	tcp      *TCPInfo
	history  []Transition
	total    uint64 // transitions so far
	onChange func(Transition)

	changedAt time.Time // last change of state from readings; zero: none yet
	dwellHeld uint64    // transitions held back by the dwell time
	suspended uint64    // evaluations suspended by the gateway-health guard
	suspendBy string    // reason of the last evaluation, if suspended
	selfSum   time.Duration
	selfN     uint64
	holdUntil time.Time // HoldLoss
}

type pendingPing struct {
	at   time.Time
	self time.Duration // delay the gateway itself put ahead of the ping
}

// NewClassifier returns a classifier in UNKNOWN with override auto. now is
// the epoch of the gw_send times it writes.
func NewClassifier(cfg ClassifierConfig, now time.Time) *Classifier {
	return &Classifier{
		cfg:      cfg,
		epoch:    now,
		pending:  map[uint32]pendingPing{},
		window:   probe.NewWindow(cfg.Window),
		override: OverrideAuto,
	}
}

// OnTransition sets a function called (under no lock of the classifier's
// caller, but with the classifier's own lock held: it must not call back)
// for every change of the effective class.
func (c *Classifier) OnTransition(f func(Transition)) {
	c.mu.Lock()
	c.onChange = f
	c.mu.Unlock()
}

// Ping returns the next ping's payload and records it as pending.
func (c *Classifier) Ping(now time.Time) []byte { return c.PingAfter(now, 0) }

// PingAfter is Ping for a ping that waits self behind what the gateway
// itself already queued toward the device (its link budget's queue model
// and the transport's TX backlog): that part of its round trip is the
// gateway's, not the device's, and is subtracted from the RTT.
func (c *Classifier) PingAfter(now time.Time, self time.Duration) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	seq := c.nextSeq
	c.nextSeq++
	c.pending[seq] = pendingPing{at: now, self: max(self, 0)}
	c.sent++
	// Bound pending even if Evaluate is never called: a ping older than the
	// timeout is lost whatever happens.
	if len(c.pending) > c.maxPending() {
		c.expire(now)
	}
	p := probe.Message{Kind: probe.Ping, Seq: seq, GwSend: uint64(now.Sub(c.epoch))}
	return p.Append(make([]byte, 0, probe.Size))
}

func (c *Classifier) maxPending() int {
	n := int(c.cfg.ProbeTimeout/max(c.cfg.ProbeInterval, time.Millisecond)) + 2
	return max(n, 4)
}

// Pong records a device's answer received at now and returns the probe's
// RTT (device processing time excluded).
func (c *Classifier) Pong(payload []byte, now time.Time) (time.Duration, error) {
	return c.PongOwn(payload, now, nil)
}

// PongOwn is Pong for a gateway that knows how much of a probe's round
// trip its own traffic queued in the path: own, given the round trip
// (device time excluded, the gateway's own queue included), returns that
// part (the link learner's queue delay while it drains a queue the
// gateway's bytes built, linkLearner.probe; 0: none). The larger of it and
// the gateway's queue ahead of the ping (PingAfter) is taken off the RTT,
// and the probe timeout applies to what is left: a queue the gateway built
// and is draining says nothing about the device or its link (issue 30: a
// link-rate step the learner handles is no bad device). own is called
// with the classifier's lock held and must not call back; nil: none.
func (c *Classifier) PongOwn(payload []byte, now time.Time, own func(rtt time.Duration) time.Duration) (time.Duration, error) {
	p, err := probe.Decode(payload)
	if err != nil {
		return 0, err
	}
	if p.Kind != probe.Pong {
		return 0, fmt.Errorf("%w: got a %v", probe.ErrKind, p.Kind)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	pp, ok := c.pending[p.Seq]
	sentAt := pp.at
	if !ok || uint64(sentAt.Sub(c.epoch)) != p.GwSend {
		return 0, fmt.Errorf("%w: seq %d", ErrUnexpectedPong, p.Seq)
	}
	delete(c.pending, p.Seq)
	whole := now.Sub(sentAt)
	rtt := p.RTT(whole)
	var owned time.Duration
	if own != nil {
		owned = min(max(own(rtt), 0), rtt)
	}
	if whole-owned > c.cfg.ProbeTimeout {
		c.window.Lost()
		return whole, fmt.Errorf("%w: seq %d answered after the timeout (%v)", ErrUnexpectedPong, p.Seq, whole)
	}
	if self := max(pp.self, owned); self > 0 {
		c.selfSum += min(self, rtt)
		c.selfN++
		rtt -= min(self, rtt)
	}
	c.window.Answered(rtt)
	return rtt, nil
}

// expire settles every ping older than the timeout as lost; while a hold
// is on (HoldLoss), only those older than the timeout plus
// MaxLossHold.
func (c *Classifier) expire(now time.Time) {
	timeout := c.cfg.ProbeTimeout
	if now.Before(c.holdUntil) {
		timeout += MaxLossHold
	}
	for seq, pp := range c.pending {
		if now.Sub(pp.at) > timeout {
			delete(c.pending, seq)
			c.window.Lost()
		}
	}
}

// MaxLossHold bounds how long a loss hold (HoldLoss) keeps a ping pending
// beyond the probe timeout: 5 s, the longest drain the link learner waits
// for a probe through (learnDrainProbed). A queue that lasts longer is not
// one the gateway is draining: the link cannot carry what the gateway must
// send, which is the classifier's business.
const MaxLossHold = 5 * time.Second

// HoldLoss keeps unanswered pings from being settled as lost until until
// (at most MaxLossHold past their timeout): the gateway's own traffic
// holds a queue in the path that it is draining (the link learner), and
// pings wait in it. Their pongs are then judged by PongOwn, with the
// queue taken off. A later until extends the hold; an earlier one is
// ignored.
func (c *Classifier) HoldLoss(until time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if until.After(c.holdUntil) {
		c.holdUntil = until
	}
}

// ObserveTCP feeds the passive signal (classifier.tcp_info): the reading's
// RTT becomes the larger of the probe mean and the smoothed TCP RTT, and its
// loss the larger of probe loss and the retransmit ratio since the previous
// observation.
func (c *Classifier) ObserveTCP(info TCPInfo) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tcp != nil {
		prev := *c.tcp
		info.retransRatio = 0
		if out := info.SegsOut - prev.SegsOut; out > 0 && info.TotalRetrans >= prev.TotalRetrans {
			info.retransRatio = float64(info.TotalRetrans-prev.TotalRetrans) / float64(out)
		}
	}
	c.tcp = &info
}

// Evaluate settles timed-out pings, computes the window's reading and
// applies it (Observe). Call it every evaluation_interval.
func (c *Classifier) Evaluate(now time.Time) Reading {
	c.mu.Lock()
	c.expire(now)
	r := c.readingLocked()
	c.suspendBy = ""
	c.mu.Unlock()
	c.Observe(r, now)
	return r
}

// EvaluateGuarded is Evaluate under the gateway-health guard's verdict
// (Gateway.evaluateAll): with g.Reason set (cpu_steal, host_load) the
// reading is not applied; with g.Lag set, a bad reading the gateway's lag
// explains is not applied either — its mean RTT minus the lag is within
// demote_rtt, and a loss above demote_loss (or no reply at all) counts as
// explained only when the lag reaches half the probe timeout. A reading
// not applied moves no counter and changes no class; it returns the
// suspension reason (empty: applied).
func (c *Classifier) EvaluateGuarded(now time.Time, g Guard) (Reading, string) {
	c.mu.Lock()
	c.expire(now)
	r := c.readingLocked()
	reason := g.Reason
	if reason == "" && g.Lag > 0 && c.explainedLocked(r, g.Lag) {
		reason = SuspendGatewayLag
	}
	c.suspendBy = reason
	if reason != "" {
		c.last, c.lastAt = r, now
		c.suspended++
		c.mu.Unlock()
		return r, reason
	}
	c.mu.Unlock()
	c.Observe(r, now)
	return r, ""
}

// explainedLocked reports whether a bad reading is explained by the
// gateway's own lag.
func (c *Classifier) explainedLocked(r Reading, lag time.Duration) bool {
	if r.Samples < c.cfg.MinSamples {
		return false
	}
	rttBad := r.Replies > 0 && r.RTT > c.cfg.DemoteRTT
	lossBad := r.Replies == 0 || r.Loss > c.cfg.DemoteLoss
	if !rttBad && !lossBad {
		return false // not bad: nothing to excuse
	}
	if rttBad && r.RTT-lag > c.cfg.DemoteRTT {
		return false
	}
	if lossBad && lag < c.cfg.ProbeTimeout/2 {
		return false
	}
	return true
}

func (c *Classifier) readingLocked() Reading {
	w := c.window.Stats()
	r := Reading{RTT: w.RTT, Loss: w.Loss, Samples: w.Samples, Replies: w.Replies}
	if c.cfg.TCPInfo && c.tcp != nil {
		r.RTT = max(r.RTT, c.tcp.RTT)
		r.Loss = max(r.Loss, c.tcp.retransRatio)
	}
	return r
}

// Observe applies one reading with the paper's hysteresis: a bad reading
// (RTT > demote_rtt or loss > demote_loss, or no reply at all) and a good one
// (RTT < promote_rtt and loss < promote_loss) each count up their own
// counter and reset the other; a reading in between resets both and leaves
// the state; `consecutive` bad readings demote, `consecutive` good ones
// promote. From UNKNOWN, `consecutive` good readings give CRITICAL and bad
// ones NONCRITICAL. A reading with fewer than min_samples settled probes
// changes nothing and resets the counters.
func (c *Classifier) Observe(r Reading, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.last, c.lastAt = r, now
	if r.Samples < c.cfg.MinSamples {
		c.good, c.bad = 0, 0
		return
	}
	bad := r.Replies == 0 || r.RTT > c.cfg.DemoteRTT || r.Loss > c.cfg.DemoteLoss
	good := r.Replies > 0 && r.RTT < c.cfg.PromoteRTT && r.Loss < c.cfg.PromoteLoss
	switch {
	case bad:
		c.bad++
		c.good = 0
	case good:
		c.good++
		c.bad = 0
	default:
		c.good, c.bad = 0, 0
		return
	}
	n := c.cfg.Consecutive
	wantDown := c.bad >= n && c.state != ClassNoncritical
	wantUp := c.good >= n && c.state != ClassCritical
	if (wantDown || wantUp) && !c.changedAt.IsZero() && now.Sub(c.changedAt) < c.cfg.Dwell {
		// At most one change per dwell time (invariant 8): the counters
		// stay at n, so the change happens at the end of the dwell if the
		// readings still call for it.
		c.good, c.bad = min(c.good, n), min(c.bad, n)
		c.dwellHeld++
		return
	}
	switch {
	case c.bad >= n && c.state != ClassNoncritical:
		reason := fmt.Sprintf("rtt %v loss %.2f%% above %v / %.2f%% for %d evaluations",
			r.RTT.Round(time.Microsecond), 100*r.Loss, c.cfg.DemoteRTT, 100*c.cfg.DemoteLoss, n)
		c.setStateLocked(ClassNoncritical, now, reason)
	case c.good >= n && c.state != ClassCritical:
		reason := fmt.Sprintf("rtt %v loss %.2f%% below %v / %.2f%% for %d evaluations",
			r.RTT.Round(time.Microsecond), 100*r.Loss, c.cfg.PromoteRTT, 100*c.cfg.PromoteLoss, n)
		c.setStateLocked(ClassCritical, now, reason)
	default:
		return
	}
	c.good, c.bad = 0, 0
}

func (c *Classifier) setStateLocked(s Class, now time.Time, reason string) {
	before := c.effectiveLocked()
	c.state = s
	c.changedAt = now
	c.record(before, now, reason)
}

// record notes a transition when the effective class changed.
func (c *Classifier) record(before Class, now time.Time, reason string) {
	after := c.effectiveLocked()
	if after == before {
		return
	}
	t := Transition{At: now, From: before, To: after, Reason: reason}
	c.total++
	if c.cfg.History > 0 {
		if len(c.history) == c.cfg.History {
			copy(c.history, c.history[1:])
			c.history = c.history[:len(c.history)-1]
		}
		c.history = append(c.history, t)
	}
	if c.onChange != nil {
		c.onChange(t)
	}
}

// SetOverride pins the effective class (critical, noncritical) or returns
// it to the classifier (auto). The change is recorded as a transition when
// the effective class changes.
func (c *Classifier) SetOverride(o ClassOverride, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if o == "" {
		o = OverrideAuto
	}
	before := c.effectiveLocked()
	c.override = o
	c.record(before, now, "override "+string(o))
}

// Class is the effective class the policy uses: the override when set,
// else the state, with UNKNOWN handled as CRITICAL unless
// allow_unknown_state.
func (c *Classifier) Class() Class {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.effectiveLocked()
}

func (c *Classifier) effectiveLocked() Class {
	switch c.override {
	case OverrideCritical:
		return ClassCritical
	case OverrideNoncritical:
		return ClassNoncritical
	}
	if c.state == ClassUnknown && !c.cfg.AllowUnknownState {
		return ClassCritical
	}
	return c.state
}

// ClassifierStatus is a snapshot for status and metrics.
type ClassifierStatus struct {
	State       Class         `json:"state"` // from readings, before override
	Class       Class         `json:"class"` // effective
	Override    ClassOverride `json:"override"`
	Reading     Reading       `json:"reading"`
	ReadingAt   time.Time     `json:"reading_at"`
	Good        int           `json:"consecutive_good"`
	Bad         int           `json:"consecutive_bad"`
	ProbesSent  uint64        `json:"probes_sent"`
	Pending     int           `json:"probes_pending"`
	Transitions uint64        `json:"transitions_total"`
	History     []Transition  `json:"transitions"`
	// DwellHeld counts changes held back by classifier.dwell.
	DwellHeld uint64 `json:"dwell_held"`
	// Suspended counts evaluations the gateway-health guard suspended;
	// SuspendedBy is the reason of the last evaluation when it was.
	Suspended   uint64 `json:"suspended_total"`
	SuspendedBy string `json:"suspended,omitempty"`
	// SelfDelay is the mean delay the gateway's own queue toward the
	// device added to answered probes (subtracted from their RTT).
	SelfDelay time.Duration `json:"self_delay_ns"`
}

// Status returns a snapshot.
func (c *Classifier) Status() ClassifierStatus {
	c.mu.Lock()
	defer c.mu.Unlock()
	return ClassifierStatus{
		State: c.state, Class: c.effectiveLocked(), Override: c.override,
		Reading: c.last, ReadingAt: c.lastAt, Good: c.good, Bad: c.bad,
		ProbesSent: c.sent, Pending: len(c.pending), Transitions: c.total,
		History:   append([]Transition(nil), c.history...),
		DwellHeld: c.dwellHeld, Suspended: c.suspended, SuspendedBy: c.suspendBy,
		SelfDelay: c.selfMeanLocked(),
	}
}

func (c *Classifier) selfMeanLocked() time.Duration {
	if c.selfN == 0 {
		return 0
	}
	return c.selfSum / time.Duration(c.selfN)
}
