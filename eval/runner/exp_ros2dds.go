package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/picobridge/picobridge/ddspath"
	"github.com/picobridge/picobridge/eval/measure"
	"github.com/picobridge/picobridge/sim/linkemu"
	"github.com/picobridge/picobridge/zenohpath"
)

// ROS2DDSExp is the experiment id (--only) of the zenoh-bridge-ros2dds runs: the same DDS
// publisher and the same sim/devsim devices as exp3, with zenohd 1.10.2 + the ros2dds
// plugin 1.10.2 (the anchor build, scripts/anchors.sh) in picobridge's place.
const ROS2DDSExp = "ros2dds"

// ZenohdExp is the experiment id (--only) of the plain Rust router runs: zenohd 1.10.2
// (the anchor build) without plugin, a Go Zenoh client publishing the bag's /scan CDR on
// "scan" as the plugin does (reliable, BLOCK, priority 1, express), and the same devices.
// It is the router's share of a ros2dds run: ros2dds − zenohd is the plugin's DDS side.
const ZenohdExp = "zenohd"

// ROS2DDSLevels are the impairment levels of the ros2dds runs: exp3's, without the toggle
// run (ros2dds has no classifier to detect it).
var ROS2DDSLevels = Levels

// ros2ddsPubPriority is the plugin's pub_priorities entry that makes /scan what
// picobridge's `routes.critical: ["/scan"]` makes it: Zenoh priority 1 (RealTime) and
// express (no batching) — what a ros2dds user configures for a critical topic
// ("<regex>=<1..7>[:express]", zenoh-plugin-ros2dds config.rs). Without it the plugin
// publishes with the default priority (5, Data) and batches.
const ros2ddsPubPriority = "^/scan$=1:express"

// ros2ddsDistro is the ROS_DISTRO zenohd runs with: the publisher announces its node with
// humble's 24-byte GIDs (ddspath.NodeConfig default); the plugin assumes iron without it
// and then misreads them (cmd/picobridge TestAnchorROS2DDSRoutesBagReplay).
const ros2ddsDistro = "humble"

// ros2ddsPubNode is the ROS node (on ros_discovery_info) the publisher's writer belongs
// to: the plugin routes only writers a node claims.
const ros2ddsPubNode = "picoeval_scan_pub"

// anchorsMissing says why the ros2dds runs cannot run here ("" when they can): they need
// $PICOBRIDGE_ANCHORS with bin/zenohd and lib/libzenoh_plugin_ros2dds.so
// (scripts/anchors.sh), and Cyclone DDS for the publisher.
func anchorsMissing() string {
	if m := zenohdMissing(); m != "" {
		return m
	}
	if _, err := os.Stat(filepath.Join(os.Getenv("PICOBRIDGE_ANCHORS"), "lib/libzenoh_plugin_ros2dds.so")); err != nil {
		return fmt.Sprintf("lib/libzenoh_plugin_ros2dds.so in PICOBRIDGE_ANCHORS=%s (run scripts/anchors.sh)", os.Getenv("PICOBRIDGE_ANCHORS"))
	}
	return ddsMissing()
}

// zenohdMissing says why the zenohd runs cannot run here ("" when they can): they need
// $PICOBRIDGE_ANCHORS with bin/zenohd.
func zenohdMissing() string {
	dir := os.Getenv("PICOBRIDGE_ANCHORS")
	if dir == "" {
		return "PICOBRIDGE_ANCHORS unset (build zenohd + zenoh-plugin-ros2dds 1.10.2: export PICOBRIDGE_ANCHORS=$(bash scripts/anchors.sh --print); bash scripts/anchors.sh)"
	}
	if _, err := os.Stat(filepath.Join(dir, "bin/zenohd")); err != nil {
		return fmt.Sprintf("bin/zenohd in PICOBRIDGE_ANCHORS=%s (run scripts/anchors.sh)", dir)
	}
	return ""
}

// ros2ddsConfig is zenohd's configuration (JSON5) for one ros2dds run: a router listening
// on tcp/127.0.0.1:port only, no multicast scouting, loading the ros2dds plugin from
// pluginDir (required: zenohd exits if it cannot load it), the plugin on DDS domain
// domain with /scan at priority 1, express (ros2ddsPubPriority). Every other plugin key
// keeps its default (namespace "/", reliable_routes_blocking true: a RELIABLE writer's
// route publishes with congestion control BLOCK).
func ros2ddsConfig(pluginDir string, port int, domain uint32) string {
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	return fmt.Sprintf(`{
  mode: "router",
  listen: { endpoints: [%s] },
  scouting: { multicast: { enabled: false } },
  plugins_loading: { enabled: true, search_dirs: [%s] },
  plugins: {
    ros2dds: {
      __required__: true,
      domain: %d,
      pub_priorities: [%s],
    },
  },
}
`, q(fmt.Sprintf("tcp/127.0.0.1:%d", port)), q(pluginDir), domain, q(ros2ddsPubPriority))
}

// zenohdConfig is zenohd's configuration (JSON5) for a zenohd run: the router of
// ros2ddsConfig without any plugin.
func zenohdConfig(port int) string {
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	return fmt.Sprintf(`{
  mode: "router",
  listen: { endpoints: [%s] },
  scouting: { multicast: { enabled: false } },
}
`, q(fmt.Sprintf("tcp/127.0.0.1:%d", port)))
}

// ros2ddsEnv is zenohd's environment: the parent's without the variables that would
// change the plugin's DDS side or the log, plus ROS_DISTRO, the publisher's Cyclone
// configuration (loopback unicast, ddspath.Config.XML) and a log level that shows the
// plugin's routes.
func ros2ddsEnv(parent []string, domain uint32) []string {
	var env []string
	for _, e := range parent {
		name, _, _ := strings.Cut(e, "=")
		switch name {
		case "ROS_DISTRO", "CYCLONEDDS_URI", "ROS_DOMAIN_ID", "ROS_LOCALHOST_ONLY", "ROS_AUTOMATIC_DISCOVERY_RANGE", "RUST_LOG", "NO_COLOR":
			continue
		}
		env = append(env, e)
	}
	return append(env, "ROS_DISTRO="+ros2ddsDistro, "CYCLONEDDS_URI="+ddspath.Config{DomainID: domain}.XML(),
		"RUST_LOG=info,zenoh_plugin_ros2dds::route_publisher=debug", "NO_COLOR=1")
}

// zenohPublisherOptions are the zenohd system's publisher settings: those of the plugin's
// route for /scan (route_publisher.rs with ros2ddsPubPriority: reliable, BLOCK for a
// RELIABLE writer, priority 1, express).
var zenohPublisherOptions = zenohpath.PublisherOptions{Express: true, Priority: zenohpath.PriorityRealTime,
	CongestionControl: zenohpath.CongestionControlBlock, Reliability: zenohpath.ReliabilityReliable}

// zenohdLog watches zenohd's stdout: readiness, a failed plugin load, the plugin's route
// lines (kept for the run's notes).
type zenohdLog struct {
	mu     sync.Mutex
	ready  bool
	failed string
	routes []string
}

var routeLine = regexp.MustCompile(`Route Publisher \(\S+ -> \S+\): congestion_ctrl .*`)

func (z *zenohdLog) handleLine(line string) bool {
	z.mu.Lock()
	defer z.mu.Unlock()
	switch {
	case strings.Contains(line, "Zenoh can be reached at"):
		z.ready = true
	case strings.Contains(line, "Plugin load failure") || strings.Contains(line, "ERROR"):
		if z.failed == "" {
			z.failed = line
		}
	}
	if m := routeLine.FindString(line); m != "" {
		z.routes = append(z.routes, m)
	}
	return true
}

func (z *zenohdLog) Received(string, int64, int64) {}

func (z *zenohdLog) state() (ready bool, failed string, routes []string) {
	z.mu.Lock()
	defer z.mu.Unlock()
	return z.ready, z.failed, append([]string(nil), z.routes...)
}

// runROS2DDS is the ros2dds system: the Cyclone publisher of exp3 (RELIABLE KEEP_ALL,
// max_blocking_time ∞; its participant announces the ROS node ros2ddsPubNode) → zenohd
// 1.10.2 with zenoh-plugin-ros2dds 1.10.2 (its own process; ros2ddsConfig) → the critical
// and the impaired sim/devsim device of exp3 (same board, knobs and subscription "scan",
// the plugin's key for /scan), the impaired one through linkemu.TCPProxy with the level's
// profile. The devices' probe responders run but nothing probes them. With plugin false
// it is the zenohd system instead (ZenohdExp): zenohd without plugin and a Go Zenoh
// client publisher (zenohPublisher) in the plugin's place.
func runROS2DDS(ctx context.Context, cfg Config, level string, plugin bool, program string, res *Result) error {
	anchors := os.Getenv("PICOBRIDGE_ANCHORS")
	rec := NewRecorder(res.Run)
	dom := domainID()
	zport, err := freePort()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "picoeval-ros2dds-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	cfgFile := filepath.Join(dir, "zenohd.json5")
	zcfg := zenohdConfig(zport)
	if plugin {
		zcfg = ros2ddsConfig(filepath.Join(anchors, "lib"), zport, dom)
	}
	if err := os.WriteFile(cfgFile, []byte(zcfg), 0o644); err != nil {
		return err
	}
	zcmd := exec.Command(filepath.Join(anchors, "bin", "zenohd"), "-c", cfgFile)
	zcmd.Env = ros2ddsEnv(os.Environ(), dom)
	zlog := &zenohdLog{}
	zd, err := startProc("zenohd", zcmd, zlog, "")
	if err != nil {
		return err
	}
	defer zd.terminate()
	if err := waitFor("zenohd", 30*time.Second, func() bool {
		ready, failed, _ := zlog.state()
		return ready || failed != ""
	}); err != nil {
		return err
	}
	if ready, failed, _ := zlog.state(); !ready {
		return fmt.Errorf("zenohd: %s", failed)
	}

	prof, err := linkemu.LookupProfile(level)
	if err != nil {
		return err
	}
	zep := fmt.Sprintf("tcp/127.0.0.1:%d", zport)
	proxy, err := linkemu.NewTCPProxy("127.0.0.1:0", fmt.Sprintf("127.0.0.1:%d", zport), linkemu.Config{Profile: prof, Seed: cfg.Seed, Framing: linkemu.FramingZenoh})
	if err != nil {
		return err
	}
	defer proxy.Close()
	res.ExpectedLoss = prof.ToDevice.ExpectedLoss()
	res.Impairment = fmt.Sprintf("impaired device's TCP link through linkemu TCPProxy, profile %s", level)

	const key = "scan" // the plugin's key for /scan (namespace "/": the name without its leading slash)
	var drops deviceDrops
	crit, slow, err := startDevicePair(ctx, program, zep, "tcp/"+proxy.Addr(), key, rec, &drops) // exp_bridge.go
	if err != nil {
		return err
	}
	defer crit.Stop()
	defer slow.Stop()
	if err := waitFor("devices connected to zenohd", 30*time.Second, func() bool {
		return crit.Connected() && slow.Connected()
	}); err != nil {
		return err
	}

	var write writeFunc
	if plugin {
		p, err := ddspath.Open(ddspath.Config{DomainID: dom})
		if err != nil {
			return err
		}
		defer p.Close()
		if _, err := p.AnnounceNode(ddspath.NodeConfig{Name: ros2ddsPubNode}); err != nil {
			return err
		}
		var w *ddspath.Writer
		w, write, err = cycloneWriter(p, "rt/scan", scanType, ddspath.QoS{Reliability: ddspath.Reliable, History: ddspath.KeepAll, MaxBlocking: -1})
		if err != nil {
			return err
		}
		// The plugin creates its DDS reader once a Zenoh subscriber matches its route (the devices).
		if err := waitFor("plugin reader matched", 30*time.Second, func() bool { return w.Matched() >= 1 }); err != nil {
			_, _, routes := zlog.state()
			return fmt.Errorf("%w (plugin routes: %v)", err, routes)
		}
		time.Sleep(time.Second) // the route and the devices' subscriptions settle (as exp3)
		_, _, routes := zlog.state()
		res.Notes = append(res.Notes, fmt.Sprintf("publisher: Cyclone RELIABLE KEEP_ALL, max_blocking_time ∞, node /%s on ros_discovery_info; gateway: zenohd 1.10.2 + zenoh-plugin-ros2dds 1.10.2 (ROS_DISTRO=%s, pub_priorities [%q], other keys default); plugin: %s",
			ros2ddsPubNode, ros2ddsDistro, ros2ddsPubPriority, strings.Join(routes, "; ")))
	} else {
		sess, err := zenohpath.Open(ctx, zenohpath.Config{Connect: []string{zep}})
		if err != nil {
			return err
		}
		defer sess.Close()
		pub, err := sess.DeclarePublisher(key, zenohPublisherOptions)
		if err != nil {
			return err
		}
		if err := waitFor("publisher matched", 30*time.Second, pub.HasMatchingSubscribers); err != nil {
			return err
		}
		time.Sleep(time.Second) // as exp3
		write = func(cdr []byte, _ time.Time) (time.Duration, error) {
			t0 := time.Now()
			err := pub.Put(cdr, nil)
			return time.Since(t0), err
		}
		res.Notes = append(res.Notes, "publisher: Go Zenoh client (zenohpath) on \"scan\", reliable, congestion control BLOCK, priority RealTime, express (the plugin's route settings); gateway: zenohd 1.10.2 without plugin")
	}
	res.Notes = append(res.Notes, fmt.Sprintf("devices: %s subscribed to %q", devicesNote(program), key))

	d := cfg.runDuration(level)
	before, _ := measure.ProcUsage(zd.pid())
	s, e, err := replayScan(ctx, cfg, rec, d, write)
	if err != nil {
		return err
	}
	res.StartNs, res.EndNs = s, e
	time.Sleep(time.Second)
	if after, err := measure.ProcUsage(zd.pid()); err == nil {
		u := after.Sub(before)
		res.Gateway = &u
	}
	res.DeviceRecvP95Ms, res.HasDeviceRecv = crit.RecvP95(key)
	st := proxy.Stats()
	res.ProducedLoss = st.ProducedLoss()
	res.Notes = append(res.Notes, fmt.Sprintf("linkemu: to device %d packets, %d lost, %d retransmits; produced loss %.2f %%",
		st.ToDevice.Packets, st.ToDevice.Lost, st.ToDevice.Retransmits, 100*res.ProducedLoss))
	rec.fill(res)
	res.DeviceDrops = map[string]map[string]int{"crit": drops.of("crit"), "slow": drops.of("slow")}
	dropsOf := func(dev string) string { return fmtDrops(drops.of(dev)) }
	if program == DevicesPico {
		dropsOf = func(string) string { return deviceDropsNote(program, nil) }
	}
	res.Notes = append(res.Notes, deviceDeliveryNote(res, dropsOf))
	return nil
}

// deviceDeliveryNote is a run's per-device line: delivered / attempted publications for
// the critical ("crit") and the impaired ("slow") device, what each dropped itself, and
// the names of the devices that missed any attempted sample. dropsOf says what a device
// dropped itself (fmtDrops).
func deviceDeliveryNote(res *Result, dropsOf func(dev string) string) string {
	by := measure.ByConsumer(res.Samples)
	var parts, missed []string
	for _, dc := range []struct{ dev, consumer string }{{"crit", Critical}, {"slow", Impaired}} {
		dl := measure.CheckDelivery(res.Published, by[dc.consumer])
		parts = append(parts, fmt.Sprintf("%s %d/%d (dropped in the device: %s)", dc.dev, dl.Unique, len(res.Attempts), dropsOf(dc.dev)))
		if dl.Unique < len(res.Attempts) {
			missed = append(missed, dc.dev)
		}
	}
	m := "none"
	if len(missed) > 0 {
		m = strings.Join(missed, ", ")
	}
	return fmt.Sprintf("delivered/attempted: %s; devices that missed samples: %s", strings.Join(parts, ", "), m)
}

// fmtDrops lists a device's own drops as "ring_full 101, slot 2" (outcomes sorted), "none"
// without any.
func fmtDrops(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}
