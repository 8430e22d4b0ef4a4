package bridge

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/probe"
)

// simLink is a synthetic bottleneck for the learner, in synthetic time: a
// rate in bytes/s and a bounded FIFO. Like eval/linkemu, its queue sits
// behind the point where TCP acknowledges (bytes are acknowledged when the
// queue takes them; a full queue stalls the sender on the receive window),
// so only the probes see the queue until it is full.
type simLink struct {
	rate, queue, qmax float64
	acked             uint64
	stalled           time.Duration
	base              time.Duration // RTT without a queue
}

// step offers want bytes over dt; it returns the bytes taken.
func (k *simLink) step(want float64, dt time.Duration) float64 {
	k.queue = max(0, k.queue-k.rate*dt.Seconds())
	take := min(want, k.qmax-k.queue)
	if want > 0 && take < want {
		k.stalled += time.Duration(float64(dt) * (1 - take/want))
	}
	k.queue += take
	k.acked += uint64(take)
	return take
}

func (k *simLink) delay() time.Duration {
	return time.Duration(k.queue / k.rate * float64(time.Second))
}

func (k *simLink) signal(demand bool) linkSignal {
	return linkSignal{TCP: true, Acked: k.acked, Sent: k.acked, RwndLimited: k.stalled, MinRTT: k.base, Demand: demand}
}

// run drives a learner against k for d with an always-backlogged sender
// (unpaced: it offers twice the link), 1 ms steps, readings every 50 ms,
// probes every 200 ms (the classifier's) and the extra ones the learner
// asks for after a reading; at each step it calls at (for rate steps). It
// returns the delays the 200 ms probes saw (the queue an express sample
// meets) and
// the bytes delivered, per second of the run.
func run(t *testing.T, l *linkLearner, k *simLink, d time.Duration, at func(time.Duration)) (delays []time.Duration, perSec []float64) {
	t.Helper()
	t0 := time.Unix(0, 0)
	const dt = time.Millisecond
	sec := 0.0
	// A probe waits the queue it was sent into: its pong comes back that
	// much later (FIFO), reporting the queue as it was at the send.
	var pongs []timedRTT // by arrival time
	ping := func(now time.Time) {
		rtt := k.base + k.delay()
		pongs = append(pongs, timedRTT{now.Add(rtt), rtt})
	}
	for e := time.Duration(0); e < d; e += dt {
		if at != nil {
			at(e)
		}
		now := t0.Add(e)
		for len(pongs) > 0 && !pongs[0].at.After(now) {
			l.probe(pongs[0].rtt, now)
			pongs = pongs[1:]
		}
		want := offered(l, k, dt)
		if e%(200*time.Millisecond) == 0 {
			ping(now)
			delays = append(delays, k.delay())
		}
		before := k.queue
		take := k.step(want, dt)
		sec += min(before+take, k.rate*dt.Seconds()) // drained toward the device
		if e%(50*time.Millisecond) == 0 {
			l.update(now, k.signal(true))
			if l.wantProbe(now) { // as Device.learnLink: faster feedback
				ping(now)
			}
		}
		if (e+dt)%time.Second == 0 {
			perSec = append(perSec, sec)
			sec = 0
		}
	}
	return delays, perSec
}

// offered is what the synthetic sender offers the link over dt: the
// learned rate, or twice the link while unpaced (always backlogged).
func offered(l *linkLearner, k *simLink, dt time.Duration) float64 {
	if l.rate > 0 {
		return l.rate * dt.Seconds()
	}
	return 2 * k.rate * dt.Seconds()
}

func p99(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[int(0.99*float64(len(s)-1))]
}

// On a 100 Mbit/s link whose 256 KiB queue only the probes see (as
// through eval/linkemu), an always-backlogged sender starts unpaced, fills
// the queue once, then settles: from the 3rd second the probes' queue
// delay stays ≤ 5 ms at the 99th percentile and the link is ≥ 90 % used.
func TestLinkLearnerSettlesBelowTheLink(t *testing.T) {
	l := &linkLearner{}
	l.configure(2*time.Millisecond, 16384, 0)
	k := &simLink{rate: 12.5e6, qmax: 256 << 10, base: 500 * time.Microsecond}
	delays, perSec := run(t, l, k, 10*time.Second, nil)
	steady := delays[15:] // from 3 s
	require.LessOrEqual(t, p99(steady), 5*time.Millisecond)
	for i, b := range perSec[3:] {
		require.GreaterOrEqual(t, b, 0.9*k.rate, "second %d", i+3)
	}
	require.InDelta(t, k.rate, l.status().RateBytesPerS, 0.15*k.rate)
	require.Positive(t, l.status().Decreases)
	require.Positive(t, l.status().Increases)
}

// At 10 Mbit/s (egressbench d's link) with the same 256 KiB queue: from
// the 2nd second the probes' queue delay stays ≤ 10 ms at the 99th
// percentile (issue 30's goal there) and the link is ≥ 90 % used. (Two
// probes in a row above the target before every decrease, not only the
// first, gave 13 ms.)
func TestLinkLearnerSettles10Mbit(t *testing.T) {
	l := &linkLearner{}
	l.configure(2*time.Millisecond, 16384, 0)
	k := &simLink{rate: 1.25e6, qmax: 256 << 10, base: 500 * time.Microsecond}
	delays, perSec := run(t, l, k, 20*time.Second, nil)
	require.LessOrEqual(t, p99(delays[10:]), 10*time.Millisecond)
	for i, b := range perSec[2:] {
		require.GreaterOrEqual(t, b, 0.9*k.rate, "second %d", i+2)
	}
}

// A rate step 100 → 10 Mbit/s: within 2 s the probes' queue delay is back
// under 10 ms and stays there; the learned rate follows the link down.
func TestLinkLearnerFollowsRateStep(t *testing.T) {
	l := &linkLearner{}
	l.configure(2*time.Millisecond, 16384, 0)
	k := &simLink{rate: 12.5e6, qmax: 256 << 10, base: 500 * time.Microsecond}
	delays, perSec := run(t, l, k, 10*time.Second, func(e time.Duration) {
		if e == 5*time.Second {
			k.rate = 1.25e6
		}
	})
	after := delays[(5+2)*5:] // probes from 2 s after the step
	require.LessOrEqual(t, slices.Max(after), 10*time.Millisecond)
	require.InDelta(t, 1.25e6, l.status().RateBytesPerS, 0.2*1.25e6)
	for i, b := range perSec[7:] {
		require.GreaterOrEqual(t, b, 0.9*k.rate, "second %d", i+7)
	}
}

// A configured budget is an upper bound: the learned rate starts there
// and never exceeds it; below it, a slower link (4 Mbit/s) still pulls it
// down.
func TestLinkLearnerCeiling(t *testing.T) {
	l := &linkLearner{}
	l.configure(2*time.Millisecond, 16384, 1e6)
	require.Equal(t, 1e6, l.status().RateBytesPerS)
	k := &simLink{rate: 12.5e6, qmax: 256 << 10, base: 500 * time.Microsecond}
	run(t, l, k, 3*time.Second, nil)
	require.Equal(t, 1e6, l.status().RateBytesPerS)
	k = &simLink{rate: 0.5e6, qmax: 256 << 10, base: 500 * time.Microsecond}
	delays, _ := run(t, l, k, 10*time.Second, nil)
	require.Less(t, l.status().RateBytesPerS, 1.05*0.5e6)
	// At 4 Mbit/s the target is 2 ms + 4 KiB at the rate (8.2 ms).
	require.LessOrEqual(t, p99(delays[25:]), 15*time.Millisecond)
}

// Without TCP_INFO and probes (a UDP link without a responder) nothing
// is learned: the link stays unpaced. A queue seen while the gateway had
// nothing waiting for the link is not ours: no decrease.
func TestLinkLearnerNoEvidence(t *testing.T) {
	l := &linkLearner{}
	l.configure(2*time.Millisecond, 16384, 0)
	t0 := time.Unix(0, 0)
	for i := range 100 {
		r, changed := l.update(t0.Add(time.Duration(i)*50*time.Millisecond), linkSignal{Demand: true})
		require.Zero(t, r)
		require.False(t, changed)
	}
	l = &linkLearner{}
	l.configure(2*time.Millisecond, 16384, 0)
	s := linkSignal{TCP: true, Acked: 1000}
	l.update(t0, s)
	l.probe(time.Millisecond, t0)
	l.probe(50*time.Millisecond, t0.Add(10*time.Millisecond))
	s.Acked += 50000
	r, _ := l.update(t0.Add(50*time.Millisecond), s) // no demand: not ours
	require.Zero(t, r)
	require.Zero(t, l.status().Decreases)
	require.Equal(t, 49*time.Millisecond, l.status().QueueDelay)
}

// The first queue seen with demand, in two probes in a row: 2 MB/s
// acknowledged (50 kB in 25 ms) and a 49 ms queue (deeper than twice the
// target): a drain at learnDrain (a tenth) of it; a reading within
// learnHold cuts nothing more; once a probe is back under the target the
// rate is 90 % of what the link acknowledged.
func TestLinkLearnerFirstQueueDrains(t *testing.T) {
	l := &linkLearner{}
	l.configure(2*time.Millisecond, 16384, 0)
	t0 := time.Unix(0, 0)
	s := linkSignal{TCP: true, Acked: 1000, Sent: 1000, Demand: true}
	l.update(t0, s)
	l.probe(time.Millisecond, t0)
	l.probe(50*time.Millisecond, t0.Add(20*time.Millisecond))
	r, _ := l.update(t0.Add(25*time.Millisecond), s)
	require.Zero(t, r, "one probe above the target is not enough to start pacing")
	l.probe(50*time.Millisecond, t0.Add(40*time.Millisecond))
	s.Acked += 50000
	s.Sent += 50000
	r, changed := l.update(t0.Add(50*time.Millisecond), s)
	require.True(t, changed)
	require.InDelta(t, 0.2e6, r, 1)
	s.Acked += 25000
	s.Sent += 25000
	l.probe(40*time.Millisecond, t0.Add(90*time.Millisecond)) // shrinking: no cut
	r, _ = l.update(t0.Add(100*time.Millisecond), s)
	require.InDelta(t, 0.2e6, r, 1)
	s.Acked += 25000
	s.Sent += 25000
	l.probe(2*time.Millisecond, t0.Add(140*time.Millisecond))
	r, _ = l.update(t0.Add(150*time.Millisecond), s)
	require.InDelta(t, 1.8e6, r, 1)
	require.Equal(t, uint64(1), l.status().Decreases)
	require.Equal(t, time.Millisecond, l.status().ProbeMinRTT)
}

// Extra probes: none before any demand, nor while the traffic of the last
// second is below the floor; every learnFastProbe while no rate is learned
// and the gateway has bytes waiting; none once a rate is learned without a
// drain.
func TestLinkLearnerWantsProbes(t *testing.T) {
	l := &linkLearner{}
	l.configure(2*time.Millisecond, 16384, 0)
	t0 := time.Unix(0, 0)
	require.False(t, l.wantProbe(t0), "no demand yet")
	s := linkSignal{TCP: true, Acked: 1, Demand: true}
	l.update(t0, s)
	l.update(t0.Add(5*time.Millisecond), s)
	require.False(t, l.wantProbe(t0.Add(5*time.Millisecond)), "traffic below the floor")
	s.Sent = 16384 // a second's floor
	l.update(t0.Add(10*time.Millisecond), s)
	require.True(t, l.wantProbe(t0.Add(10*time.Millisecond)))
	require.False(t, l.wantProbe(t0.Add(40*time.Millisecond)), "within learnFastProbe")
	require.True(t, l.wantProbe(t0.Add(60*time.Millisecond)))
	l.configure(2*time.Millisecond, 16384, 1e6) // a rate (the ceiling), no drain
	require.False(t, l.wantProbe(t0.Add(200*time.Millisecond)))
}

// lossyLink is the demo's impaired esp1 link (eval/linkemu profile
// "moderate") in synthetic time: no rate limit, 40 ms to the device and
// 60 ms back with 15 ms of jitter each way, and a lost unit costs a
// retransmission timeout (300 ms, doubling while the retransmission is
// lost too) during which everything behind it waits (head-of-line), as
// linkemu repairs every loss. TCP acknowledges each unit at once (linkemu
// is a proxy), so only the probes see the delay.
type lossyLink struct {
	rng     *rand.Rand
	loss    float64
	release time.Time // the last unit's arrival at the device
	units   int       // units sent toward the device
	stalls  int       // units whose first transmission was lost
}

// send puts one unit on the link at now and returns its arrival at the
// device.
func (k *lossyLink) send(now time.Time) time.Time {
	k.units++
	at := now.Add(40*time.Millisecond + time.Duration(k.rng.NormFloat64()*float64(15*time.Millisecond)))
	if k.rng.Float64() < k.loss {
		k.stalls++
		for rto := 300 * time.Millisecond; ; rto *= 2 {
			at = at.Add(rto)
			if k.rng.Float64() >= k.loss {
				break
			}
		}
	}
	if at.Before(k.release) {
		at = k.release // in order: behind the unit before it
	}
	k.release = at
	return at
}

// The demo's esp1 (issue 30: with learn on, p99 1.29–1.49 s instead of
// 0.67–0.71 s and full-ring drops): demoted to NONCRITICAL, it gets a
// 1.5 kB /scan sample at 3 Hz (4.6 kB/s, below policy.link.min_bytes_per_s)
// through the batched lane, so at most readings a sample waits for the
// 50 ms flush (demand). The link's jitter and its RTO stalls put every
// probe 10–2000 ms above the probes' minimum: the learner took that for
// a queue it built, never left learning, and asked for an extra probe
// every 50 ms for the whole run — 20 more packets a second on a link
// where each packet is lost with 5 % and then stalls everything behind it
// for ≥ 300 ms — and, after a stall, paced at 0.9 × the traffic's own
// rate. Traffic below the floor cannot be what fills a queue the learned
// rate could shorten (the rate never goes below the floor): no extra
// probes and no decrease, the link stays unpaced as with estimate: off.
func TestLinkLearnerAppLimitedLossyLink(t *testing.T) {
	l := &linkLearner{}
	l.configure(2*time.Millisecond, 16384, 0)
	k := &lossyLink{rng: rand.New(rand.NewPCG(7, 30)), loss: 0.054}
	t0 := time.Unix(0, 0)
	const sample = 1504 + 16 + 4 // /scan and its MessageOverhead
	var acked, sent uint64
	var pending bool
	extra := 0
	var pongs []timedRTT // answers in flight: at is their arrival
	ping := func(now time.Time) {
		back := k.send(now).Add(60*time.Millisecond + time.Duration(k.rng.NormFloat64()*float64(15*time.Millisecond)))
		if back.Before(now.Add(time.Millisecond)) {
			back = now.Add(time.Millisecond)
		}
		if n := len(pongs); n > 0 && back.Before(pongs[n-1].at) {
			back = pongs[n-1].at // the way back is in order too
		}
		pongs = append(pongs, timedRTT{back, back.Sub(now)})
	}
	for e := time.Duration(0); e < 60*time.Second; e += time.Millisecond {
		now := t0.Add(e)
		if e%(333*time.Millisecond) == 0 {
			pending = true // a sample admitted by the 3 Hz bucket, flushed at the next tick
		}
		if e%(50*time.Millisecond) == 0 {
			l.update(now, linkSignal{TCP: true, Acked: acked, Sent: sent, Demand: pending})
			if l.wantProbe(now) {
				extra++
				ping(now)
			}
		}
		if e%(50*time.Millisecond) == 25*time.Millisecond && pending { // the flush: 2 units (1 KiB batches)
			k.send(now)
			k.send(now)
			acked += sample
			sent += sample
			pending = false
		}
		if e%(200*time.Millisecond) == 0 { // the classifier's probe
			ping(now)
		}
		for len(pongs) > 0 && !pongs[0].at.After(now) {
			l.probe(pongs[0].rtt, now)
			pongs = pongs[1:]
		}
	}
	require.Positive(t, k.stalls, "the link stalled")
	require.Zero(t, extra, "extra probes (the classifier's: 300)")
	require.Zero(t, l.status().Decreases)
	require.Zero(t, l.status().RateBytesPerS)
}

// A rate step 100 → 10 Mbit/s into a deep queue: 1.5 MB behind the point
// where TCP acknowledges (eval/linkemu's 256 KiB queue plus the socket
// receive buffer in front of it, ≈ 1.2 s at 10 Mbit/s). A probe through
// it reports the queue it was sent into a second later, so the drain must
// judge progress by the probes' send times: the learner drains the queue
// and settles near the new link rate instead of cutting itself to the
// floor (issue 30: it did, 16 kB/s within 1.6 s of the step, and the bulk
// lane starved). From 3 s after the step the probes' queue delay is back
// under 10 ms and the link is ≥ 80 % used.
func TestLinkLearnerRateStepDeepQueue(t *testing.T) {
	l := &linkLearner{}
	l.configure(2*time.Millisecond, 16384, 0)
	k := &simLink{rate: 12.5e6, qmax: 1.5e6, base: 500 * time.Microsecond}
	delays, perSec := run(t, l, k, 14*time.Second, func(e time.Duration) {
		if e == 6*time.Second {
			k.rate = 1.25e6
		}
	})
	require.LessOrEqual(t, slices.Max(delays[(6+3)*5:]), 10*time.Millisecond)
	require.InDelta(t, 1.25e6, l.status().RateBytesPerS, 0.2*1.25e6)
	for i, b := range perSec[9:] {
		require.GreaterOrEqual(t, b, 0.8*k.rate, "second %d", i+9)
	}
}

// ownQueueRun drives a classifier (default configuration, no dwell) and a
// learner together against k for d, as the gateway does: pings at 5 Hz and
// the extra ones the learner asks for, each answered after the queue it
// was sent into; readings every 50 ms (with HoldLoss while the learner
// reports its own queue, as Device.learnLink); an evaluation every second.
// With excuse false the classifier is fed as before issue 30's fix (no own
// queue taken off, no hold). It returns the classifier's state from
// readings just before stepAt and its transitions.
func ownQueueRun(t *testing.T, k *simLink, d, stepAt time.Duration, at func(time.Duration), excuse bool) (Class, []Transition) {
	t.Helper()
	t0 := time.Unix(0, 0)
	cfg := DefaultConfig().Classifier
	cfg.Dwell = 0
	c := NewClassifier(cfg, t0)
	l := &linkLearner{}
	l.configure(2*time.Millisecond, 16384, 0)
	type pong struct {
		at time.Time
		b  []byte
	}
	var pongs []pong
	var before Class
	ping := func(now time.Time) {
		p, err := probe.Respond(c.Ping(now), 0, 0)
		require.NoError(t, err)
		pongs = append(pongs, pong{now.Add(k.base + k.delay()), p})
	}
	const dt = time.Millisecond
	for e := time.Duration(0); e < d; e += dt {
		if at != nil {
			at(e)
		}
		now := t0.Add(e)
		for len(pongs) > 0 && !pongs[0].at.After(now) {
			own := func(rtt time.Duration) time.Duration { return l.probe(rtt, now) }
			if !excuse {
				own = func(rtt time.Duration) time.Duration { l.probe(rtt, now); return 0 }
			}
			_, _ = c.PongOwn(pongs[0].b, now, own) // a late pong is an error, counted lost
			pongs = pongs[1:]
		}
		want := offered(l, k, dt)
		if e%(200*time.Millisecond) == 0 {
			ping(now)
		}
		k.step(want, dt)
		if e%(50*time.Millisecond) == 0 {
			l.update(now, k.signal(true))
			if excuse && l.ownQueue(now) {
				c.HoldLoss(now.Add(100 * time.Millisecond))
			}
			if l.wantProbe(now) {
				ping(now)
			}
		}
		if e > 0 && e%time.Second == 0 {
			c.Evaluate(now)
		}
		if e == stepAt-dt {
			before = c.Status().State
		}
	}
	return before, c.Status().History
}

// A rate step the learner drains is no bad device (issue 30): through a
// step 100 → 10 Mbit/s into a deep queue (1.5 MB, ≈ 1.2 s at the new
// rate), the classifier keeps the device CRITICAL, because the probes'
// wait in the gateway's own queue is taken off their RTT and no ping
// waiting in it is counted lost. Fed as before the fix, the same run
// demotes the device. A link that cannot carry what the gateway sends
// (below the learner's floor) still demotes it once the own queue is
// older than ownQueueMax.
func TestClassifierOwnQueue(t *testing.T) {
	step := func(k *simLink, to float64) func(time.Duration) {
		return func(e time.Duration) {
			if e == 15*time.Second {
				k.rate = to
			}
		}
	}
	deep := func() *simLink { return &simLink{rate: 12.5e6, qmax: 1.5e6, base: 500 * time.Microsecond} }

	k := deep()
	before, tr := ownQueueRun(t, k, 30*time.Second, 15*time.Second, step(k, 1.25e6), true)
	require.Equal(t, ClassCritical, before, "CRITICAL before the step")
	require.Empty(t, tr, "no demotion through the step")

	k = deep()
	before, tr = ownQueueRun(t, k, 30*time.Second, 15*time.Second, step(k, 1.25e6), false)
	require.Equal(t, ClassCritical, before)
	require.NotEmpty(t, tr)
	require.Equal(t, ClassNoncritical, tr[0].To, "without the fix the step demotes: %+v", tr)

	k = deep()
	before, tr = ownQueueRun(t, k, 40*time.Second, 15*time.Second, step(k, 8e3), true)
	require.Equal(t, ClassCritical, before)
	require.NotEmpty(t, tr)
	require.Equal(t, ClassNoncritical, tr[0].To, "a link below the floor is a bad link: %+v", tr)
	require.Less(t, tr[0].At.Sub(time.Unix(15, 0)), ownQueueMax+10*time.Second)
}
