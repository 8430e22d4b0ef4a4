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
	// ProcessCPU reads the CPU time the gateway's process has used, for
	// the supervisor's lag reading (Health.HostLag); nil: ReadProcessCPU.
	ProcessCPU func() (time.Duration, error)
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

	// drained wakes WaitExpressRoom when an express lane took a sample.
	drained notifier

	ingressLag atomic.Int64 // max ns spent in Publish since the last reading
	wakeLag    lagMeter     // lateness of the housekeeping ticks since the last classifier evaluation
	probeNext  int          // next device (index into devices) the probe tick serves
	probeCarry float64      // fractional probes owed by the probe tick
	errors     atomic.Int64 // ingress errors since the last reading
	started    time.Time

	sched     *scheduler // serves every device's lanes (sched.go)
	rt        *realtime  // policy.express.realtime (realtime.go)
	schedOnce sync.Once
	guard     *healthGuard // the gateway's own lag (health.go)

	// the process CPU time at the previous supervisor reading (cpuBusy)
	supMu    sync.Mutex
	supCPU   time.Duration
	supCPUAt time.Time

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
	if g.opts.ProcessCPU == nil {
		g.opts.ProcessCPU = ReadProcessCPU
	}
	if g.incl == nil {
		g.incl = KeyIncludes
	}
	g.rt = newRealtime(cfg.Policy.Express.Realtime, osThreads(), g.log)
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
			g.rt.raiseProcess() // policy.express.realtime, before DDS and the lanes start their threads
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
		d.egress().discard(DropClosed) // what was pending is counted (closed), not lost silently
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
	g.cpuBusy(lastSup) // the CPU baseline of the first supervisor reading
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

// GatewayHealth is the gateway-health guard's last reading.
func (g *Gateway) GatewayHealth() GatewayHealth { return g.guard.status() }

// Supervise takes one Health reading of the gateway and applies it; the
// housekeeping goroutine calls it every supervisor.evaluation_interval.
func (g *Gateway) Supervise(now time.Time) (ModeChange, bool) { return g.superviseWithTickLag(now, 0) }

func (g *Gateway) superviseWithTickLag(now time.Time, tickLag time.Duration) (ModeChange, bool) {
	h := g.health(now)
	h.Lag = max(h.Lag, tickLag)
	if busy, ok := g.cpuBusy(now); ok && h.Lag > 0 && busy < hostLagBusy {
		h.Lag, h.HostLag = 0, h.Lag
	}
	c, changed := g.sup.Observe(h, now)
	if changed {
		g.log.Warn("supervisor mode change", slog.String("from", c.From.String()), slog.String("to", c.To.String()), slog.String("reason", c.Reason))
		if g.opts.OnModeChange != nil {
			g.opts.OnModeChange(c)
		}
	}
	return c, changed
}

// hostLagBusy is the share of its CPUs (GOMAXPROCS) below which the
// gateway's process was not busy over a supervisor interval: its lag then
// is the host's (Health.HostLag). Go's timers and goroutines run late only
// when every P is busy, when the OS does not run the process's threads
// (a loaded or starved host: CPU steal, other processes), or in a GC stop;
// with half its CPU time unused the gateway's own work cannot have
// delayed them for long.
const hostLagBusy = 0.5

// cpuBusy is the share of its CPUs (GOMAXPROCS) the process used since the
// previous call; false at the first call or when the CPU time cannot be
// read (then every lag counts as the gateway's).
func (g *Gateway) cpuBusy(now time.Time) (float64, bool) {
	cpu, err := g.opts.ProcessCPU()
	if err != nil {
		return 0, false
	}
	g.supMu.Lock()
	defer g.supMu.Unlock()
	prev, at := g.supCPU, g.supCPUAt
	g.supCPU, g.supCPUAt = cpu, now
	wall := now.Sub(at)
	if at.IsZero() || wall <= 0 || cpu < prev {
		return 0, false
	}
	return float64(cpu-prev) / (float64(wall) * float64(runtime.GOMAXPROCS(0))), true
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

// DeviceIdentity is what the router knows of a device when it attaches.
type DeviceIdentity struct {
	// ZID is the device's Zenoh id in hex (from INIT/OPEN).
	ZID string
	// Name is the name its probe responder announces (probe.ParseKey on its
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
