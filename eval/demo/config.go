package demo

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/picobridge/picobridge/bridge"
	"github.com/picobridge/picobridge/sim/devsim"
)

// Bag is the recording the demo replays, inside the mumble_rplidar_imu data set.
const Bag = "hallway_room_loop"

// Device names of the fleet.
const (
	CriticalDevice = "zephyr1" // zephyr/nucleo_f429zi, clean link, scan + imu_data critical
	SimDevice      = "sim1"    // zephyr/native_sim, stock knobs, imu_data
	ImpairedDevice = "esp1"    // freertos/esp32 behind linkemu, scan
)

// Keys (plain key style: /scan → scan).
const (
	ScanTopic = "/scan"
	IMUTopic  = "/imu_data"
	ScanKey   = "scan"
	IMUKey    = "imu_data"
)

// Config is the scenario's settings. The zero value of each field takes the
// default documented on it.
type Config struct {
	// BagDir is the bag directory; default: FindBag's (the full
	// hallway_room_loop in a shared/ folder, else the embedded slice).
	BagDir string
	// BagFrom says where BagDir came from (FindBag's BagChoice.From); ""
	// with BagDir set: BagFromFlag.
	BagFrom string
	// Duration of the replay; default 60 s.
	Duration time.Duration
	// ScanHz is the fixed rate /scan is replayed at; default 30.
	ScanHz float64
	// Profile is the linkemu profile of the impaired device's link; default "moderate".
	Profile string
	// Seed of the impaired link; default 7.
	Seed uint64
	// Domain is the DDS domain; 0: a random one in 220..230 (kept away from
	// the tests' domains, docs/dds.md).
	Domain int
	// Out is the output folder; "" writes no files.
	Out string
	// Progress receives the live status and the summary; nil: discard.
	Progress io.Writer
	// Terminal makes the live status a refreshing table (ANSI) instead of lines.
	Terminal bool
	// Metrics is the gateway's HTTP address (/metrics, /devicez, /routez);
	// "" = off, "127.0.0.1:0" = any port.
	Metrics string
	// Drain is how long to wait after the replay for the lanes to empty; default 3 s.
	Drain time.Duration
	// PinCritical pins the critical device's class to CRITICAL
	// (devices.list class: critical) instead of letting the classifier
	// decide; the classifier still measures it. The smoke test pins it: it
	// asserts the data plane, and a loaded CI host can delay probes on
	// loopback past the demotion threshold.
	PinCritical bool
	// Logger receives the gateway's and devices' logs; nil: discard.
	Logger *Logger
}

// Logger is an optional text log file writer (the gateway's slog output).
type Logger struct{ W io.Writer }

func (c *Config) defaults() error {
	if c.Duration <= 0 {
		c.Duration = 60 * time.Second
	}
	if c.ScanHz <= 0 {
		c.ScanHz = 30
	}
	if c.Profile == "" {
		c.Profile = "moderate"
	}
	if c.Seed == 0 {
		c.Seed = 7
	}
	if c.Domain == 0 {
		c.Domain = 220 + rand.IntN(11)
	}
	if c.Domain < 0 || c.Domain > 232 {
		return fmt.Errorf("domain %d: want 0..232", c.Domain)
	}
	if c.Drain <= 0 {
		c.Drain = 3 * time.Second
	}
	if c.Progress == nil {
		c.Progress = io.Discard
	}
	if c.BagDir == "" {
		ch, err := FindBag()
		if err != nil {
			return err
		}
		c.BagDir, c.BagFrom = ch.Dir, ch.From
	} else if c.BagFrom == "" {
		c.BagFrom = BagFromFlag
	}
	return nil
}

// TunedZephyrEnv are the knob overrides of the critical Zephyr board: its
// firmware is built for 30 Hz LaserScans (1504 B) plus 30 Hz IMU. Stock
// Zephyr (100 ms socket window, per-socket lock, 1024 B batches) takes
// about 9 messages/s, and a LaserScan needs two batches: that is what sim1
// shows.
var TunedZephyrEnv = map[string]string{
	"NROS_ZENOH_SOCKET_TIMEOUT_MS":  "5",    // socket window: its own sends wait ≤ 5 ms
	"NROS_ZENOH_BATCH_UNICAST_SIZE": "4096", // a LaserScan fits one batch
}

// ClassifierTuning is the demo's classifier: the default 5 Hz probes, but a
// 2 s window (10 probes), evaluations every 0.5 s, 2 consecutive (the
// default window is 50 probes = 10 s, 1 s evaluations, 3 consecutive).
// Probes stay at 5 Hz: a probe to a device ends its read task's recv at
// once, whatever its socket window, and the pong is sent from that task
// (docs/probe.md).
const ClassifierTuning = `classifier:
  probe_interval: 200ms
  probe_timeout: 1s
  window: 10
  min_samples: 10
  evaluation_interval: 500ms
  consecutive: 2
`

// gatewayConfig is the YAML laid over the embedded default.
func gatewayConfig(c *Config) (*bridge.Config, string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "zenoh:\n  listen: [tcp/127.0.0.1:0]\n")
	fmt.Fprintf(&b, "dds:\n  domain: %d\n", c.Domain)
	fmt.Fprintf(&b, "routes:\n  allow: [%q, %q]\n  critical: [%q, %q]\n", ScanTopic, IMUTopic, CriticalTopics[0], CriticalTopics[1])
	fmt.Fprintf(&b, "devices:\n  list:\n")
	for _, d := range fleetDevices("") {
		fmt.Fprintf(&b, "    - name: %s\n      platform: %s\n      board: %s\n", d.Name, d.Platform, d.Board)
		var large []string // the subscriptions the device's application declared large
		for _, s := range d.Subscriptions {
			if s.Large {
				large = append(large, fmt.Sprintf("%q", s.Key))
			}
		}
		if len(large) > 0 {
			fmt.Fprintf(&b, "      large_subscriptions: [%s]\n", strings.Join(large, ", "))
		}
		if d.Name == CriticalDevice && c.PinCritical {
			fmt.Fprintf(&b, "      class: critical\n")
		}
		if len(d.Env) > 0 {
			fmt.Fprintf(&b, "      env:\n")
			for _, k := range sortedKeys(d.Env) {
				fmt.Fprintf(&b, "        %s: %q\n", k, d.Env[k])
			}
		}
	}
	b.WriteString(ClassifierTuning)
	fmt.Fprintf(&b, "metrics:\n  listen: %q\n", c.Metrics)
	cfg, err := bridge.ParseConfig("demo.yaml", []byte(b.String()))
	if err != nil {
		return nil, "", err
	}
	if err := cfg.Validate(); err != nil {
		return nil, "", err
	}
	return cfg, b.String(), nil
}

// fleetDevices is the simulated fleet; impaired is the endpoint of the
// impaired device (the proxy), "" in the gateway's view.
func fleetDevices(impaired string) []devsim.DeviceConfig {
	return []devsim.DeviceConfig{
		{Name: CriticalDevice, Platform: "zephyr", Board: "nucleo_f429zi", Env: TunedZephyrEnv,
			Subscriptions: []devsim.Subscription{{Key: ScanKey, Large: true}, {Key: IMUKey}}},
		{Name: SimDevice, Platform: "zephyr", Board: "native_sim",
			Subscriptions: []devsim.Subscription{{Key: IMUKey}}},
		{Name: ImpairedDevice, Platform: "freertos", Board: "esp32", Endpoint: impaired,
			Subscriptions: []devsim.Subscription{{Key: ScanKey, Large: true}}},
	}
}

// CriticalTopics are the routes the gateway is configured to treat as
// critical (routes.critical): every topic of the demo.
var CriticalTopics = []string{ScanTopic, IMUTopic}

func isCriticalTopic(topic string) bool { return slices.Contains(CriticalTopics, topic) }

// expectCritical are the devices the scenario expects CRITICAL: both sit
// on a clean loopback link. The criterion applies to them whatever the
// classifier decided (a demotion must not hide a shortfall).
var expectCritical = map[string]bool{CriticalDevice: true, SimDevice: true}

// topicOfKey maps a device subscription key to its ROS topic.
func topicOfKey(k string) string { return "/" + k }

var errInvariant = errors.New("the demo's criteria did not hold")
