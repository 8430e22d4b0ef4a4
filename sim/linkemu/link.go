package linkemu

import (
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
func (l *link) set(im Impairment, rto time.Duration) DirStats {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.im = im
	l.ge.SetModel(im.Loss)
	l.sh.rate = im.Rate
	l.rto = rto
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
// The first transmission steps the chain. Each loss costs one RTO, which
// doubles for each further loss of the same unit (capped at rtoMax), plus
// the time to send the unit again; after maxRtx retransmissions the unit
// goes through (the emulator never aborts a connection). A retransmission
// happens an RTO later, after the link has carried about RTO/gap other
// packets (gap: the mean inter-arrival time on this direction), so its
// state is drawn k = ceil(elapsed/gap) steps ahead of the original one
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
		stall += rto + l.im.Rate.TxTime(n)
		rto = min(2*rto, l.rtoMax)
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
	srtt := p.ToDevice.MeanDelay() + p.ToGateway.MeanDelay()
	var v float64
	for _, j := range []Jitter{p.ToDevice.Delay, p.ToDevice.Extra, p.ToGateway.Delay, p.ToGateway.Extra} {
		v += float64(j.SD) * float64(j.SD)
	}
	rttvar := time.Duration(4 * math.Sqrt(v))
	return min(srtt+max(c.Min, rttvar), c.Max)
}
