package bridge

import (
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"time"

	"github.com/picobridge/picobridge/probe"
)

// The probe classifier's side of the gateway (architecture.md, the probe
// classifier): the probe tick that pings devices in turn within the probe
// budget, pongs back to their device's classifier, and the 1 Hz evaluation
// that turns RTT and loss into a class and the lanes' rates. The probe
// protocol itself (keys, payload, window maths) is package probe.

// probeTick is the period of the probe tick: probes are spread over the
// probe interval in ten slices, not sent to the whole fleet at once.
func probeTick(interval time.Duration) time.Duration { return max(interval/10, time.Millisecond) }

// ProbeRate is how many pings per second the gateway sends over n devices:
// one per device per classifier.probe_interval, at most
// classifier.probe_budget per core (GOMAXPROCS).
func (g *Gateway) ProbeRate(n int) float64 {
	cl := g.cfg.Classifier
	r := float64(n) / cl.ProbeInterval.Seconds()
	if cl.ProbeBudget > 0 {
		r = min(r, cl.ProbeBudget*float64(runtime.GOMAXPROCS(0)))
	}
	return r
}

// probeSome is the probe tick: it pings the next devices in turn, as many
// as ProbeRate allows in one tick, so every device is probed once per
// probe_interval while the fleet fits the probe budget, and less often,
// evenly, beyond it.
func (g *Gateway) probeSome(now time.Time, tick time.Duration) {
	ds := *g.devices.Load()
	if len(ds) == 0 {
		return
	}
	g.probeCarry += g.ProbeRate(len(ds)) * tick.Seconds()
	k := int(g.probeCarry)
	g.probeCarry -= float64(k)
	k = min(k, len(ds))
	for range k {
		g.probeNext %= len(ds)
		ds[g.probeNext].probe(now)
		g.probeNext++
	}
}

// evaluateAll runs every device's classifier evaluation (the 1 Hz tick),
// or, while the gateway-health guard finds the gateway's own lag, CPU
// steal or load too high, suspends it for every device.
func (g *Gateway) evaluateAll(now time.Time) {
	lag := max(g.wakeLag.swap(), g.sched.lagSwap())
	ds := g.Devices()
	guard := g.guard.observe(now, lag, g.windowSpan(len(ds)))
	for _, d := range ds {
		if why := d.evaluate(now, guard); why != "" {
			g.guard.counted(why)
		}
	}
}

// windowSpan is how long the classifier window takes to fill with new
// probes at the current probe rate, plus the probe timeout.
func (g *Gateway) windowSpan(n int) time.Duration {
	cl := g.cfg.Classifier
	per := cl.ProbeInterval
	if r := g.ProbeRate(n); r > 0 && n > 0 {
		per = max(per, time.Duration(float64(n)/r*float64(time.Second)))
	}
	return time.Duration(cl.Window)*per + cl.ProbeTimeout
}

// HandlePong takes a publication on a probe pong key (PongSubscription) and
// gives it to the device it names.
func (g *Gateway) HandlePong(key string, payload []byte) error {
	name, kind, ok := probe.ParseKey(key)
	if !ok || kind != probe.Pong {
		return fmt.Errorf("bridge: %q is not a pong key", key)
	}
	var d *Device
	for _, x := range *g.devices.Load() {
		if p := x.probeName.Load(); p != nil && *p == name {
			d = x
			break
		}
	}
	if d == nil {
		return fmt.Errorf("bridge: pong from unknown device %q", name)
	}
	now := g.clock.Now()
	var own func(time.Duration) time.Duration
	if g.cfg.Policy.Link.Estimate == LinkEstimateLearn {
		// The learned budget takes the whole round trip of every pong of
		// a ping of ours, late ones too (device time excluded): the queue
		// the gateway's own bytes built counts. The classifier leaves out
		// the part the learner calls the gateway's own.
		own = func(rtt time.Duration) time.Duration { return d.learn.probe(rtt, now) }
	}
	_, err := d.Classifier().PongOwn(payload, now, own)
	return err
}

// refreshClass applies a change of effective class to the lanes' rates.
func (d *Device) refreshClass(now time.Time) {
	c := d.Classifier().Class()
	d.mu.Lock()
	changed := Class(d.class.Swap(uint32(c))) != c
	eg, conf := d.eg, d.conf
	d.mu.Unlock()
	if changed {
		eg.setBatchedRate(d.batchedRate(conf, c), now)
		d.lane.notify() // a replay's next token comes at the new rate
	}
}

// probe sends one ping to a device whose responder subscribed to its ping
// key; a device without a responder is not probed and stays UNKNOWN.
func (d *Device) probe(now time.Time) {
	name := d.probeName.Load()
	if name == nil {
		return
	}
	d.sendProbe(d.egress(), *name, now)
}

// sendProbe records a ping with the classifier and hands it to the sink.
func (d *Device) sendProbe(eg *egress, name string, now time.Time) {
	ping := d.Classifier().PingAfter(now, d.link.pingDelay(now))
	eg.stats.probes.Add(1)
	if err := d.sink.SendProbe(probe.PingKey(name), ping); err != nil && !errors.Is(err, ErrCongested) {
		eg.log.once(LaneExpress, DropCongestion, "probe not sent", slog.Any("err", err))
	}
}

// evaluate runs the device's classifier evaluation under the guard's
// verdict and returns the reason it was suspended (empty: applied, or no
// responder).
func (d *Device) evaluate(now time.Time, guard Guard) string {
	d.estimateLink(now)
	if d.probeName.Load() == nil {
		return "" // no responder: no readings, the class stays UNKNOWN (or the override)
	}
	cls := d.Classifier()
	if d.g.cfg.Classifier.TCPInfo {
		if ti, ok := d.sink.(TCPInfoSource); ok {
			if info, err := ti.TCPInfo(); err == nil {
				cls.ObserveTCP(info)
			}
		}
	}
	_, why := cls.EvaluateGuarded(now, guard)
	if why == "" {
		d.refreshClass(now)
	}
	return why
}
