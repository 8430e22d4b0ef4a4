package linkemu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"time"
)

// verdict is the fate of a UDP datagram.
type verdict uint8

const (
	deliver   verdict = iota
	lost              // the Gilbert–Elliott chain lost it
	queueFull         // the bandwidth queue was over Config.QueueBytes
)

// link is one direction of the emulated link, shared by every connection
// or client mapping of a proxy (it is the device's one radio link): one
// Gilbert–Elliott chain, one delay random source, one transmitter. The
// models take the arrival time as an argument, so they are deterministic
// for a given seed and arrival sequence.
type link struct {
	dir Direction
	m   *Metrics

	mu     sync.Mutex
	im     Impairment
	ge     *Channel
	rng    *rand.Rand // delays
	sh     shaper
	rto    time.Duration
	srtt   time.Duration // the profile's mean round trip (RACK and TLP)
	repair Repair
	rtoMax time.Duration
	maxRtx int
	last   time.Time // latest release of an ordered datagram
	prev   time.Time // arrival of the previous TCP packet
	gap    float64   // EWMA of TCP packet inter-arrival times, ns (0: none yet)
	st     DirStats
}

// Random streams: each direction has one PCG stream for its chain and one
// for its delays, so that the loss sequence does not depend on the delay
// settings.
func geStream(d Direction) uint64    { return 2 * uint64(d) }
func delayStream(d Direction) uint64 { return 2*uint64(d) + 1 }

func newLink(dir Direction, seed uint64, queueBytes int, rtoMax time.Duration, maxRtx int, m *Metrics) *link {
	return &link{
		dir:    dir,
		m:      m,
		ge:     NewChannel(GE{}, seed, geStream(dir)),
		rng:    rand.New(rand.NewPCG(seed, delayStream(dir))),
		sh:     shaper{limit: queueBytes},
		rtoMax: rtoMax,
		maxRtx: maxRtx,
	}
}

// set applies a new impairment and returns the counters up to the switch.
// rto is the first retransmission timeout and srtt the mean round trip of
// the profile (RTOConfig.Timing).
func (l *link) set(im Impairment, rto, srtt time.Duration) DirStats {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.im = im
	l.ge.SetModel(im.Loss)
	l.sh.rate = im.Rate
	l.rto = rto
	l.srtt = srtt
	return l.st
}

// transmit steps the chain once and counts the transmission.
func (l *link) transmit() (wasLost bool) {
	l.st.Sent++
	if l.ge.State() == GEBad {
		l.st.BadSteps++
	}
	if l.ge.Step() {
		l.st.Lost++
		return true
	}
	return false
}

func (l *link) delay() time.Duration {
	return l.im.Delay.Sample(l.rng) + l.im.Extra.Sample(l.rng)
}

// datagram decides the fate of an n-byte UDP datagram arriving at now:
// queue (drop if full), serialization, GE loss, delay. With ordered, a
// datagram is never released before an earlier one.
func (l *link) datagram(now time.Time, n int, ordered bool) (time.Time, verdict) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.st.Packets++
	l.st.BytesIn += uint64(n)
	l.m.packet(l.dir, n)
	dep, ok := l.sh.reserve(now, n, true)
	if !ok {
		l.st.QueueDrops++
		l.st.Dropped++
		l.m.queueDrop(l.dir)
		return time.Time{}, queueFull
	}
	if l.transmit() {
		l.st.Dropped++
		l.m.loss(l.dir)
		l.m.geDrop(l.dir)
		return time.Time{}, lost
	}
	at := dep.Add(l.delay())
	if ordered {
		if at.Before(l.last) {
			at = l.last
		}
		l.last = at
	}
	return at, deliver
}

// segment schedules an n-byte unit of a TCP stream arriving at now and
// returns its release time, ignoring the order of its connection (the
// caller keeps that).
//
// The first transmission steps the chain. A lost transmission costs the
// time the sender takes to notice it (repairTime: about one round trip
// with Linux's RACK-TLP, an RTO otherwise) plus the time to send the unit
// again; a retransmission lost again costs the same, and each RTO taken
// doubles the next (capped at rtoMax); after maxRtx retransmissions the
// unit goes through (the emulator never aborts a connection). A
// retransmission happens after the link has carried about stall/gap other
// packets (gap: the mean inter-arrival time on this direction), so its
// state is drawn k = ceil(stall/gap) steps ahead of the original one
// (Channel.Ahead) rather than right after it (with no gap yet, or back
// to back on an unlimited link, from the stationary mix); the chain itself
// moves with first transmissions only.
func (l *link) segment(now time.Time, n int) time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.st.Packets++
	l.st.BytesIn += uint64(n)
	l.m.packet(l.dir, n)
	if !l.prev.IsZero() {
		const alpha = 1.0 / 8 // as TCP's srtt estimator
		g := float64(now.Sub(l.prev))
		if l.gap == 0 {
			l.gap = g
		} else {
			l.gap += alpha * (g - l.gap)
		}
	}
	l.prev = now
	dep, _ := l.sh.reserve(now, n, false) // TCP pushes back per connection instead
	if !l.transmit() {
		return dep.Add(l.delay())
	}
	l.st.Stalled++
	var stall time.Duration
	rto := l.rto
	state := l.ge.State() // after the lost transmission's step
	steps := 0            // steps of the chain since then
	for k := 0; ; k++ {
		l.st.Retransmits++
		l.m.loss(l.dir)
		wait, timedOut := l.repairTime(k, rto)
		if timedOut {
			l.st.Timeouts++
			rto = min(2*rto, l.rtoMax)
		} else {
			l.st.FastRepairs++
		}
		stall += wait + l.im.Rate.TxTime(n)
		// The retransmission: ceil(stall/gap) steps after the original.
		// Packets cannot follow each other faster than the link sends
		// them; back to back on an unlimited link, the chain has mixed.
		delta := math.MaxInt32
		if gap := max(l.gap, float64(l.im.Rate.TxTime(n))); gap > 0 {
			ahead := int(min(math.Ceil(float64(stall)/gap), math.MaxInt32))
			delta = max(1, ahead-steps)
			steps += delta
		}
		state = l.ge.Ahead(state, delta)
		l.st.Sent++
		if state == GEBad {
			l.st.BadSteps++
		}
		if k+1 == l.maxRtx { // give up emulating: this one goes through
			break
		}
		if !l.ge.LostIn(state) {
			break
		}
		l.st.Lost++
	}
	return dep.Add(stall + l.delay())
}

// Linux constants of the loss-detection model (include/net/tcp.h).
const (
	tcpTimeoutMin = 2 * time.Millisecond // TCP_TIMEOUT_MIN: the TLP slack with more than one packet in flight
)

// repairTime is how long after its k-th transmission (k = 0: the first)
// was lost the sender sends the unit again, and whether it took a
// retransmission timeout (which backs the next one off).
//
// RepairRTO: always rto, the model of the evaluation's first two
// editions.
//
// RepairLinux, Linux's defaults since 4.18 (net.ipv4.tcp_sack=1,
// tcp_recovery=1: RACK, tcp_early_retrans=3: TLP; RFC 8985), the model
// looking ahead by the mean inter-arrival time gap rather than by the
// packets to come:
//
//   - RACK: the next unit, sent gap later, is SACKed one round trip after
//     it left; the lost unit is marked lost then, but no earlier than
//     srtt + reo_wnd after it left (reo_wnd = min_rtt/4, taken as
//     srtt/4): wait = srtt + max(gap, srtt/4). This needs the next unit
//     to be sent before the timers below fire, and (RACK detecting lost
//     retransmissions by their send time) holds for retransmissions too.
//   - TLP, for a first transmission with nothing sent after it in time:
//     a probe at PTO = 2·srtt + TCP_TIMEOUT_MIN, or 2·srtt + TCP_RTO_MIN
//     when the unit was alone in flight (gap ≥ srtt), but never later than
//     the RTO (tcp_schedule_loss_probe). The probe resends the tail unit,
//     which is the lost one.
//   - Otherwise the RTO, doubling.
//
// srtt is the profile's mean round trip (RTOConfig.Timing). A sender that
// is application-limited with a gap longer than the timers is repaired by
// TLP or RTO alone, as the kernel does.
func (l *link) repairTime(k int, rto time.Duration) (wait time.Duration, timedOut bool) {
	if l.repair == RepairRTO || l.srtt <= 0 {
		return rto, true
	}
	srtt := l.srtt
	gap := time.Duration(l.gap)
	pto := 2*srtt + tcpTimeoutMin
	if gap <= 0 || gap >= srtt {
		pto = 2*srtt + DefaultRTOMin
	}
	limit := rto // the timer that fires first
	if k == 0 {
		limit = min(pto, rto)
	}
	if gap > 0 {
		if rack := srtt + max(gap, srtt/4); gap+srtt < limit {
			return rack, false
		}
	}
	if k == 0 && pto < rto {
		return pto, false
	}
	return rto, true
}

// delivered counts a packet handed to the receiver with its scheduled
// added delay.
func (l *link) delivered(n int, added time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.st.Delivered++
	l.st.BytesOut += uint64(n)
	if added > 0 {
		l.st.Delayed++
		l.st.AddedDelaySum += added
		l.st.AddedDelayMax = max(l.st.AddedDelayMax, added)
	}
	l.m.delivered(l.dir, n, added)
}

func (l *link) snapshot() DirStats {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.st
}

// RTOConfig is the retransmission-timeout model of the TCP proxy. The
// defaults follow Linux (include/net/tcp.h).
type RTOConfig struct {
	// Min is the lower bound of the variance term, TCP_RTO_MIN (200 ms).
	Min time.Duration
	// Max caps the backed-off RTO, TCP_RTO_MAX (120 s).
	Max time.Duration
	// Initial, if > 0, is used as the first RTO instead of the estimate
	// from the profile.
	Initial time.Duration
	// MaxRetransmits bounds consecutive retransmissions of one unit, like
	// net.ipv4.tcp_retries2 (15); the emulator then delivers the unit.
	MaxRetransmits int
	// Repair is how a lost segment is noticed: RepairLinux (the default:
	// RACK and TLP, about one round trip) or RepairRTO (a timeout each
	// time).
	Repair Repair
}

// Repair is the loss-detection model of the TCP proxy.
type Repair uint8

const (
	// RepairLinux repairs a loss as Linux does by default: RACK marks it
	// lost about one round trip after it left when a later segment is
	// SACKed, a tail loss probe (TLP) resends a lost tail segment after
	// 2·srtt, the RTO is the last resort (link.repairTime). The default.
	RepairLinux Repair = iota
	// RepairRTO waits one retransmission timeout for every loss, the
	// model of the evaluation's first two editions (pessimistic for
	// streams with packets after the lost one).
	RepairRTO
)

func (r Repair) String() string {
	if r == RepairRTO {
		return "rto"
	}
	return "linux"
}

// ParseRepair accepts "linux" and "rto".
func ParseRepair(s string) (Repair, error) {
	switch s {
	case "linux":
		return RepairLinux, nil
	case "rto":
		return RepairRTO, nil
	}
	return 0, fmt.Errorf("unknown TCP repair model %q (allowed: linux, rto)", s)
}

// Defaults of RTOConfig.
const (
	DefaultRTOMin         = 200 * time.Millisecond // Linux TCP_RTO_MIN
	DefaultRTOMax         = 120 * time.Second      // Linux TCP_RTO_MAX
	DefaultMaxRetransmits = 15                     // Linux net.ipv4.tcp_retries2
)

func (c RTOConfig) withDefaults() RTOConfig {
	if c.Min <= 0 {
		c.Min = DefaultRTOMin
	}
	if c.Max <= 0 {
		c.Max = DefaultRTOMax
	}
	if c.MaxRetransmits <= 0 {
		c.MaxRetransmits = DefaultMaxRetransmits
	}
	return c
}

// RTO is the first retransmission timeout for a profile, as Linux computes
// it once its estimator has converged (tcp_set_rto: srtt + rttvar, where
// rttvar is 4·mdev but at least TCP_RTO_MIN):
//
//	RTO = srtt + max(Min, 4·σ)
//
// with srtt the mean round trip of the profile (both directions' mean
// delays, the probe-return delay included) and σ the standard deviation
// of the round trip (the directions' delay deviations added in quadrature;
// 4·σ stands in for Linux's 4·mdev). The result is capped at Max.
func (c RTOConfig) RTO(p Profile) time.Duration {
	c = c.withDefaults()
	if c.Initial > 0 {
		return min(c.Initial, c.Max)
	}
	srtt := c.SRTT(p)
	var v float64
	for _, j := range []Jitter{p.ToDevice.Delay, p.ToDevice.Extra, p.ToGateway.Delay, p.ToGateway.Extra} {
		v += float64(j.SD) * float64(j.SD)
	}
	rttvar := time.Duration(4 * math.Sqrt(v))
	return min(srtt+max(c.Min, rttvar), c.Max)
}

// SRTT is the profile's mean round trip: both directions' mean delays
// (the probe-return delay included), as Linux's srtt converges to it.
func (c RTOConfig) SRTT(p Profile) time.Duration {
	return p.ToDevice.MeanDelay() + p.ToGateway.MeanDelay()
}
