package bridge

// Device: one attached zenoh-pico device — its identity, knob profile and
// capacity, subscriptions, classifier, and how a sample reaches its lanes.

import (
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/picobridge/picobridge/knobs"
	"github.com/picobridge/picobridge/probe"
)

// Device is one attached zenoh-pico device: its identity, knob profile,
// classifier, lanes and subscriptions.
type Device struct {
	g    *Gateway
	zid  string
	sink DeviceSink

	mu       sync.RWMutex
	name     string
	conf     *DeviceConfig // nil: devices.default
	resolved *knobs.Resolved
	capa     knobs.Capacity
	shape    Shaping
	subs     []string
	eg       *egress
	cls      *Classifier
	class    atomic.Uint32                // effective Class the lanes were last set for (read by Lane without a lock)
	subsSnap atomic.Pointer[subsSnapshot] // subs for the lanes, read without d.mu (lock order)
	// largeSubs is devices.list[].large_subscriptions of the device's
	// configuration (nil: none), read by the lanes without d.mu.
	largeSubs atomic.Pointer[[]string]

	// The two lanes as scheduler units (no goroutine of their own).
	expUnit, batUnit *unit
	// Batched-lane cadence, touched only by batUnit's run: the flush grid
	// starts at flushBase (the last flush) and steps FlushInterval;
	// flushAt is the next due flush (zero: none planned).
	flushBase, flushAt time.Time
	flushBuf           []Sample
	// link is the device's byte budget (policy.link), kept across
	// reconfigurations like budget.
	link linkBudget
	// linkEst is the TCP_INFO estimate's max filter (bytes/s per evaluation).
	linkEst []float64
	// learn is the learned link budget (policy.link.estimate: learn);
	// learnSent is link.sent at its last reading.
	learn     linkLearner
	learnSent uint64

	errSeen   atomic.Uint64          // sink errors already reported to the supervisor
	probeName atomic.Pointer[string] // the name the responder subscribed with; nil: no responder
	detached  atomic.Bool
	// lane wakes Replay: a batched flush took samples, the lanes' egress
	// or batched rate changed, the device detached.
	lane notifier
	// announced is the profile from the device's knob announcement
	// (announce.go); nil: its configuration's.
	announced atomic.Pointer[resolvedProfile]
	ann       announceState
	// tkeys caches the traffic meter's key of each concrete key (traffic.go).
	tkeys keyCache
	// published reports the device's own publications (nil: unknown);
	// attachedAt is when its count started.
	published  PublishedSource
	attachedAt time.Time
}

// subsSnapshot is an immutable copy of a device's subscriptions with a
// generation, for the lanes' ring budget (per subscription).
type subsSnapshot struct {
	gen  uint64
	subs []string
}

func (d *Device) subsGen() uint64 { return d.subsSnap.Load().gen }

func (d *Device) largeFor(key string) bool {
	large := d.largeSubs.Load()
	if large == nil || len(*large) == 0 {
		return false
	}
	for _, s := range d.subsSnap.Load().subs {
		if slices.Contains(*large, s) && d.g.incl(s, key) {
			return true
		}
	}
	return false
}

func (d *Device) subsFor(key string) []int {
	snap := d.subsSnap.Load()
	out := []int{}
	for i, s := range snap.subs {
		if d.g.incl(s, key) {
			out = append(out, i)
		}
	}
	return out
}

// storeSubsLocked publishes d.subs to the lanes (d.mu held).
func (d *Device) storeSubsLocked() {
	old := d.subsSnap.Load()
	d.subsSnap.Store(&subsSnapshot{gen: old.gen + 1, subs: slices.Clone(d.subs)})
}

// configure applies a device configuration (nil: default); name is the
// announced name, if any.
func (d *Device) configure(dc *DeviceConfig, announced string) {
	g := d.g
	now := g.clock.Now()
	key := "devices.default"
	name := announced
	if dc != nil {
		name = dc.Name
		key = "devices.list[" + fmt.Sprint(slices.IndexFunc(g.cfg.Devices.List, func(x DeviceConfig) bool { return x.Name == dc.Name })) + "]"
	}
	if name == "" || !validDeviceName(name) {
		name = "zid-" + d.zid
		if len(name) > 20 {
			name = name[:20]
		}
	}
	prof := g.profile[key]
	if a := d.announced.Load(); a != nil {
		prof = *a
	}
	shape := ShapingOf(prof.capa, g.cfg.Policy.Batched.FlushInterval)
	stats := g.statsFor(name)
	dlog := g.log.With(slog.String("device", name), slog.String("zid", d.zid))
	log := &onceLogger{log: dlog}
	cls := NewClassifier(g.cfg.Classifier, now)
	if dc != nil && dc.Class != "" {
		cls.SetOverride(dc.Class, now)
	}
	d.mu.Lock()
	old := d.eg
	d.name, d.conf, d.resolved, d.capa, d.shape = name, dc, prof.resolved, prof.capa, shape
	if dc != nil {
		d.largeSubs.Store(&dc.LargeSubscriptions)
	} else {
		d.largeSubs.Store(nil)
	}
	d.eg = newEgress(name, shape, g.cfg.Policy, stats, log)
	d.eg.crit = &critLogger{log: dlog, interval: g.cfg.Policy.CriticalDropLogInterval}
	d.eg.wakeExpress, d.eg.wakeBatched, d.eg.subsOf = d.expUnit.wake, d.batUnit.wake, d
	d.eg.oversizeHint = d.oversizeHint
	d.eg.link = &d.link
	d.setLinkBudgetLocked(d.configuredLink(dc), now)
	if l := g.cfg.Policy.Link; l.Estimate == LinkEstimateLearn {
		_, ceiling := d.link.Rate()
		d.learn.configure(l.TargetDelay, l.MinBytesPerS, ceiling)
		if r := d.learn.status().RateBytesPerS; r > 0 { // kept across reconfigurations
			d.applyLearnedLocked(r, now)
		}
	}
	d.cls = cls
	c := cls.Class()
	d.class.Store(uint32(c))
	d.eg.setBatchedRate(d.batchedRate(dc, c), now)
	d.mu.Unlock()
	if old != nil {
		old.discard(DropSuspended)
		d.expUnit.wake() // the lanes pick the new egress
		d.lane.notify()
	}
	cls.OnTransition(func(t Transition) {
		stats.transitions(t.To)
		log.log.Info("device class transition", slog.String("from", t.From.String()), slog.String("to", t.To.String()), slog.String("reason", t.Reason))
	})
}

// Announce tells the gateway the name the device's probe responder
// announced (its subscription to probe.PingKey(name)). A device attached without
// a configuration match by zid takes the configuration of that name.
func (d *Device) Announce(name string) {
	d.mu.RLock()
	conf, cur := d.conf, d.name
	d.mu.RUnlock()
	if cur == name || (conf != nil && conf.ZID != "") {
		return
	}
	d.configure(d.g.cfg.Device(name), name)
}

// Name is the device's name (configured, announced, or zid-<hex>).
func (d *Device) Name() string {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.name
}

// ZID is the device's Zenoh id in lower-case hex.
func (d *Device) ZID() string { return d.zid }

// Capacity is the device's capacity model.
func (d *Device) Capacity() knobs.Capacity {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.capa
}

// Classifier is the device's classifier (for status; change the override
// with Device.SetOverride, which also updates the lanes).
func (d *Device) Classifier() *Classifier {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.cls
}

// SetOverride pins the device's class (critical, noncritical) or returns
// it to the classifier (auto); `picobridge lane` uses it.
func (d *Device) SetOverride(o ClassOverride) {
	now := d.g.clock.Now()
	d.Classifier().SetOverride(o, now)
	d.refreshClass(now)
}

// DeclareSubscriber records one of the device's subscriptions (a key
// expression); Publish delivers to devices whose subscriptions include the key.
func (d *Device) DeclareSubscriber(keyexpr string) {
	if name, kind, ok := probe.ParseKey(keyexpr); ok && kind == probe.Ping {
		d.Announce(name)
		d.probeName.Store(&name) // a responder is there: probe it from now on
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if !slices.Contains(d.subs, keyexpr) {
		d.subs = append(d.subs, keyexpr)
		d.storeSubsLocked()
	}
}

// UndeclareSubscriber removes a subscription.
func (d *Device) UndeclareSubscriber(keyexpr string) {
	if name, kind, ok := probe.ParseKey(keyexpr); ok && kind == probe.Ping {
		if p := d.probeName.Load(); p != nil && *p == name {
			d.probeName.Store(nil)
		}
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if i := slices.Index(d.subs, keyexpr); i >= 0 {
		d.subs = slices.Delete(d.subs, i, i+1)
		d.storeSubsLocked()
	}
}

func (d *Device) subscribed(key string) bool {
	d.mu.RLock()
	defer d.mu.RUnlock()
	for _, s := range d.subs {
		if d.g.incl(s, key) {
			return true
		}
	}
	return false
}

// Detach stops the device's lanes; pending samples are counted as
// suspended. Its counters stay (metrics never go backwards).
func (d *Device) Detach() {
	if d.detached.Swap(true) {
		return
	}
	d.g.mu.Lock()
	ds := slices.DeleteFunc(slices.Clone(*d.g.devices.Load()), func(x *Device) bool { return x == d })
	d.g.devices.Store(&ds)
	d.g.mu.Unlock()
	d.expUnit.stop()
	d.batUnit.stop()
	d.egress().discard(DropClosed)
	d.g.drained.notify()
	d.lane.notify()
	d.g.log.Info("device detached", slog.String("device", d.Name()))
}

func (d *Device) egress() *egress {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.eg
}

// batchedRate is the token bucket rate for an effective class: the
// device's own rate_hz / noncritical_rate_hz when set, else the policy's.
func (d *Device) batchedRate(conf *DeviceConfig, c Class) float64 {
	b := d.g.cfg.Policy.Batched
	if conf != nil && conf.RateHz > 0 {
		b.RateHz = conf.RateHz
	}
	if conf != nil && conf.NoncriticalRateHz > 0 {
		b.NoncriticalRateHz = conf.NoncriticalRateHz
	}
	if c == ClassCritical {
		return b.RateHz
	}
	return b.NoncriticalRateHz
}

// Lane is the lane a route of this criticality takes to the device now:
// express for critical routes, unless the device is NONCRITICAL and
// policy.demote_critical_routes.
func (d *Device) Lane(c Criticality) Lane {
	if c != Critical {
		return LaneBatched
	}
	if Class(d.class.Load()) == ClassNoncritical && d.g.cfg.Policy.DemoteCriticalRoutes {
		return LaneBatched
	}
	return LaneExpress
}

// Offer hands one sample to the device's lanes; Publish calls it for every
// subscribed device. It never blocks.
func (d *Device) Offer(s Sample, c Criticality) {
	now := d.g.clock.Now()
	if s.Time.IsZero() {
		s.Time = now
	}
	d.offer(s, c, now)
}

func (d *Device) offer(s Sample, c Criticality, now time.Time) {
	lane := d.Lane(c)
	eg := d.egress()
	eg.stats.traffic.observe(d.trafficKey(s.Key), len(s.Payload), now)
	switch mode := d.g.sup.Mode(); {
	case mode == Emergency, mode == Degraded && lane == LaneBatched:
		eg.drop(lane, DropSuspended, 1, c == Critical, now)
		eg.log.once(lane, DropSuspended, "forwarding suspended by the supervisor", slog.String("mode", mode.String()))
		return
	}
	if lane == LaneExpress {
		eg.offerExpress(s, now)
	} else {
		eg.offerBatched(s, now, c == Critical)
	}
}

// configuredLink is the device's configured link budget in bytes/s
// (devices.list[].link_bytes_per_s, else policy.link.bytes_per_s); 0: none.
