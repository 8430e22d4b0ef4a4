package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/picobridge/picobridge/bridge"
	"github.com/picobridge/picobridge/ddspath"
	"github.com/picobridge/picobridge/eval/demo"
	"github.com/picobridge/picobridge/eval/measure"
	"github.com/picobridge/picobridge/sim/devsim"
	"github.com/picobridge/picobridge/sim/linkemu"
)

// bridgeVariant selects what a picobridge run measures.
type bridgeVariant int

const (
	bridgeFull         bridgeVariant = iota // exp3: classifier on
	bridgeNoClassifier                      // exp4: lanes on, classifier off
	bridgeHop                               // exp6: DDS reader directly vs through picobridge
)

// Direct is the consumer name of exp6's DDS reader that reads the publisher directly.
const Direct = "direct"

// picobridgeBinary finds or builds `picobridge` (with DDS): $PICOBRIDGE_BIN, else a build
// of ./cmd/picobridge from the source tree this package was compiled from.
func picobridgeBinary() (string, error) {
	if p := os.Getenv("PICOBRIDGE_BIN"); p != "" {
		return p, nil
	}
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", errors.New("picobridge binary: set PICOBRIDGE_BIN")
	}
	root := filepath.Join(filepath.Dir(file), "..", "..")
	if _, err := os.Stat(filepath.Join(root, "cmd", "picobridge")); err != nil {
		return "", fmt.Errorf("picobridge binary: set PICOBRIDGE_BIN (no source tree at %s)", root)
	}
	dir := filepath.Join(os.TempDir(), "picoeval-bin")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "picobridge")
	cmd := exec.Command("go", "build", "-tags", "cyclonedds", "-o", bin, "./cmd/picobridge")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build picobridge: %v\n%s", err, out)
	}
	return bin, nil
}

var (
	pbOnce sync.Once
	pbBin  string
	pbErr  error
)

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// devicezDoc mirrors the parts of /devicez?transitions=1 the runner reads.
type devicezDoc struct {
	Supervisor struct {
		History []struct {
			At     time.Time `json:"at"`
			From   string    `json:"from"`
			To     string    `json:"to"`
			Reason string    `json:"reason"`
		} `json:"transitions"`
	} `json:"supervisor"`
	Devices []struct {
		Name       string `json:"name"`
		Classifier struct {
			Class   string `json:"class"`
			History []struct {
				At     time.Time `json:"at"`
				From   string    `json:"from"`
				To     string    `json:"to"`
				Reason string    `json:"reason"`
			} `json:"transitions"`
		} `json:"classifier"`
		BatchedRateHz float64 `json:"batched_rate_hz"`
		Lanes         map[string]struct {
			Forwarded uint64            `json:"forwarded"`
			Dropped   map[string]uint64 `json:"dropped"`
		} `json:"lanes"`
	} `json:"devices"`
}

func getDevicez(addr string) (devicezDoc, error) {
	var dz devicezDoc
	resp, err := http.Get("http://" + addr + "/devicez?transitions=1")
	if err != nil {
		return dz, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return dz, err
	}
	return dz, json.Unmarshal(b, &dz)
}

// device names in the gateway's devices.list → consumer names in the CSV.
var deviceConsumer = map[string]string{"crit": Critical, "slow": Impaired}

// The picobridge devices of exp3/4/6 are sim/devsim devices that obey their knobs (the
// receive ring, the batch size, the socket window): both are the demo's tuned Zephyr board
// (eval/demo.TunedZephyrEnv: 5 ms socket window, 4096 B batches — firmware built for 30 Hz
// LaserScans), so they differ only in their link. The gateway's devices.list names the same
// platform, board and env, as a fleet's config would.
const (
	devPlatform = "zephyr"
	devBoard    = "nucleo_f429zi"
)

// devEnv is the knob overrides of both devices (eval/demo.TunedZephyrEnv).
var devEnv = demo.TunedZephyrEnv

// devicesYAML is the gateway's devices.list for the two devices.
func devicesYAML() string {
	var b strings.Builder
	b.WriteString("devices:\n  list:\n")
	for _, name := range []string{"crit", "slow"} {
		// the devices' scan subscription has a large slot (startDevice)
		fmt.Fprintf(&b, "    - name: %s\n      platform: %s\n      board: %s\n      large_subscriptions: [%q]\n      env:\n", name, devPlatform, devBoard, "scan")
		keys := make([]string, 0, len(devEnv))
		for k := range devEnv {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(&b, "        %s: %q\n", k, devEnv[k])
		}
	}
	return b.String()
}

// deviceDrops counts the samples a simulated device dropped, by outcome (ring_full,
// oversize, slot).
type deviceDrops struct {
	mu sync.Mutex
	n  map[string]map[string]int // device → outcome → count
}

func (d *deviceDrops) add(dev, outcome string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.n == nil {
		d.n = map[string]map[string]int{}
	}
	if d.n[dev] == nil {
		d.n[dev] = map[string]int{}
	}
	d.n[dev][outcome]++
}

func (d *deviceDrops) of(dev string) map[string]int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return maps.Clone(d.n[dev])
}

// startDevicePair starts the two devices every side-by-side system feeds, as program
// (DevicesDevsim or DevicesPico): "crit" (Critical consumer) on critEP and "slow"
// (Impaired) on slowEP, the impaired link's proxy, both subscribing key; on error none is
// left running.
func startDevicePair(ctx context.Context, program, critEP, slowEP, key string, rec *Recorder, drops *deviceDrops) (crit, slow evalDevice, err error) {
	start := func(name, ep, consumer string) (evalDevice, error) {
		if program == DevicesPico {
			return startPicoDevice(ctx, name, ep, key, rec, consumer)
		}
		d, err := startDevice(ctx, name, ep, key, rec, consumer, drops)
		if err != nil {
			return nil, err
		}
		return devsimDevice{d}, nil
	}
	crit, err = start("crit", critEP, Critical)
	if err != nil {
		return nil, nil, err
	}
	slow, err = start("slow", slowEP, Impaired)
	if err != nil {
		crit.Stop()
		return nil, nil, err
	}
	return crit, slow, nil
}

// startDevice starts a simulated zenoh-pico device (sim/devsim, with its probe responder)
// connected to endpoint and subscribed to key; every LaserScan its application takes is
// reported to rec (header stamp, delivery time) and every one it drops to drops.
func startDevice(ctx context.Context, name, endpoint, key string, rec *Recorder, consumer string, drops *deviceDrops) (*devsim.Device, error) {
	d, err := devsim.NewDevice(devsim.DeviceConfig{Name: name, Platform: devPlatform, Board: devBoard, Env: devEnv, Endpoint: endpoint,
		Subscriptions: []devsim.Subscription{{Key: key, Large: true}}}, devsim.Options{OnSample: func(e devsim.SampleEvent) {
		if e.Outcome != devsim.OutcomeDelivered {
			drops.add(name, e.Outcome)
			return
		}
		if !e.Stamp.IsZero() {
			rec.Received(consumer, e.Stamp.UnixNano(), e.Delivered.UnixNano())
		}
	}})
	if err != nil {
		return nil, fmt.Errorf("device %s: %w", name, err)
	}
	if err := d.Start(ctx); err != nil {
		return nil, fmt.Errorf("device %s: %w", name, err)
	}
	return d, nil
}

// runBridge is experiments 3, 4 and 6: Cyclone publisher (as exp1) → `picobridge run` (its
// own process; route /scan critical) → a critical device (Go zenohpath client + probe
// responder, direct) and an impaired device (same, through linkemu.TCPProxy with the level's
// profile). The toggle level switches the proxy between moderate and clean every quarter of
// the run. exp6 adds a DDS reader (own process) reading the publisher directly.
func runBridge(ctx context.Context, cfg Config, v bridgeVariant, program, level string, res *Result) error {
	pbOnce.Do(func() { pbBin, pbErr = picobridgeBinary() })
	if pbErr != nil {
		return pbErr
	}
	rec := NewRecorder(res.Run)
	dom := domainID()
	zport, err := freePort()
	if err != nil {
		return err
	}
	hport, err := freePort()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "picoeval-pb-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	classifier := "true"
	if v == bridgeNoClassifier {
		classifier = "false"
	}
	yaml := fmt.Sprintf("dds:\n  domain: %d\nroutes:\n  critical: [\"/scan\"]\n%sclassifier:\n  enabled: %s\n", dom, devicesYAML(), classifier)
	cfgFile := filepath.Join(dir, "picobridge.yaml")
	if err := os.WriteFile(cfgFile, []byte(yaml), 0o644); err != nil {
		return err
	}
	httpAddr := fmt.Sprintf("127.0.0.1:%d", hport)
	zep := fmt.Sprintf("tcp/127.0.0.1:%d", zport)
	gwArgs := []string{"run", "-c", cfgFile, "-l", zep, "--metrics", httpAddr}
	for _, kv := range cfg.GatewayCfg {
		gwArgs = append(gwArgs, "--cfg", kv)
	}
	gwCmd := exec.Command(pbBin, gwArgs...)
	gwCmd.Env = append(os.Environ(), "ROS_DOMAIN_ID=")
	gw, err := startProc("picobridge", gwCmd, nil, "")
	if err != nil {
		return err
	}
	defer gw.terminate() // picobridge does not watch stdin: SIGTERM is its shutdown
	if err := waitFor("picobridge /healthz", 30*time.Second, func() bool {
		r, err := http.Get("http://" + httpAddr + "/healthz")
		if err != nil {
			return false
		}
		r.Body.Close()
		return r.StatusCode == http.StatusOK
	}); err != nil {
		return fmt.Errorf("%w: %s", err, gw.stderr.String())
	}

	startLevel := level
	if level == "toggle" {
		startLevel = "clean"
	}
	prof, err := linkemu.LookupProfile(startLevel)
	if err != nil {
		return err
	}
	moderate, _ := linkemu.LookupProfile("moderate")
	clean, _ := linkemu.LookupProfile("clean")
	proxy, err := linkemu.NewTCPProxy("127.0.0.1:0", fmt.Sprintf("127.0.0.1:%d", zport), linkemu.Config{Profile: prof, Seed: cfg.Seed, Framing: linkemu.FramingZenoh})
	if err != nil {
		return err
	}
	defer proxy.Close()
	res.ExpectedLoss = prof.ToDevice.ExpectedLoss()
	if level == "toggle" {
		res.ExpectedLoss = moderate.ToDevice.ExpectedLoss() / 2
	}
	res.Impairment = fmt.Sprintf("impaired device's TCP link through linkemu TCPProxy, profile %s", level)

	const key = "scan" // plain key style: /scan → scan
	var drops deviceDrops
	crit, slow, err := startDevicePair(ctx, program, zep, "tcp/"+proxy.Addr(), key, rec, &drops)
	if err != nil {
		return err
	}
	defer crit.Stop()
	defer slow.Stop()

	var direct *child
	if v == bridgeHop {
		direct, err = startChild("direct reader", childSpec{Role: "reader", Domain: dom, Topic: "rt/scan", Type: scanType,
			Consumer: Direct, Reliable: true, KeepAll: true}, rec, Direct)
		if err != nil {
			return err
		}
		defer direct.stop()
		if _, err := direct.waitLine("ready", 30*time.Second); err != nil {
			return err
		}
	}

	p, err := ddspath.Open(ddspath.Config{DomainID: uint32(dom)})
	if err != nil {
		return err
	}
	defer p.Close()
	w, write, err := cycloneWriter(p, "rt/scan", scanType, ddspath.QoS{Reliability: ddspath.Reliable, History: ddspath.KeepAll, MaxBlocking: -1})
	if err != nil {
		return err
	}
	want := 1
	if direct != nil {
		want = 2
	}
	if err := waitFor("gateway reader matched", 30*time.Second, func() bool { return w.Matched() >= want }); err != nil {
		return err
	}
	// Both devices attached (they appear in /devicez once their responder subscribed).
	if err := waitFor("devices attached", 30*time.Second, func() bool {
		dz, err := getDevicez(httpAddr)
		if err != nil {
			return false
		}
		n := 0
		for _, d := range dz.Devices {
			if _, ok := deviceConsumer[d.Name]; ok {
				n++
			}
		}
		return n == 2
	}); err != nil {
		return err
	}
	time.Sleep(time.Second) // the DDS→Zenoh route and the devices' subscriptions settle
	if m := bridge.RealtimeMode(cfg.HarnessRealtime); m != "" && m != bridge.RealtimeOff {
		rt := bridge.RaiseThreads(m, slog.Default())
		res.Notes = append(res.Notes, fmt.Sprintf("harness threads raised (--harness-realtime %s): %v", m, rt.Threads))
	}
	res.Notes = append(res.Notes, "publisher: Cyclone RELIABLE KEEP_ALL, max_blocking_time ∞; gateway: `picobridge run` (route /scan critical, default classifier and lanes"+map[bool]string{true: ", classifier disabled", false: ""}[v == bridgeNoClassifier]+gatewayCfgNote(cfg.GatewayCfg)+"); devices: "+devicesNote(program)+" with probe responders")

	d := cfg.runDuration(level)
	before, _ := measure.ProcUsage(gw.pid())
	stopToggle := make(chan struct{})
	var toggleWG sync.WaitGroup
	if level == "toggle" {
		period := d / 4
		toggleWG.Add(1)
		go func() {
			defer toggleWG.Done()
			on := false
			rec.Toggle(time.Now().UnixNano(), false)
			t := time.NewTicker(period)
			defer t.Stop()
			for {
				select {
				case <-stopToggle:
					return
				case <-t.C:
					on = !on
					pr := clean
					if on {
						pr = moderate
					}
					proxy.SetProfile(pr)
					rec.Toggle(time.Now().UnixNano(), on)
				}
			}
		}()
		res.Impairment = fmt.Sprintf("impaired device's TCP link through linkemu TCPProxy, clean and moderate alternating every %v", period)
	}
	s, e, err := replayScan(ctx, cfg, rec, d, write)
	close(stopToggle)
	toggleWG.Wait()
	if err != nil {
		return err
	}
	res.StartNs, res.EndNs = s, e
	time.Sleep(time.Second)
	if after, err := measure.ProcUsage(gw.pid()); err == nil {
		u := after.Sub(before)
		res.Gateway = &u
	}
	res.DeviceRecvP95Ms, res.HasDeviceRecv = crit.RecvP95(key)
	dz, err := getDevicez(httpAddr)
	if err != nil {
		return fmt.Errorf("devicez: %w", err)
	}
	for _, dev := range dz.Devices {
		c, ok := deviceConsumer[dev.Name]
		if !ok {
			continue
		}
		for _, tr := range dev.Classifier.History {
			rec.Transition(measure.Transition{AtNs: tr.At.UnixNano(), Device: c, From: strings.ToUpper(tr.From), To: strings.ToUpper(tr.To)})
		}
		var lanes []string
		for name, l := range dev.Lanes {
			lanes = append(lanes, fmt.Sprintf("%s fwd %d drops %v", name, l.Forwarded, l.Dropped))
		}
		sort.Strings(lanes)
		res.Notes = append(res.Notes, fmt.Sprintf("device %s: class %s, batched %.0f Hz, %s; dropped in the device: %v", dev.Name, dev.Classifier.Class, dev.BatchedRateHz, strings.Join(lanes, ", "), deviceDropsNote(program, drops.of(dev.Name))))
	}
	res.Notes = append(res.Notes, "lost at the gateway's DDS input: "+ddsInputDrops(getMetrics(httpAddr)))
	res.Notes = append(res.Notes, "supervisor: "+supervisorChanges(dz, res.StartNs))
	st := proxy.Stats()
	res.ProducedLoss = st.ProducedLoss()
	res.Notes = append(res.Notes, fmt.Sprintf("linkemu: to device %d packets, %d lost, %d retransmits; produced loss %s %%",
		st.ToDevice.Packets, st.ToDevice.Lost, st.ToDevice.Retransmits, strconv.FormatFloat(100*res.ProducedLoss, 'f', 2, 64)))
	rec.fill(res)
	return nil
}

// gatewayCfgNote names the --gateway-cfg settings in a run's notes ("" without any).
func gatewayCfgNote(kvs []string) string {
	if len(kvs) == 0 {
		return ""
	}
	return ", --cfg " + strings.Join(kvs, " --cfg ")
}

// ddsInputDrops reads the gateway's samples lost at its DDS input
// (picobridge_dds_samples_dropped_total, bridge/server) from a Prometheus text exposition:
// "topic reason N" per nonzero series, sorted; "none" without any.
func ddsInputDrops(metrics string) string {
	const name = "picobridge_dds_samples_dropped_total{"
	var out []string
	for _, l := range strings.Split(metrics, "\n") {
		rest, ok := strings.CutPrefix(l, name)
		if !ok {
			continue
		}
		labels, val, ok := strings.Cut(rest, "} ")
		if !ok || val == "0" {
			continue
		}
		var topic, reason string
		for _, kv := range strings.Split(labels, ",") {
			k, v, _ := strings.Cut(kv, "=")
			v = strings.Trim(v, `"`)
			switch k {
			case "topic":
				topic = v
			case "reason":
				reason = v
			}
		}
		out = append(out, fmt.Sprintf("%s %s %s", topic, reason, val))
	}
	if len(out) == 0 {
		return "none"
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

// getMetrics is the gateway's /metrics text ("" when it cannot be read).
func getMetrics(addr string) string {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// supervisorChanges lists the gateway's supervisor mode changes of a run (/devicez) as
// "FROM→TO at +t s (reason)", t from startNs; "no mode change" without any.
func supervisorChanges(dz devicezDoc, startNs int64) string {
	var parts []string
	for _, c := range dz.Supervisor.History {
		parts = append(parts, fmt.Sprintf("%s→%s at %+.1f s (%s)", c.From, c.To, float64(c.At.UnixNano()-startNs)/1e9, c.Reason))
	}
	if len(parts) == 0 {
		return "no mode change"
	}
	return strings.Join(parts, ", ")
}
