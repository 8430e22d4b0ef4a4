package bridge

import (
	"math"
	"sync"
	"time"
)

// The learned link budget (policy.link.estimate: learn, issue 30 item 2):
// with no configuration, each device link's pacing rate is found from what
// the link shows, and kept a little below the rate at which a queue starts
// to build, so the bottleneck queue stays short and a critical sample does
// not wait behind bulk bytes the gateway can no longer overtake
// (../shared/design/egress-link.md).
//
// The signals, read every policy.link.estimate_interval (linkSignal):
//   - the queue delay: the device's probe RTT above its 10 s minimum (end
//     to end, device time excluded, so it sees a queue before the receiver
//     — Wi-Fi, LTE, a router — and one behind the receiving socket, such
//     as eval/linkemu's, whose bytes TCP already acknowledged). The
//     socket's smoothed RTT is not used: delayed ACKs inflate it whenever
//     traffic is sparse or paced;
//   - receive-window stalls (tcpi_rwnd_limited): the receiver, or a queue
//     behind it, takes no more;
//   - the acknowledged byte rate (tcpi_bytes_acked), what the link took;
//   - demand: the gateway held bytes for the device (the transport's
//     backlog, or a lane held by the budget), i.e. the rate, not the
//     traffic, was the limit.
//
// The rule (delay-based AIMD, in the spirit of BBR's keep-in-flight-near-
// one-BDP and its drain phase, of TCP Vegas and of CUBIC's faster probing
// far from the last loss; Cardwell et al. 2016, Brakmo & Peterson 1995, Ha
// et al. 2008): unpaced until the first sign of a queue; on a sign of a
// queue (delay above policy.link.target_delay, or receive-window stalls in
// ≥ 10 % of the interval) while the gateway had bytes waiting for the link
// within the last 2 × learnHold and the traffic of the last second reached
// the floor (else the queue is not ours, or the reading is noise: jitter,
// a loss repaired by a retransmission timeout; trafficRate), the rate drops to learnDecrease × itself — × the acknowledged
// rate for the first queue, and at most × the acknowledged rate of a
// reading that stalled half the time (the link's own rate) — then holds for learnHold
// so the next reading reflects the drop; when the queue is deeper than
// twice the target (a rate step down), a drain at learnDrain × that rate
// comes first, halved again each learnHold the delay does not shrink, and
// the rate resumes once the delay is back under the target. The link's
// own rate, where known — from the acknowledged rate while the sender
// stalls, or from the slope of a draining queue between two probes at one
// pacing rate (C = r / (1 + dq/dt)) — anchors the drain and the rate it resumes at. Without a queue and with demand, the
// rate grows by learnGrowth per second, doubled for every 2 s spent
// growing since the last decrease (up to 100 %/s): slow near the rate that
// built the last queue, fast when the link got faster. A configured
// link_bytes_per_s × headroom is the ceiling.

// linkSignal is one reading of a device link (TCP_INFO and the gateway's
// own state), taken every policy.link.estimate_interval.
type linkSignal struct {
	// Acked is the socket's cumulative acknowledged bytes
	// (tcpi_bytes_acked); RwndLimited its cumulative time stalled by the
	// receive window (tcpi_rwnd_limited). TCP: true when these and the RTTs
	// were read.
	TCP         bool
	Acked       uint64
	RwndLimited time.Duration
	MinRTT      time.Duration // tcpi_min_rtt, for status
	// Sent is the bytes the lanes handed to the link so far (cumulative,
	// probes excluded): the traffic.
	Sent uint64
	// Demand: the gateway held bytes for the device at the reading.
	Demand bool
}

// Learned-rate constants (issue 30; measured with cmd/egressbench, see
// docs/egressbench.md "Learned link budget").
const (
	// learnDecrease is the share of min(rate, acknowledged rate) kept on a
	// sign of a queue: 0.9, so the sawtooth's mean stays ≥ 90 % of the
	// link while a queue built above it drains.
	learnDecrease = 0.9
	// learnDrain is the share paced while a deep queue drains: 0.1
	// empties a queue of delay q in 1.1 q and still drains after a link
	// step down by up to 10× (BBR drains at 1/2.885 of its startup gain;
	// a link step is deeper than a startup overshoot); express traffic
	// does not wait for the pacing, so only bulk slows down. After a step
	// 100 → 10 Mbit/s through linkemu the queue behind the socket held
	// 1.2 MB (≈ 1 s at 10 Mbit/s); with 0.25 the first drain (at a
	// quarter of the old rate, 2.4 MB/s) still grew it for the second
	// until a probe came back through it, and the link-emulator step test
	// kept a queue until 2.5–3.5 s after the step (with 0.1: gone within
	// 3 s in 6 of 6 runs under -race).
	learnDrain = 0.1
	// learnGrowth is the rate's least growth per second with demand and no
	// queue: 3 %/s. With a probe every 200 ms (the classifier's 5 Hz) and
	// a 2 ms target, the queue when the overshoot is seen is ≤ 5 ms
	// (growth g: delay ≈ g·t²/2 after crossing the link rate).
	learnGrowth = 0.03
	// learnDrainMax ends a drain that no probe has confirmed (a device
	// without a probe responder) once the sender no longer stalls.
	learnDrainMax = time.Second
	// learnDrainProbed bounds the wait for a probe through a queue being
	// drained (a probe may be lost).
	learnDrainProbed = 5 * time.Second
	// learnDrainShrink is the least a draining queue's delay must shrink,
	// as a share of the time between the send times of the two probes
	// that measure it (≥ learnHold apart): at learnDrain × the link it
	// shrinks by 9/10 of that time; by less than 1/4, the link is below
	// 4/3 of the drain rate and the drain is cut again. (A share of the
	// queue, as before, cannot work for a deep queue: a 1 s queue cannot
	// lose a quarter in 200 ms at any rate, and after a step 100 → 10
	// Mbit/s the learner cut itself to the floor, 16 kB/s, in 1.6 s.)
	learnDrainShrink = 0.25
	// learnGrowthMax caps the doubled growth: 100 %/s.
	learnGrowthMax = 1.0
	// learnGrowthDoubling is the growing time after which the growth
	// doubles.
	learnGrowthDoubling = 2 * time.Second
	// learnHold is the least time between two decreases: one probe
	// interval, so the next decrease acts on a reading taken after the
	// previous one.
	learnHold = 200 * time.Millisecond
	// learnStall is the receive-window stall share of an interval that
	// counts as a queue.
	learnStall = 0.10
	// probeMinWindow is the span of the probe RTT's minimum filter (BBR's
	// min-RTT window).
	probeMinWindow = 10 * time.Second
)

// LinkLearnStatus is the learned link budget of a device (/devicez,
// picobridge status, Prometheus picobridge_device_link_*).
type LinkLearnStatus struct {
	// RateBytesPerS is the learned pacing rate, bytes/s; 0: not learned
	// (no queue seen yet: unpaced).
	RateBytesPerS float64 `json:"rate_bytes_per_s"`
	// AckedBytesPerS is what the link acknowledged over the last interval.
	AckedBytesPerS float64 `json:"acked_bytes_per_s"`
	// MinRTT is the socket's minimum RTT (tcpi_min_rtt); ProbeMinRTT the
	// device probes' 10 s minimum (device time excluded).
	MinRTT      time.Duration `json:"min_rtt_ns"`
	ProbeMinRTT time.Duration `json:"probe_min_rtt_ns"`
	// QueueDelay is the last queue estimate (the newest probe's RTT above
	// its 10 s minimum);
	// QueueBytes is it at the acknowledged rate.
	QueueDelay time.Duration `json:"queue_delay_ns"`
	QueueBytes float64       `json:"queue_bytes"`
	// Decreases and Increases count the rate's changes.
	Decreases uint64 `json:"decreases"`
	Increases uint64 `json:"increases"`
}

// linkLearner is one device link's learned rate. Safe for concurrent use.
type linkLearner struct {
	mu sync.Mutex
	// target is policy.link.target_delay; floor and ceiling bound the rate
	// (policy.link.min_bytes_per_s; the configured budget × headroom, 0:
	// none).
	target         time.Duration
	floor, ceiling float64

	started   bool
	lastAt    time.Time
	last      linkSignal
	rate      float64
	holdUntil time.Time
	// A drain (resume > 0): the rate is cut while the queue delay stays
	// above the target, then resume applies; cutAt is the time of the last
	// cut, qCut the delay seen by the first probe sent after it (noDelay:
	// none yet) and qCutSent when that probe was sent. linkRate is the
	// acknowledged rate of the last reading that stalled at least half the
	// time (0: none).
	resume   float64
	qCut     time.Duration
	qCutSent time.Time
	cutAt    time.Time
	linkRate float64
	// demandAt is the last reading with demand.
	demandAt time.Time
	// hist holds the readings of the last stallWindow (stalledRate);
	// ackedMax is the acknowledged rate's peak, halving every 0.5 s.
	hist     []learnReading
	ackedMax float64
	// sentMarks are the readings' Sent over the last trafficWindow;
	// appLimited: the traffic over it was below the floor (trafficRate).
	sentMarks  []sentMark
	appLimited bool
	// fastAt is when the last extra probe was asked for (wantProbe);
	// above counts the fresh probes in a row above the target.
	fastAt time.Time
	above  int
	// rateAt is when the rate last changed; prevProbe the probe a slope
	// starts from; slopeRate the link rate the last slope gave, at slopeAt.
	rateAt    time.Time
	prevProbe probeMark
	slopeRate float64
	slopeAt   time.Time
	// grown is the time spent growing since the last decrease.
	grown time.Duration
	// ownSince is when the current own-queue episode started (ownQueue);
	// zero: none.
	ownSince time.Time

	// probeQ is the newest probe's queue delay, probeSent when that probe
	// was sent (its answer time less its RTT: through a deep queue, the
	// delay it reports is the queue when it was sent, not when it came
	// back); probeFresh: no update has used it yet.
	probeQ     time.Duration
	probeSent  time.Time
	probeFresh bool
	probes     []timedRTT // the probe RTTs of the last probeMinWindow
	st         LinkLearnStatus
}

type timedRTT struct {
	at  time.Time
	rtt time.Duration
}

// configure sets the target delay and the rate's bounds; a ceiling (a
// configured budget) also starts the rate there instead of unpaced.
func (l *linkLearner) configure(target time.Duration, floor, ceiling float64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.target, l.floor, l.ceiling = target, floor, ceiling
	if ceiling > 0 && (l.rate == 0 || l.rate > ceiling) {
		l.rate = ceiling
	}
	l.st.RateBytesPerS = l.rate
}

// probe records a probe RTT (device processing excluded) answered at now:
// its delay above the 10 s minimum is the end-to-end queue estimate the
// next update uses. It returns the part of rtt that is the gateway's own
// queue (ownQueue; 0: none), for the probe classifier (Classifier.PongOwn).
func (l *linkLearner) probe(rtt time.Duration, now time.Time) (own time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	keep := l.probes[:0]
	for _, p := range l.probes {
		if now.Sub(p.at) < probeMinWindow {
			keep = append(keep, p)
		}
	}
	l.probes = append(keep, timedRTT{now, rtt})
	least := rtt
	for _, p := range l.probes {
		least = min(least, p.rtt)
	}
	l.st.ProbeMinRTT = least
	q := rtt - least
	sent := now.Add(-rtt)
	// The queue's slope between two probes sent at one pacing rate r, with
	// bytes waiting (demand) and a queue at both: it shrinks at C − r, so
	// dq/dt = r/C − 1 and C = r / (1 + dq/dt), t being the probes' send
	// times (each reports the queue it was sent into). The probes must be
	// ≥ slopeSpan apart, so a few ms of probe jitter move the estimate by
	// a few %.
	if p := l.prevProbe; !p.at.IsZero() && l.rate > 0 && l.rateAt.Before(p.at) &&
		now.Sub(l.demandAt) < learnHold && p.q > l.target && q > l.target {
		if span := sent.Sub(p.at); span >= slopeSpan && span <= 2*learnHold {
			// Only a shrinking queue, drained at ≥ 20 % of the link: a
			// growing one may be full (a bounded queue stops growing while
			// the sender stalls: dq/dt 0 would read as C = r), and near
			// dq/dt = −1 a few ms of jitter swing the estimate.
			slope := (q - p.q).Seconds() / span.Seconds()
			if slope <= 0 && slope >= -0.8 {
				l.slopeRate, l.slopeAt = l.rate/(1+slope), now
			}
		}
	}
	if l.prevProbe.at.IsZero() || sent.Sub(l.prevProbe.at) >= slopeSpan {
		l.prevProbe = probeMark{sent, q}
	}
	l.probeQ, l.probeSent, l.probeFresh = q, sent, true
	switch {
	case q <= l.targetAt(l.st.AckedBytesPerS) || !l.oursLocked(now):
		l.ownSince = time.Time{}
	case l.ownSince.IsZero():
		l.ownSince = now
	}
	if l.ownLocked(now) {
		return q
	}
	return 0
}

// ownQueueMax bounds an own-queue episode (ownQueue): MaxLossHold, the
// longest drain the learner waits for a probe through (learnDrainProbed).
const ownQueueMax = MaxLossHold

// oursLocked: a queue in the path now would be the gateway's own — the
// learner drains one, or the gateway had bytes waiting for the link within
// the last 2 × learnHold and its traffic reached the floor (the same test
// that lets a queue lower the rate; update). Caller holds mu.
func (l *linkLearner) oursLocked(now time.Time) bool {
	return l.resume > 0 || (!l.demandAt.IsZero() && now.Sub(l.demandAt) <= 2*learnHold && !l.appLimited)
}

// ownQueue reports whether the gateway's own traffic holds a queue in the
// device's path that the learner is handling: a probe through it, or the
// sender's receive-window stalls, showed a queue while it was ours
// (oursLocked), no probe since found it gone, and it started at most
// ownQueueMax ago. Such a queue is the gateway's doing, not the device's
// or its link's: the classifier neither counts its delay in a probe's RTT
// nor settles a ping waiting in it as lost (issue 30: after a rate step
// 100 → 10 Mbit/s, 1.2 MB of bulk took a second to drain and the device
// was demoted). A queue that outlasts ownQueueMax is the link failing to
// carry what the gateway must send, and the classifier sees it.
func (l *linkLearner) ownQueue(now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ownLocked(now)
}

func (l *linkLearner) ownLocked(now time.Time) bool {
	return !l.ownSince.IsZero() && now.Sub(l.ownSince) <= ownQueueMax
}

// slopeSpan is the least time between the two probes of a slope estimate.
const slopeSpan = 100 * time.Millisecond

// linkEstimate is the link's rate from the queue's slope when measured
// within the last second, else 0. Caller holds mu.
func (l *linkLearner) linkEstimate(now time.Time) float64 {
	if l.slopeRate > 0 && now.Sub(l.slopeAt) < time.Second {
		return l.slopeRate
	}
	return 0
}

// probeMark is a probe's send time and the queue delay it reported.
type probeMark struct {
	at time.Time
	q  time.Duration
}

// update takes one reading and returns the pacing rate in bytes/s (0:
// unpaced) and whether it changed.
func (l *linkLearner) update(now time.Time, s linkSignal) (float64, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	prev := l.rate
	if !l.started || (s.TCP && s.Acked < l.last.Acked) {
		l.started, l.lastAt, l.last = true, now, s
		l.sentMarks = append(l.sentMarks[:0], sentMark{now, s.Sent})
		return l.rate, false
	}
	dt := now.Sub(l.lastAt).Seconds()
	if dt <= 0 {
		return l.rate, false
	}
	var acked, stall float64
	var q time.Duration
	if s.TCP {
		acked = float64(s.Acked-l.last.Acked) / dt
		stall = (s.RwndLimited - l.last.RwndLimited).Seconds() / dt
		// The socket's smoothed RTT is no queue signal: with sparse or
		// paced traffic every segment waits for a delayed ACK (measured on
		// loopback: tcpi_rtt 5–29 ms over a 5 µs tcpi_min_rtt, no queue
		// anywhere), so only the probes measure the queue delay.
		l.st.MinRTT = s.MinRTT
	}
	fresh := l.probeFresh
	if fresh {
		q = max(q, l.probeQ)
		l.probeFresh = false
	}
	l.lastAt, l.last = now, s
	l.appLimited = l.floor > 0 && l.trafficRate(now, s.Sent) < l.floor
	// The largest acknowledged rate of the last second or so (a burst
	// acknowledged within one reading): the rate to start from when none
	// is learned yet, not the quiet reading after the burst.
	l.ackedMax = max(acked, l.ackedMax*math.Pow(0.5, dt/0.5))
	l.st.AckedBytesPerS, l.st.QueueDelay = acked, q
	l.st.QueueBytes = q.Seconds() * acked
	if s.Demand {
		l.demandAt = now
	}
	queue := q > l.targetAt(acked) || stall >= learnStall
	switch {
	case !l.oursLocked(now) || (fresh && !queue):
		l.ownSince = time.Time{}
	case queue && l.ownSince.IsZero():
		l.ownSince = now // the sender stalls before a probe comes back through the queue
	}
	if fresh {
		if q > l.targetAt(acked) {
			l.above++
		} else {
			l.above = 0
		}
	}
	l.linkRate = l.stalledRate(now, s)
	switch {
	case l.resume > 0: // draining
		if c := max(l.linkRate, l.linkEstimate(now)); c > 0 { // the link's rate, measured again: re-anchor
			l.resume = max(c*learnDecrease, l.floor)
			if r := max(c*learnDrain, l.floor); r < l.rate {
				// A new drain rate: whether it drains is judged by
				// probes sent from now on.
				l.rate = r
				l.qCut, l.cutAt = noDelay, now
			}
		}
		switch {
		case !queue && (fresh || (len(l.probes) == 0 && now.Sub(l.cutAt) > learnDrainMax) || now.Sub(l.cutAt) > learnDrainProbed):
			// A probe through the link found the queue gone (or, for a
			// device without a responder, the sender stopped stalling
			// learnDrainMax ago; with one, its probes may be stuck in the
			// queue being drained: wait for one, at most learnDrainProbed).
			l.rate, l.resume = l.resume, 0
			l.holdUntil = now.Add(learnHold)
		case !fresh || q <= 0 || l.probeSent.Before(l.cutAt):
			// A probe sent before the cut reports the queue as it was
			// then: nothing about the drain.
		case l.qCut == noDelay:
			l.qCut, l.qCutSent = q, l.probeSent // the first probe sent after the cut
		case l.probeSent.Sub(l.qCutSent) >= learnHold:
			span := l.probeSent.Sub(l.qCutSent)
			if (l.qCut - q).Seconds() >= learnDrainShrink*span.Seconds() {
				l.qCut, l.qCutSent = q, l.probeSent // draining: the next span starts here
				break
			}
			// Not draining: the link is slower than the drain rate. The
			// rate to resume at stays (the link's rate, when known,
			// re-anchors it above).
			l.rate = max(l.rate*learnDrain, l.floor)
			l.qCut, l.cutAt = noDelay, now
			l.st.Decreases++
		}
	case queue:
		if now.Before(l.holdUntil) || now.Sub(l.demandAt) > 2*learnHold || l.appLimited {
			// Held, or the gateway had nothing waiting for the link
			// lately, or its traffic stayed below the floor: the queue is
			// not ours (or a noisy reading: jitter, a loss repaired by a
			// retransmission timeout), and the acknowledged rate is the
			// traffic's, not the link's.
			break
		}
		if l.rate == 0 && stall < learnStall && l.above < 2 {
			// The first queue must show in two probes in a row (50 ms
			// apart while learning): one late probe on a loaded host is
			// no reason to start pacing a fast link.
			break
		}
		l.holdUntil = now.Add(learnHold)
		l.grown = 0
		if c := max(l.linkRate, l.linkEstimate(now)); c > 0 {
			// The sender stalled half of the last stallWindow (the queue
			// behind the socket is full), or the queue's slope gave the
			// link's own rate: drain at learnDrain × it, then resume just
			// below it.
			l.resume = max(c*learnDecrease, l.floor)
			l.rate = max(c*learnDrain, l.floor)
			l.qCut, l.cutAt = noDelay, now
			l.st.Decreases++
			break
		}
		base := l.rate
		if base == 0 {
			base = l.ackedMax // the first queue: what the link took while we pushed
		} else if stall >= learnStall && acked > 0 && acked < base {
			base = acked // stalls: what the link took
		}
		if base <= 0 {
			break // no rate known yet and nothing acknowledged (UDP: configured only)
		}
		l.rate = max(base*learnDecrease, l.floor)
		if q > 2*l.targetAt(acked) {
			// A deep queue: drain it at learnDrain × the rate until the delay is
			// back under the target, halving again each learnHold it
			// does not shrink by a quarter; then resume.
			l.resume = l.rate
			l.rate = max(base*learnDrain, l.floor)
			l.qCut, l.cutAt = noDelay, now
		}
		l.st.Decreases++
	case s.Demand && l.rate > 0 && (l.ceiling == 0 || l.rate < l.ceiling):
		g := learnGrowth * float64(int64(1)<<min(int64(l.grown/learnGrowthDoubling), 6))
		gdt := min(dt, 0.2) // after a gap without readings: no jump
		l.rate *= 1 + min(g, learnGrowthMax)*gdt
		l.grown += time.Duration(gdt * float64(time.Second))
		l.st.Increases++
	}
	if l.ceiling > 0 {
		l.rate = min(l.rate, l.ceiling)
	}
	l.st.RateBytesPerS = l.rate
	if l.rate != prev {
		l.rateAt = now
	}
	return l.rate, l.rate != prev
}

// stallWindow is the span over which a stalled link's rate is measured:
// long enough to hold several window updates (a receiver reopens its
// window by one MSS, 64 KiB on loopback: one update per 52 ms at 10
// Mbit/s, so a 50 ms reading may see none).
const stallWindow = 400 * time.Millisecond

// stalledRate records the reading and returns the acknowledged rate over
// the last stallWindow when the sender stalled on the receive window for
// at least half of it (the queue behind the socket is full: it takes what
// the link drains), else 0. Caller holds mu.
func (l *linkLearner) stalledRate(now time.Time, s linkSignal) float64 {
	if !s.TCP {
		return 0
	}
	l.hist = append(l.hist, learnReading{now, s.Acked, s.RwndLimited})
	i := 0
	for i < len(l.hist)-1 && now.Sub(l.hist[i+1].at) >= stallWindow {
		i++
	}
	l.hist = l.hist[i:]
	old := l.hist[0]
	dt := now.Sub(old.at)
	if dt < stallWindow/2 || s.Acked < old.acked {
		return 0
	}
	if float64(s.RwndLimited-old.rwnd) < 0.5*float64(dt) {
		return 0
	}
	return float64(s.Acked-old.acked) / dt.Seconds()
}

// trafficWindow is the span of the traffic rate that tells an app-limited
// device (trafficRate).
const trafficWindow = time.Second

type sentMark struct {
	at   time.Time
	sent uint64
}

// trafficRate records the reading's Sent and returns the bytes the lanes
// handed to the link over the last trafficWindow, per second of the window
// (the first window counts from the first reading: a start is not
// app-limited only because it is short). Below the floor
// (policy.link.min_bytes_per_s, the least learned rate) the traffic is
// app-limited: it cannot have built a queue that a learned rate would
// shorten, so what the probes show is the link's own delay (jitter, a loss
// repaired by a retransmission timeout, other traffic): no decrease and no
// extra probe — the BBR rule that app-limited samples lower no estimate
// (Cardwell et al. 2016). Measured: the demo's esp1 (3 Hz of 1.5 kB on
// linkemu "moderate"). Caller holds mu.
func (l *linkLearner) trafficRate(now time.Time, sent uint64) float64 {
	l.sentMarks = append(l.sentMarks, sentMark{now, sent})
	i := 0
	for i < len(l.sentMarks)-1 && now.Sub(l.sentMarks[i+1].at) >= trafficWindow {
		i++
	}
	l.sentMarks = l.sentMarks[i:]
	old := l.sentMarks[0]
	if sent < old.sent {
		return 0
	}
	return float64(sent-old.sent) / max(now.Sub(old.at), trafficWindow).Seconds()
}

// noDelay marks a drain whose queue no probe has measured yet.
const noDelay = time.Duration(1<<63 - 1)

type learnReading struct {
	at    time.Time
	acked uint64
	rwnd  time.Duration
}

// learnSlack is what an express probe may find in service on the link
// ahead of it, in bytes: 2 KiB, a paced chunk or a full-size critical
// sample. Its transmission time is no queue. (4 KiB left a standing queue
// of 5.3 ms at 10 Mbit/s: egressbench d p99 from 2 s 12–14 ms; 2 KiB:
// 9.9 ms, and the 2 Mbit/s overload test keeps 600/600.)
const learnSlack = 2048

// targetAt is the queue delay that counts as a queue: target_delay plus
// the time learnSlack takes at the rate (the learned one, else the
// acknowledged one): 0.16 ms at 100 Mbit/s, 1.6 ms at 10 Mbit/s, 8 ms at
// 2 Mbit/s, where one 1.5 kB sample already takes 6 ms. Caller holds mu.
func (l *linkLearner) targetAt(acked float64) time.Duration {
	r := l.rate
	if r <= 0 {
		r = max(acked, l.ackedMax)
	}
	if r <= 0 {
		return l.target
	}
	return l.target + time.Duration(learnSlack/r*float64(time.Second))
}

// learnFastProbe is the probe interval while the learner waits for a
// probe to act on: before the first queue (with demand) and while a queue
// drains. At the classifier's 5 Hz alone, the first queue is seen up to
// 200 ms late, which at 10 Mbit/s is two more 100 kB bursts in the
// bottleneck queue.
const learnFastProbe = 50 * time.Millisecond

// wantProbe: an extra probe would help now (learning or draining, the last
// one at least learnFastProbe ago); it records the probe as sent.
func (l *linkLearner) wantProbe(now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	learning := l.rate == 0 && !l.demandAt.IsZero() && now.Sub(l.demandAt) < time.Second && !l.appLimited
	if !(learning || l.resume > 0) || now.Sub(l.fastAt) < learnFastProbe {
		return false
	}
	l.fastAt = now
	return true
}

// idle: no rate is learned, nothing drains, and the last reading saw no
// queue, so a reading without new traffic can change nothing.
func (l *linkLearner) idle() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.resume == 0 && l.st.QueueDelay <= l.target && !l.probeFresh
}

// status is the learner's state for /devicez and the metrics.
func (l *linkLearner) status() LinkLearnStatus {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.st
}
