package bridge

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/picobridge/picobridge/knobs"
	"github.com/picobridge/picobridge/probe"
)

// Clock gives the time; tests inject a fake one. Goroutines of the gateway
// sleep with the time package's timers, so tests of the running gateway use
// testing/synctest, and tests of the policy call the lanes and classifiers
// with explicit times.
type Clock interface{ Now() time.Time }

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

// Options are the gateway's collaborators.
type Options struct {
	// Catalog resolves device knob profiles (firmware.Catalog()). Required.
	Catalog *knobs.Catalog
	// Registerer receives the gateway's collectors; nil: no metrics.
	Registerer prometheus.Registerer
	// Clock; nil: the system clock.
	Clock Clock
	// Logger; nil: discard.
	Logger *slog.Logger
	// Version and Revision label picobridge_build_info.
	Version, Revision string
	// KeyIncludes decides whether a device's subscription includes a key;
	// nil: KeyIncludes of this package (the lead may pass zenohpath/keyexpr's).
	KeyIncludes func(sub, key string) bool
	// OnModeChange is called for every supervisor transition, from the
	// housekeeping goroutine; in EMERGENCY the lead publishes Diagnostics()
	// (DDS /diagnostics, Zenoh @picobridge/diagnostics).
	OnModeChange func(ModeChange)
	// HostStats reads the host's CPU steal and load for the
	// gateway-health guard; nil: ReadHostStats (/proc).
	HostStats func() (HostStats, error)
}

// Gateway is the policy core: devices with their lanes and classifiers,
// the route table and the supervisor. Ingress (Publish) never blocks.
//
// Lock order: Gateway.mu, then Device.mu, then a lane's mutex, then a
// Classifier's or the Supervisor's (see doc.go).
type Gateway struct {
	cfg    *Config
	opts   Options
	clock  Clock
	log    *slog.Logger
	routes *Routes
	sup    *Supervisor
	incl   func(sub, key string) bool

	mu      sync.RWMutex
	devices atomic.Pointer[[]*Device] // copy on write under mu: Publish reads it without a lock
	stats   map[string]*deviceStats   // by label; retained across connections
	profile map[string]resolvedProfile

	// drained wakes WaitExpressDrained when an express lane sent a sample.
	drained notifier

	ingressLag atomic.Int64 // max ns spent in Publish since the last reading
	wakeLag    lagMeter     // lateness of the housekeeping ticks since the last classifier evaluation
	probeNext  int          // next device (index into devices) the probe tick serves
	probeCarry float64      // fractional probes owed by the probe tick
	errors     atomic.Int64 // ingress errors since the last reading
	started    time.Time

	sched     *scheduler // serves every device's lanes (sched.go)
	schedOnce sync.Once
	guard     *healthGuard // the gateway's own lag (health.go)

	wg      sync.WaitGroup
	ctx     context.Context
	cancel  context.CancelFunc
	closed  atomic.Bool
	runOnce sync.Once
}

type resolvedProfile struct {
	resolved *knobs.Resolved
	capa     knobs.Capacity
}

// OtherDevice is the device label of devices beyond metrics.max_devices.
const OtherDevice = "_other"

// New builds a gateway from a validated configuration and resolves the knob
// profile of every configured device (and the default profile), so a bad
// profile is refused at start (invariant 5). Run starts its goroutines.
func New(cfg *Config, opts Options) (*Gateway, error) {
	if opts.Catalog == nil {
		return nil, errors.New("bridge: Options.Catalog is required (firmware.Catalog())")
	}
	// Range problems and profile problems are reported together, so one
	// run of `picobridge run` names every mistake in the file.
	var ps problemList
	if err := cfg.Validate(); err != nil {
		var ce *knobs.ConfigError
		if !errors.As(err, &ce) {
			return nil, err
		}
		ps = append(ps, ce.Problems...)
	}
	g := &Gateway{
		cfg: cfg, opts: opts, clock: opts.Clock, log: opts.Logger,
		routes: NewRoutes(cfg), sup: NewSupervisor(cfg.Supervisor), incl: opts.KeyIncludes,
		stats: map[string]*deviceStats{}, profile: map[string]resolvedProfile{},
	}
	g.devices.Store(&[]*Device{})
	if g.clock == nil {
		g.clock = systemClock{}
	}
	if g.log == nil {
		g.log = slog.New(slog.DiscardHandler)
	}
	if g.incl == nil {
		g.incl = KeyIncludes
	}
	g.started = g.clock.Now()
	resolve := func(key string, p DeviceProfile) {
		r, capa, err := cfg.ResolveProfile(opts.Catalog, p)
		if err != nil {
			var ce *knobs.ConfigError
			if errors.As(err, &ce) {
				for _, pr := range ce.Problems {
					if pr.File == "" || pr.Line == 0 {
						// point at the key that set it: .platform, .board, .env.NAME, else the entry
						at := key
						for _, k := range []string{key + "." + pr.Key, key + ".env." + pr.Key} {
							if _, ok := cfg.pos[k]; ok && pr.Key != "" {
								at = k
								break
							}
						}
						pos := cfg.pos[at]
						pr.File, pr.Line, pr.Col = pos.file, pos.line, pos.col
						if at == key {
							at = strings.TrimSuffix(key+"."+pr.Key, ".")
						}
						pr.Key = at
					}
					ps = append(ps, pr)
				}
				return
			}
			ps = append(ps, &knobs.Problem{File: cfg.pos[key].file, Line: cfg.pos[key].line, Col: cfg.pos[key].col, Key: key, Msg: err.Error(), Err: knobs.ErrBadValue})
			return
		}
		g.profile[key] = resolvedProfile{r, capa}
	}
	resolve("devices.default", cfg.Devices.Default)
	for i, d := range cfg.Devices.List {
		resolve(fmt.Sprintf("devices.list[%d]", i), d.DeviceProfile)
	}
	if err := ps.err(); err != nil {
		return nil, err
	}
	for _, d := range cfg.Devices.List {
		g.statsFor(d.Name)
	}
	if opts.Registerer != nil {
		if err := registerMetrics(opts.Registerer, g); err != nil {
			return nil, err
		}
	}
	g.ctx, g.cancel = context.WithCancel(context.Background())
	g.sched = newScheduler(g.ctx, g.clock.Now)
	g.guard = newHealthGuard(cfg.Classifier, opts.HostStats)
	return g, nil
}

// Config is the configuration the gateway runs with.
func (g *Gateway) Config() *Config { return g.cfg }

// Routes is the route table.
func (g *Gateway) Routes() *Routes { return g.routes }

// Supervisor is the gateway's supervisor.
func (g *Gateway) Supervisor() *Supervisor { return g.sup }

// go starts a goroutine owned by the gateway (convention 12).
func (g *Gateway) goOwned(f func()) {
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		f()
	}()
}

// Run starts housekeeping: probes at classifier.probe_interval, classifier
// evaluations at classifier.evaluation_interval, and supervisor evaluations
// at supervisor.evaluation_interval. It returns at once; Close stops
// everything and waits for every goroutine.
func (g *Gateway) Run() {
	g.runOnce.Do(func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		if !g.closed.Load() {
			g.goOwned(g.housekeeping)
		}
	})
}

// Close stops every goroutine of the gateway and its devices and waits for them.
func (g *Gateway) Close() error {
	g.mu.Lock()
	already := g.closed.Swap(true)
	g.mu.Unlock()
	if already {
		return nil
	}
	g.cancel()
	g.wg.Wait()
	for _, d := range *g.devices.Load() {
		d.egress().discard() // what was pending is counted (suspended), not lost silently
	}
	return nil
}

// lagTick is the period of the gateway's wake-up lag meter: a ticker
// whose lateness is the scheduler's wake-up delay (the gateway-health guard).
const lagTick = 10 * time.Millisecond

func (g *Gateway) housekeeping() {
	cl := g.cfg.Classifier
	probe := time.NewTicker(probeTick(cl.ProbeInterval))
	eval := time.NewTicker(cl.EvaluationInterval)
	sup := time.NewTicker(g.cfg.Supervisor.EvaluationInterval)
	lag := time.NewTicker(lagTick)
	learn := time.NewTicker(learnTick(g.cfg.Policy.Link))
	defer learn.Stop()
	defer probe.Stop()
	defer eval.Stop()
	defer sup.Stop()
	defer lag.Stop()
	lastSup, lastLag := g.clock.Now(), g.clock.Now()
	for {
		select {
		case <-g.ctx.Done():
			return
		case <-lag.C:
			now := g.clock.Now()
			g.wakeLag.note(now.Sub(lastLag) - lagTick)
			lastLag = now
		case <-learn.C:
			if g.cfg.Policy.Link.Estimate == LinkEstimateLearn {
				now := g.clock.Now()
				for _, d := range *g.devices.Load() {
					d.learnLink(now)
				}
			}
		case <-probe.C:
			if cl.Enabled {
				g.probeSome(g.clock.Now(), probeTick(cl.ProbeInterval))
			}
		case <-eval.C:
			now := g.clock.Now()
			if cl.Enabled {
				g.evaluateAll(now)
			}
			for _, d := range *g.devices.Load() {
				d.egress().crit.tick(now)
			}
		case <-sup.C:
			now := g.clock.Now()
			tickLag := max(now.Sub(lastSup)-g.cfg.Supervisor.EvaluationInterval, 0)
			lastSup = now
			g.superviseWithTickLag(now, tickLag)
		}
	}
}

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

// GatewayHealth is the gateway-health guard's last reading.
func (g *Gateway) GatewayHealth() GatewayHealth { return g.guard.status() }

// Supervise takes one Health reading of the gateway and applies it; the
// housekeeping goroutine calls it every supervisor.evaluation_interval.
func (g *Gateway) Supervise(now time.Time) (ModeChange, bool) { return g.superviseWithTickLag(now, 0) }

func (g *Gateway) superviseWithTickLag(now time.Time, tickLag time.Duration) (ModeChange, bool) {
	h := g.health(now)
	h.Lag = max(h.Lag, tickLag)
	c, changed := g.sup.Observe(h, now)
	if changed {
		g.log.Warn("supervisor mode change", slog.String("from", c.From.String()), slog.String("to", c.To.String()), slog.String("reason", c.Reason))
		if g.opts.OnModeChange != nil {
			g.opts.OnModeChange(c)
		}
	}
	return c, changed
}

// health reads queue occupancy over all devices, the ingress lag and the
// errors since the previous reading (and resets those two).
func (g *Gateway) health(now time.Time) Health {
	var pending, capacity int
	var errs int64
	for _, d := range g.Devices() {
		eg := d.egress()
		e, b, _ := eg.depth(now)
		ce, cb := eg.capacity()
		pending += e + b
		capacity += ce + cb
		n := eg.stats.errors.Load()
		errs += int64(n - d.errSeen.Swap(n))
	}
	h := Health{Lag: time.Duration(g.ingressLag.Swap(0)), Errors: int(errs + g.errors.Swap(0))}
	if capacity > 0 {
		h.QueueOccupancy = float64(pending) / float64(capacity)
	}
	return h
}

// Mode is the supervisor's current mode.
func (g *Gateway) Mode() SupervisorMode { return g.sup.Mode() }

// Publish hands a sample of a route to every attached device whose
// subscriptions include the route's key. It never blocks: each device's
// lanes queue or drop (with a reason) at once.
func (g *Gateway) Publish(r Route, s Sample) {
	start := g.clock.Now()
	if s.Key == "" {
		s.Key = r.Key
	}
	if s.Time.IsZero() {
		s.Time = start
	}
	for _, d := range *g.devices.Load() {
		if d.subscribed(s.Key) {
			d.offer(s, r.Criticality, start)
		}
	}
	lag := int64(g.clock.Now().Sub(start))
	for cur := g.ingressLag.Load(); lag > cur && !g.ingressLag.CompareAndSwap(cur, lag); cur = g.ingressLag.Load() {
	}
}

// RouteForKey is the route of a sample that arrives on a Zenoh key from
// upstream Zenoh or another device: criticality from the ROS name the key
// maps back to (Routes.TopicOf), noncritical default for a key that maps to
// no name.
func (g *Gateway) RouteForKey(key string) Route {
	r := Route{Key: key, Criticality: g.cfg.Routes.DefaultCriticality}
	if topic, ok := g.routes.TopicOf(key); ok {
		r.Topic = topic
		r.Criticality = g.routes.CriticalityOf(topic)
	}
	return r
}

// ReportError counts an ingress error (a DDS read failure, a malformed
// sample) toward the supervisor's errors.
func (g *Gateway) ReportError() { g.errors.Add(1) }

// HandlePong takes a publication on a probe pong key (PongSubscription) and
// gives it to the device it names.
func (g *Gateway) HandlePong(key string, payload []byte) error {
	name, kind, ok := ParseProbeKey(key)
	if !ok || kind != ProbePong {
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
	cls := d.Classifier()
	now := g.clock.Now()
	_, err := cls.Pong(payload, now)
	if err == nil && g.cfg.Policy.Link.Estimate == LinkEstimateLearn {
		// The learned budget takes the whole round trip (device time
		// excluded): the queue the gateway's own bytes built counts.
		if p, perr := probe.Decode(payload); perr == nil {
			rtt := now.Sub(cls.epoch.Add(time.Duration(p.GwSend)))
			if p.DevSend >= p.DevRecv {
				rtt -= min(time.Duration(p.DevSend-p.DevRecv), rtt)
			}
			d.learn.probe(rtt, now)
		}
	}
	return err
}

// DeviceIdentity is what the router knows of a device when it attaches.
type DeviceIdentity struct {
	// ZID is the device's Zenoh id in hex (from INIT/OPEN).
	ZID string
	// Name is the name its probe responder announces (ParseProbeKey on its
	// ping subscription), when already known; see Device.Announce.
	Name string
}

// Attach registers a connected device with the sink that reaches it and
// starts its two lane goroutines. The device's configuration is found by
// zid, then by name; an unknown device gets devices.default. The caller
// Detaches it when its session closes.
func (g *Gateway) Attach(id DeviceIdentity, sink DeviceSink) (*Device, error) {
	zid := strings.ToLower(id.ZID)
	if zid != "" {
		if _, err := hex.DecodeString(zid); err != nil {
			return nil, fmt.Errorf("bridge: device zid %q is not hex", id.ZID)
		}
	}
	d := &Device{g: g, zid: zid, sink: sink}
	d.expUnit = g.sched.newUnit(d.runExpress)
	d.batUnit = g.sched.newUnit(d.runBatched)
	d.flushBase = g.clock.Now()
	if bs, ok := sink.(TxBacklogSource); ok {
		d.link.backlog = bs.TxBacklogBytes
	}
	if ps, ok := sink.(PublishedSource); ok {
		d.published, d.attachedAt = ps, d.flushBase
	}
	d.subsSnap.Store(&subsSnapshot{})
	d.configure(g.match(zid, id.Name), id.Name)
	g.mu.Lock()
	if g.closed.Load() { // under mu: no goroutine is added once Close waits
		g.mu.Unlock()
		return nil, errors.New("bridge: gateway closed")
	}
	g.schedOnce.Do(func() { g.sched.start(g.goOwned) })
	// Append in place when the backing array has room: readers of the
	// previous slice never look past its length, so this is O(1) amortized
	// (copy on write only when it grows or on Detach).
	ds := append(*g.devices.Load(), d)
	g.devices.Store(&ds)
	g.mu.Unlock()
	g.log.Info("device attached", slog.String("device", d.Name()), slog.String("zid", zid))
	return d, nil
}

// match finds a device's configuration by zid, then by name.
func (g *Gateway) match(zid, name string) (cfg *DeviceConfig) {
	for i := range g.cfg.Devices.List {
		dc := &g.cfg.Devices.List[i]
		if zid != "" && strings.ToLower(dc.ZID) == zid {
			return dc
		}
	}
	if name != "" {
		return g.cfg.Device(name)
	}
	return nil
}

// statsFor returns the retained counters of a device label, creating them
// while fewer than metrics.max_devices labels exist, else the shared
// OtherDevice counters.
func (g *Gateway) statsFor(label string) *deviceStats {
	g.mu.Lock()
	defer g.mu.Unlock()
	if s, ok := g.stats[label]; ok {
		return s
	}
	if len(g.stats) >= g.cfg.Metrics.MaxDevices {
		label = OtherDevice
		if s, ok := g.stats[label]; ok {
			return s
		}
	}
	s := &deviceStats{label: label}
	g.stats[label] = s
	return s
}

// Devices lists the attached devices, by name.
func (g *Gateway) Devices() []*Device {
	ds := slices.Clone(*g.devices.Load())
	slices.SortFunc(ds, func(a, b *Device) int { return strings.Compare(a.Name(), b.Name()) })
	return ds
}

// Device returns the attached device with that name, or nil.
func (g *Gateway) Device(name string) *Device {
	for _, d := range *g.devices.Load() {
		if d.Name() == name {
			return d
		}
	}
	return nil
}

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
		old.discard()
		d.expUnit.wake() // the lanes pick the new egress
	}
	cls.OnTransition(func(t Transition) {
		stats.transitions(t.To)
		log.log.Info("device class transition", slog.String("from", t.From.String()), slog.String("to", t.To.String()), slog.String("reason", t.Reason))
	})
}

// Announce tells the gateway the name the device's probe responder
// announced (its subscription to PingKey(name)). A device attached without
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
	if name, kind, ok := ParseProbeKey(keyexpr); ok && kind == ProbePing {
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
	if name, kind, ok := ParseProbeKey(keyexpr); ok && kind == ProbePing {
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
	d.egress().discard()
	d.g.drained.notify()
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

// refreshClass applies a change of effective class to the lanes' rates.
func (d *Device) refreshClass(now time.Time) {
	c := d.Classifier().Class()
	d.mu.Lock()
	changed := Class(d.class.Swap(uint32(c))) != c
	eg, conf := d.eg, d.conf
	d.mu.Unlock()
	if changed {
		eg.setBatchedRate(d.batchedRate(conf, c), now)
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
	ping := d.Classifier().PingAfter(now, d.link.selfDelay(now))
	eg.stats.probes.Add(1)
	if err := d.sink.SendProbe(PingKey(name), ping); err != nil && !errors.Is(err, ErrCongested) {
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

// configuredLink is the device's configured link budget in bytes/s
// (devices.list[].link_bytes_per_s, else policy.link.bytes_per_s); 0: none.
func (d *Device) configuredLink(dc *DeviceConfig) float64 {
	if dc != nil && dc.LinkBytesPerS > 0 {
		return dc.LinkBytesPerS
	}
	return d.g.cfg.Policy.Link.BytesPerS
}

// setLinkBudgetLocked applies a link budget (bytes/s, 0: none) to the
// lanes and, through the sink (TxRateSetter), to the transport's pacing:
// both at the budget × policy.link.headroom.
func (d *Device) setLinkBudgetLocked(budget float64, now time.Time) {
	l := d.g.cfg.Policy.Link
	d.link.set(budget, l.Headroom, l.Burst, now)
	if ts, ok := d.sink.(TxRateSetter); ok {
		_, r := d.link.Rate()
		ts.SetTxRate(r)
	}
}

// linkEstWindow is how many evaluations the TCP_INFO estimate's max filter spans.
const linkEstWindow = 10

// estimateLink updates an estimated link budget (policy.link.estimate:
// tcp_info, no budget configured): the largest of the socket's delivery
// and pacing rates over the last linkEstWindow evaluations, at least
// policy.link.min_bytes_per_s.
func (d *Device) estimateLink(now time.Time) {
	l := d.g.cfg.Policy.Link
	if l.Estimate != LinkEstimateTCPInfo {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.configuredLink(d.conf) > 0 {
		return
	}
	ti, ok := d.sink.(TCPInfoSource)
	if !ok {
		return
	}
	info, err := ti.TCPInfo()
	if err != nil {
		return
	}
	r := float64(info.DeliveryRate)
	if info.PacingRate > 0 && info.PacingRate < 1<<62 { // ^0: no pacing
		r = max(r, float64(info.PacingRate))
	}
	if r <= 0 {
		return
	}
	d.linkEst = append(d.linkEst, r)
	if len(d.linkEst) > linkEstWindow {
		d.linkEst = d.linkEst[len(d.linkEst)-linkEstWindow:]
	}
	est := max(slices.Max(d.linkEst), l.MinBytesPerS)
	d.setLinkBudgetLocked(est, now)
}

// learnTick is the period of the learned budget's readings
// (policy.link.estimate_interval; an hour when another estimate is used,
// so the ticker costs nothing).
func learnTick(l LinkConfig) time.Duration {
	if l.Estimate != LinkEstimateLearn || l.EstimateInterval <= 0 {
		return time.Hour
	}
	return l.EstimateInterval
}

// learnLink takes one reading of the device's link for the learned budget
// (linkest.go) and applies the rate it returns to the lanes and the
// transport's pacing. A device that was handed nothing since the last
// reading is skipped (an idle fleet costs no getsockopt); its next reading
// spans the gap.
func (d *Device) learnLink(now time.Time) {
	sent := d.link.sentBytes()
	if sent == d.learnSent && d.learn.idle() {
		return
	}
	d.learnSent = sent
	sig := linkSignal{Demand: d.link.backlogBytes() > 0}
	if !sig.Demand {
		held, _ := d.egress().batchedHeld()
		sig.Demand = held
	}
	if ti, ok := d.sink.(TCPInfoSource); ok {
		if info, err := ti.TCPInfo(); err == nil {
			sig.TCP, sig.Acked, sig.RwndLimited = true, info.BytesAcked, info.RwndLimited
			sig.MinRTT = info.MinRTT
		}
	}
	rate, changed := d.learn.update(now, sig)
	if d.g.cfg.Classifier.Enabled && d.learn.wantProbe(now) {
		d.probe(now) // faster feedback while learning or draining
	}
	if !changed {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.applyLearnedLocked(rate, now)
}

// applyLearnedLocked paces the lanes and the transport at a learned rate
// (bytes/s, 0: unpaced). The budget shown is rate / headroom, so a learned
// and a configured budget read alike (the lanes use budget × headroom).
func (d *Device) applyLearnedLocked(rate float64, now time.Time) {
	l := d.g.cfg.Policy.Link
	d.setLinkBudgetLocked(rate/max(l.Headroom, 1e-9), now)
}

// expressQuantum is the most express sends (samples and pings) of one
// device per scheduler run; then its unit goes to the back of the ready
// queue, so one busy device does not hold a worker from the others.
const expressQuantum = 32

// runExpress is the express lane's scheduler unit: it sends express samples
// as they come, paced only by the link budget (invariant 9). It returns how
// long until it may send again (0: nothing waits; it is woken by the next
// offer).
func (d *Device) runExpress(now time.Time) time.Duration {
	if d.detached.Load() {
		return 0
	}
	eg := d.egress()
	for range expressQuantum {
		s, ok, wait := eg.nextExpress(now)
		if ok {
			d.g.drained.notify() // taken from the FIFO: WaitExpressDrained looks again
			_ = eg.sendExpress(d.sink, s, now)
			now = d.g.clock.Now()
			continue
		}
		return wait
	}
	return runNow
}

// runBatched is the batched lane's scheduler unit: a flush on the device's
// cadence (the grid flushBase + k·FlushInterval, as a ticker would), only
// while samples are pending, so an idle device costs nothing.
func (d *Device) runBatched(now time.Time) time.Duration {
	if d.detached.Load() {
		return 0
	}
	eg := d.egress()
	if eg.batchedPending() == 0 {
		d.flushAt = time.Time{}
		return 0
	}
	iv := d.flushInterval()
	if d.flushAt.IsZero() {
		k := now.Sub(d.flushBase)/iv + 1
		d.flushAt = d.flushBase.Add(k * iv)
	}
	if now.Before(d.flushAt) {
		return d.flushAt.Sub(now)
	}
	if d.linkStalled() {
		// Samples written now would wait behind the lost segment and then
		// arrive with everything else at once, more than the device's ring
		// takes: hold them (keep-latest, stale-drop) until TCP has repaired.
		eg.stats.stallHolds.Add(1)
		d.flushAt = now.Add(iv)
		return iv
	}
	d.flushBuf = d.flushNow(eg, d.g.clock.Now(), d.flushBuf[:0])
	d.flushBase, d.flushAt = now, time.Time{}
	if held, retry := eg.batchedHeld(); held { // held back by the ring or link budget
		if retry <= 0 || retry > iv {
			retry = iv
		}
		d.flushAt = now.Add(retry)
		return retry
	}
	return 0
}

// linkStalled reports whether the batched lane should hold its flush: the
// device is not CRITICAL and its TCP connection is in retransmission-timeout
// recovery (TCPInfo.Stalled). On an impaired link a loss burst backs the
// RTO off to seconds; flushes written meanwhile all arrive together when
// it is repaired, several ring depths in one burst of callbacks, and the
// device drops what its subscriber ring cannot hold (anchors.md §2.6,
// fourth bullet). A CRITICAL device is never held (one TCP_INFO read per
// flush of the others only).
func (d *Device) linkStalled() bool {
	if Class(d.class.Load()) == ClassCritical {
		return false
	}
	ts, ok := d.sink.(TCPInfoSource)
	if !ok {
		return false
	}
	info, err := ts.TCPInfo()
	return err == nil && info.Stalled
}

func (d *Device) flushInterval() time.Duration {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.shape.FlushInterval
}

// Flush runs one batched-lane flush now and hands the result to the sink;
// it returns the slice it used (for reuse). batchLoop calls it on the
// device's cadence; tests may call it directly.
func (d *Device) Flush(buf []Sample) []Sample {
	eg := d.egress()
	return d.flushNow(eg, d.g.clock.Now(), buf)
}

func (d *Device) flushNow(eg *egress, now time.Time, buf []Sample) []Sample {
	out := eg.flush(now, buf)
	if len(out) > 0 {
		eg.bat.mu.Lock()
		crit := eg.bat.outCrit
		eg.bat.mu.Unlock()
		eg.stats.flushes.Add(1)
		eg.countCrit(LaneBatched, len(out), crit, d.sink.SendBatch(out), now)
	}
	clear(out)
	return out
}
