package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/picobridge/picobridge/bridge"
	"github.com/picobridge/picobridge/bridge/server"
	"github.com/picobridge/picobridge/ddspath"
	"github.com/picobridge/picobridge/ddspath/replay"
	"github.com/picobridge/picobridge/ddspath/replay/ddssink"
	"github.com/picobridge/picobridge/ddspath/rosbag"
	"github.com/picobridge/picobridge/sim/devsim"
	"github.com/picobridge/picobridge/sim/linkemu"
)

// Result is what a run measured (summary.json).
type Result struct {
	Started  time.Time     `json:"started"`
	Bag      string        `json:"bag"`
	BagFrom  string        `json:"bag_from"` // where Bag was found (FindBag)
	Duration time.Duration `json:"duration_ns"`
	ScanHz   float64       `json:"scan_hz"`
	Domain   int           `json:"dds_domain"`
	Gateway  string        `json:"gateway_endpoint"`
	// Written counts the replay's DDS write attempts per topic (failed
	// writes included: the criterion's denominator); WriteErrors the failed ones.
	Written     map[string]int `json:"written"`
	WriteErrors map[string]int `json:"write_errors"`
	// ReplayFrom and ReplayTo are the replay's start and end, seconds since the fleet started.
	ReplayFrom float64        `json:"replay_from_s"`
	ReplayTo   float64        `json:"replay_to_s"`
	Devices    []DeviceResult `json:"devices"`
	Supervisor string         `json:"supervisor_mode"`
	// SupervisorChanges are the supervisor's mode changes during the run.
	SupervisorChanges []string `json:"supervisor_changes"`
	// GatewayDrops sums the gateway's lane drops over devices, "lane/reason".
	GatewayDrops map[string]uint64 `json:"gateway_drops"`
	Link         LinkResult        `json:"impaired_link"`
	// Demoted: the impaired device went to NONCRITICAL during the run.
	Demoted bool `json:"impaired_demoted"`
	// MaxWakeLateMs is the largest delay of a 5 ms sleep in this process
	// during the replay; LateWakeups counts those later than a /scan period.
	MaxWakeLateMs float64 `json:"max_wake_late_ms"`
	LateWakeups   int     `json:"late_wakeups"`
	// Host is the machine's load at the end (a loaded host delays every
	// goroutine; the express lane keeps only the latest sample per key).
	Host     string   `json:"host"`
	Failures []string `json:"failures"`
	OK       bool     `json:"ok"`
	Out      string   `json:"out,omitempty"`
}

// DeviceResult is one device's line of the summary.
type DeviceResult struct {
	Name     string `json:"name"`
	Platform string `json:"platform"`
	Board    string `json:"board"`
	Link     string `json:"link"`
	// Received: samples the application took from its rings (all keys);
	// Expected: the replay's write attempts on the device's topics.
	Received uint64 `json:"received"`
	Expected uint64 `json:"expected"`
	// ExpectCritical: the scenario expects the device CRITICAL (a clean
	// loopback link: zephyr1, sim1). CriticalThroughout: its class was
	// CRITICAL from the replay's start to its end. Judged: either, so the
	// criterion (judge.go) applies to it.
	ExpectCritical     bool `json:"expect_critical"`
	CriticalThroughout bool `json:"critical_throughout_replay"`
	Judged             bool `json:"judged_critical"`
	// CriticalDropped: the gateway's drops of samples of critical routes
	// toward this device, any lane, by reason (bridge DeviceStatus.CriticalDropped).
	CriticalDropped map[string]uint64    `json:"gateway_critical_dropped"`
	Keys            map[string]KeyResult `json:"keys"`
	OutOfOrder      int                  `json:"out_of_order"`
	// Device-side drops (what a real zenoh-pico device would lose silently).
	RingFullDrops uint64 `json:"ring_full_drops"`
	OversizeDrops uint64 `json:"oversize_drops"`
	SlotDrops     uint64 `json:"slot_drops"`
	// Latency: delivery to the application − ROS header stamp (= DDS send time), ms.
	P50 float64 `json:"latency_p50_ms"`
	P95 float64 `json:"latency_p95_ms"`
	P99 float64 `json:"latency_p99_ms"`
	// Class now and its transitions.
	Class       string   `json:"class"`
	Transitions []string `json:"transitions"`
	// Gateway lanes toward this device.
	Forwarded    map[string]uint64 `json:"gateway_forwarded"`
	GatewayDrops map[string]uint64 `json:"gateway_drops"`
}

// KeyResult is one subscription of a device.
type KeyResult struct {
	// Critical: the topic is a critical route of the gateway's configuration.
	Critical bool `json:"critical"`
	// Written: the replay's write attempts of the topic (failed writes
	// included); the criterion's denominator.
	Written int `json:"written"`
	// Received: distinct written samples delivered to the application
	// (matched by header stamp); the criterion's numerator.
	Received int `json:"received"`
	// Delivered: deliveries to the application, duplicates included.
	Delivered  int    `json:"delivered"`
	OutOfOrder int    `json:"out_of_order"`
	Missing    int    `json:"missing"` // written stamps never delivered
	RingFull   uint64 `json:"ring_full_drops"`
	Oversize   uint64 `json:"oversize_drops"`
	Slot       uint64 `json:"slot_drops"`
}

// LinkResult is what the impaired link did.
type LinkResult struct {
	Profile          string  `json:"profile"`
	ExpectedLoss     float64 `json:"expected_loss"`
	ProducedLoss     float64 `json:"produced_loss"`      // both directions
	ProducedToDevice float64 `json:"produced_to_device"` // gateway → device
	Retransmits      uint64  `json:"retransmits"`
	Stalled          uint64  `json:"stalled"`
	MeanAddedDelayMs float64 `json:"mean_added_delay_ms"`
}

// Run runs the scenario. It returns an error when the scenario could not
// run; a run whose criterion failed (judge.go) returns a Result with OK false and the
// reasons in Failures (and errInvariant wrapped in the error).
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	out := cfg.Progress
	bag, err := rosbag.Open(cfg.BagDir)
	if err != nil {
		return nil, err
	}
	defer bag.Close()

	gcfg, gyaml, err := gatewayConfig(&cfg)
	if err != nil {
		return nil, fmt.Errorf("gateway configuration: %w", err)
	}
	var logw io.Writer = io.Discard
	if cfg.Out != "" {
		if err := os.MkdirAll(cfg.Out, 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(cfg.Out, "picobridge.yaml"), []byte(gyaml), 0o644); err != nil {
			return nil, err
		}
		lf, err := os.Create(filepath.Join(cfg.Out, "picobridge.log"))
		if err != nil {
			return nil, err
		}
		defer lf.Close()
		logw = lf
	} else if cfg.Logger != nil && cfg.Logger.W != nil {
		logw = cfg.Logger.W
	}
	log := slog.New(slog.NewTextHandler(logw, &slog.HandlerOptions{Level: slog.LevelInfo}))

	start := time.Now()
	res := &Result{Started: start, Bag: cfg.BagDir, BagFrom: cfg.BagFrom, Duration: cfg.Duration, ScanHz: cfg.ScanHz, Domain: cfg.Domain,
		Written: map[string]int{}, WriteErrors: map[string]int{}, GatewayDrops: map[string]uint64{}, Out: cfg.Out}

	// 1. The gateway, in-process, on loopback.
	srv, err := server.Start(ctx, server.Options{Config: gcfg, Logger: log.With("side", "gateway")})
	if err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	defer srv.Close()
	eps := srv.Endpoints()
	if len(eps) == 0 {
		return nil, errors.New("gateway: no endpoint")
	}
	res.Gateway = eps[0]
	gw := srv.Gateway()

	// The replay's DDS participant (fails at once in a build without Cyclone DDS).
	sink, err := ddssink.Open(ddspath.Config{DomainID: uint32(cfg.Domain)}, ddssink.Options{WaitMatched: 1, MatchTimeout: 20 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("DDS: %w", err)
	}
	defer sink.Close()

	// 2. The impaired link.
	prof, err := linkemu.LookupProfile(cfg.Profile)
	if err != nil {
		return nil, err
	}
	proxy, err := linkemu.NewTCPProxy("127.0.0.1:0", strings.TrimPrefix(res.Gateway, "tcp/"), linkemu.Config{Profile: prof, Seed: cfg.Seed})
	if err != nil {
		return nil, fmt.Errorf("linkemu: %w", err)
	}
	defer proxy.Close()

	fmt.Fprintf(out, "picodemo: bag %s\n", describeBag(cfg.BagDir, cfg.BagFrom))
	fmt.Fprintf(out, "picodemo: gateway %s (DDS domain %d, /scan and /imu_data critical)", res.Gateway, cfg.Domain)
	if a := srv.HTTPAddr(); a != "" {
		fmt.Fprintf(out, ", status http://%s/devicez", a)
	}
	fmt.Fprintln(out)
	fmt.Fprintf(out, "picodemo: impaired link: linkemu TCP proxy %s, profile %q (%s)\n", proxy.Addr(), prof.Name, describeProfile(prof))
	fmt.Fprintf(out, "picodemo: classifier tuned for the demo: window 10 probes (2 s at 5 Hz), evaluation every 500ms, 2 consecutive\n")
	fmt.Fprintf(out, "          (default: 50 probes = 10 s, 1s, 3) so that %s is demoted within the run\n", ImpairedDevice)
	if cfg.PinCritical {
		fmt.Fprintf(out, "picodemo: %s is pinned CRITICAL (class: critical); the classifier still measures it\n", CriticalDevice)
	}

	// 3. The fleet.
	col := newCollector(start)
	fleetCfg := &devsim.FleetConfig{Endpoint: res.Gateway, Devices: fleetDevices("tcp/" + proxy.Addr())}
	fleet, err := devsim.NewFleet(fleetCfg, devsim.Options{OnSample: col.onSample, Logger: log.With("side", "devsim")})
	if err != nil {
		return nil, fmt.Errorf("fleet: %w", err)
	}
	for _, d := range fleetCfg.Devices {
		link := "loopback"
		if d.Endpoint != "" {
			link = "linkemu " + prof.Name
		}
		subs := make([]string, 0, len(d.Subscriptions))
		for _, s := range d.Subscriptions {
			subs = append(subs, topicOfKey(s.Key))
		}
		m := fleet.Device(d.Name).Model()
		fmt.Fprintf(out, "picodemo: device %-8s %-22s link %-17s subscribes %-18s batch %d B, ring %d, socket window %v, per-fd lock %v\n",
			d.Name, d.Platform+"/"+d.Board, link, strings.Join(subs, ","), m.BatchSize, m.RingDepth, m.SocketWindow, m.PerFdLock)
	}
	if err := fleet.Start(ctx); err != nil {
		return nil, fmt.Errorf("fleet: %w", err)
	}
	defer fleet.Stop()

	// Every device attached, subscribed and announced.
	if err := waitUntil(ctx, 20*time.Second, func() bool {
		dz := gw.Devicez(bridge.DevicezOptions{})
		n := 0
		for _, d := range dz.Devices {
			if len(d.Subscriptions) > 0 && d.Classifier.ProbesSent > 0 {
				n++
			}
		}
		return n >= len(fleetCfg.Devices)
	}); err != nil {
		return nil, fmt.Errorf("devices did not attach to the gateway: %w", err)
	}

	// The classifier settles: zephyr1 CRITICAL from its own readings, esp1
	// demoted. Data flows only then, as on a robot whose devices were
	// classified before the mission starts.
	if cfg.PinCritical {
		fmt.Fprintf(out, "picodemo: waiting for the classifier: %s demoted\n", ImpairedDevice)
	} else {
		fmt.Fprintf(out, "picodemo: waiting for the classifier: %s CRITICAL from its readings, %s demoted\n", CriticalDevice, ImpairedDevice)
	}
	if err := waitUntil(ctx, 20*time.Second, func() bool {
		dz := gw.Devicez(bridge.DevicezOptions{Transitions: true})
		col.observeClasses(dz, time.Now())
		var crit, demoted bool
		for _, d := range dz.Devices {
			switch d.Name {
			case CriticalDevice:
				crit = d.Classifier.State == bridge.ClassCritical || cfg.PinCritical
			case ImpairedDevice:
				demoted = d.Classifier.Class == bridge.ClassNoncritical
			}
		}
		return crit && demoted
	}); err != nil {
		fmt.Fprintf(out, "picodemo: the classifier did not settle (%v); replaying anyway\n", err)
	}
	for _, d := range gw.Devicez(bridge.DevicezOptions{}).Devices {
		r := d.Classifier.Reading
		fmt.Fprintf(out, "picodemo: t=%4.1fs %-8s %-11s probe rtt %v, loss %.0f%%\n", time.Since(start).Seconds(), d.Name, d.Classifier.Class, r.RTT.Round(100*time.Microsecond), 100*r.Loss)
	}

	// 4. The replay.
	rec := newRecordingSink(sink)
	scanSrc, err := replay.NewFixedRateSource(bag, ScanTopic, cfg.ScanHz)
	if err != nil {
		return nil, err
	}
	imuSrc, err := replay.NewBagSource(bag, replay.BagOptions{Topics: []string{IMUTopic}, Loop: true})
	if err != nil {
		return nil, err
	}
	eng := replay.New(rec, replay.Options{RewriteStamps: true, Duration: cfg.Duration}, scanSrc, imuSrc)
	fmt.Fprintf(out, "picodemo: replaying %s at %g Hz and %s at its recorded 30 Hz onto DDS for %v\n", ScanTopic, cfg.ScanHz, IMUTopic, cfg.Duration)
	replayDone := make(chan error, 1)
	rctx, rcancel := context.WithCancel(ctx)
	defer rcancel()
	res.ReplayFrom = time.Since(start).Seconds()
	go func() { replayDone <- eng.Run(rctx) }()

	// 5. Live status until the replay ends, then the drain.
	stalls := startStallMonitor(time.Duration(float64(time.Second) / cfg.ScanHz))
	defer stalls.close()
	live := newLive(out, cfg.Terminal, start, fleet, gw, col, rec)
	live.stalls = stalls
	live.replayStart, live.replayFor = time.Now(), cfg.Duration
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var replayErr error
	running := true
	var drainEnd <-chan time.Time
loop:
	for {
		select {
		case <-ctx.Done():
			rcancel()
			if running {
				<-replayDone
			}
			return nil, ctx.Err()
		case replayErr = <-replayDone:
			running = false
			res.ReplayTo = time.Since(start).Seconds()
			live.note(fmt.Sprintf("replay done: %s; draining %v", replaySummary(eng.Stats()), cfg.Drain))
			drainEnd = time.After(cfg.Drain)
		case <-drainEnd:
			break loop
		case <-tick.C:
			live.tick()
		}
	}
	live.finish()
	if replayErr != nil && !errors.Is(replayErr, context.Canceled) {
		return nil, fmt.Errorf("replay: %w", replayErr)
	}

	// 6. Results.
	dz := gw.Devicez(bridge.DevicezOptions{Transitions: true})
	col.observeClasses(dz, time.Now())
	fst := fleet.Stats()
	res.fill(fst, dz, col, rec, fleetCfg, proxy.Stats(), prof)
	res.judgeClasses(col)
	ml, over := stalls.result()
	res.MaxWakeLateMs, res.LateWakeups = float64(ml)/1e6, over
	res.check()
	printSummary(out, res)
	if cfg.Out != "" {
		if err := writeOutputs(cfg.Out, res, col, start); err != nil {
			fmt.Fprintf(out, "picodemo: writing outputs: %v\n", err)
		}
		fmt.Fprintf(out, "picodemo: outputs in %s (summary.json, samples.csv, latency_cdf.png, class_timeline.png, picobridge.yaml, picobridge.log)\n", cfg.Out)
	}
	if !res.OK {
		return res, fmt.Errorf("%w: %s", errInvariant, strings.Join(res.Failures, "; "))
	}
	return res, nil
}

// ErrInvariant is wrapped by Run's error when the run completed but the
// criterion (judge.go) did not hold.
var ErrInvariant = errInvariant

func waitUntil(ctx context.Context, d time.Duration, cond func() bool) error {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %v", d)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil
}

func describeProfile(p linkemu.Profile) string {
	d, g := p.ToDevice, p.ToGateway
	return fmt.Sprintf("mean delay %v to the device, %v back; Gilbert–Elliott loss %.1f%% / %.1f%%",
		d.MeanDelay(), g.MeanDelay(), 100*d.ExpectedLoss(), 100*g.ExpectedLoss())
}

func replaySummary(st replay.Stats) string {
	var parts []string
	for _, t := range sortedKeys(st.Topics) {
		parts = append(parts, fmt.Sprintf("%s %d sent", t, st.Topics[t].Sent))
	}
	return strings.Join(parts, ", ")
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func (r *Result) fill(fst devsim.FleetStats, dz bridge.DevicezResponse, col *collector, rec *recordingSink, fc *devsim.FleetConfig, ls linkemu.Stats, prof linkemu.Profile) {
	for _, t := range []string{ScanTopic, IMUTopic} {
		r.Written[t] = rec.count(t)
		r.WriteErrors[t] = rec.writeErrors(t)
	}
	r.Supervisor = fmt.Sprint(dz.Supervisor.Mode)
	for _, c := range dz.Supervisor.History {
		r.SupervisorChanges = append(r.SupervisorChanges, fmt.Sprintf("%v→%v at %.1fs (%s)", c.From, c.To, c.At.Sub(r.Started).Seconds(), c.Reason))
	}
	r.Host = hostLoad()
	samples := col.snapshot()
	for _, dc := range fc.Devices {
		dr := DeviceResult{Name: dc.Name, Platform: dc.Platform, Board: dc.Board, Link: "loopback",
			ExpectCritical: expectCritical[dc.Name], Keys: map[string]KeyResult{}, Forwarded: map[string]uint64{},
			GatewayDrops: map[string]uint64{}, CriticalDropped: map[string]uint64{}}
		if dc.Endpoint != "" {
			dr.Link = "linkemu " + prof.Name
		}
		var ds devsim.DeviceStats
		for _, s := range fst.Devices {
			if s.Name == dc.Name {
				ds = s
			}
		}
		for _, sub := range dc.Subscriptions {
			ss := ds.Subscriptions[sub.Key]
			topic := topicOfKey(sub.Key)
			written := rec.written(topic)
			got := col.deliveredStamps(dc.Name, sub.Key)
			kr := KeyResult{Critical: isCriticalTopic(topic), Written: rec.count(topic), Delivered: len(got), OutOfOrder: outOfOrder(got),
				RingFull: ss.RingFullDrops, Oversize: ss.OversizeDrops, Slot: ss.SlotDrops}
			seen := make(map[int64]bool, len(got))
			for _, s := range got {
				seen[s] = true
			}
			for _, w := range written {
				if seen[w] {
					kr.Received++
					delete(seen, w) // a stamp written twice counts once
				}
			}
			kr.Missing = kr.Written - kr.Received
			dr.Keys[sub.Key] = kr
			dr.Expected += uint64(kr.Written)
			dr.Received += ss.Delivered
			dr.OutOfOrder += kr.OutOfOrder
			dr.RingFullDrops += ss.RingFullDrops
			dr.OversizeDrops += ss.OversizeDrops
			dr.SlotDrops += ss.SlotDrops
		}
		dr.OversizeDrops += ds.OversizeDropsUnattributed
		var lat []float64
		for _, s := range samples {
			if s.Device == dc.Name {
				if l := s.latency(); l > 0 {
					lat = append(lat, float64(l)/1e6)
				}
			}
		}
		p := percentiles(lat, 50, 95, 99)
		dr.P50, dr.P95, dr.P99 = p[0], p[1], p[2]
		for _, d := range dz.Devices {
			if d.Name != dc.Name {
				continue
			}
			dr.Class = d.Classifier.Class.String()
			maps.Copy(dr.CriticalDropped, d.CriticalDropped)
			for _, tr := range d.Classifier.History {
				dr.Transitions = append(dr.Transitions, fmt.Sprintf("%s→%s at %.1fs (%s)", tr.From, tr.To, tr.At.Sub(r.Started).Seconds(), tr.Reason))
				if dc.Name == ImpairedDevice && tr.To == bridge.ClassNoncritical {
					r.Demoted = true
				}
			}
			for lane, l := range d.Lanes {
				dr.Forwarded[lane] = l.Forwarded
				for reason, n := range l.Dropped {
					dr.GatewayDrops[lane+"/"+reason] += n
					r.GatewayDrops[lane+"/"+reason] += n
				}
			}
		}
		r.Devices = append(r.Devices, dr)
	}
	r.Link = LinkResult{Profile: prof.Name, ExpectedLoss: ls.ExpectedLoss(linkemu.ToDevice), ProducedLoss: ls.ProducedLoss(),
		ProducedToDevice: ls.ToDevice.ProducedLoss(), Retransmits: ls.ToDevice.Retransmits + ls.ToGateway.Retransmits,
		Stalled: ls.ToDevice.Stalled + ls.ToGateway.Stalled, MeanAddedDelayMs: float64(ls.ToDevice.MeanAddedDelay()) / 1e6}
}

// hostLoad describes the machine's load: "load average 1.20 0.80 0.50 on 2 CPUs".
func hostLoad() string {
	s := fmt.Sprintf("%d CPUs", runtime.NumCPU())
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(b)); len(f) >= 3 {
			s = fmt.Sprintf("load average %s %s %s on %s", f[0], f[1], f[2], s)
		}
	}
	return s
}
