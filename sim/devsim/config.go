package devsim

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/picobridge/picobridge/zenohpath/keyexpr"
)

// DeviceConfig describes one simulated device. Zero values take defaults.
type DeviceConfig struct {
	// Name is the device's name: in stats and in its probe keys
	// (@picobridge/probe/<name>/ping). Required, [A-Za-z0-9_.-]{1,64}.
	Name string `yaml:"name" json:"name"`
	// Platform and Board select the knob profiles (firmware.Catalog);
	// Platform may be empty when Board names a board of the catalog.
	Platform string `yaml:"platform" json:"platform"`
	Board    string `yaml:"board" json:"board,omitempty"`
	// Env overrides knobs on the env rung (NROS_*, ZPICO_*, CONFIG_NROS_*
	// spellings, docs/knobs.md), e.g. NROS_ZENOH_SUBSCRIBER_RING_DEPTH: "8".
	Env map[string]string `yaml:"env" json:"env,omitempty"`
	// Endpoint is the router locator to connect to (tcp/host:port,
	// udp/host:port); the fleet's endpoint when empty.
	Endpoint string `yaml:"endpoint" json:"endpoint,omitempty"`
	// Spin is the application's executor spin period: 0 (default) = the
	// application is woken by the subscriber callback and takes each sample
	// on arrival (nano-ros signal_executor_wake); > 0 = it takes the samples
	// in its rings every Spin (a timer-paced spin_once, e.g. a slow
	// application; the rings still fill and overflow in between).
	Spin time.Duration `yaml:"spin" json:"spin,omitempty"`
	// Subscriptions are the keys the device subscribes to.
	Subscriptions []Subscription `yaml:"subscriptions" json:"subscriptions,omitempty"`
	// Publications are the keys the device publishes, each at its rate.
	Publications []Publication `yaml:"publications" json:"publications,omitempty"`
	// NoProbeResponder turns off the probe responder (default on).
	NoProbeResponder bool `yaml:"no_probe_responder" json:"no_probe_responder,omitempty"`
	// PongFrom says where the probe responder sends its pong from:
	// PongFromReadTask (default, "" too) = inside the subscriber callback on
	// the read task, as firmware/responder/c does: no socket-window wait;
	// PongFromApp = from the application (a responder written as a nano-ros
	// subscription or queryable): the pong is an express put that waits for
	// the socket like any send, after dev_send was stamped.
	PongFrom string `yaml:"pong_from" json:"pong_from,omitempty"`
	// Replicas > 1 makes that many devices of this one, named <name>-0 …
	// <name>-<n-1> (Expand); at most MaxReplicas.
	Replicas int `yaml:"replicas" json:"replicas,omitempty"`
	// ReconnectInterval is the pause between connection attempts
	// (zenoh-pico auto-reconnect); default DefaultReconnectInterval.
	ReconnectInterval time.Duration `yaml:"reconnect_interval" json:"reconnect_interval,omitempty"`
}

// Subscription is one subscriber of a device.
type Subscription struct {
	// Key is the key expression subscribed to.
	Key string `yaml:"key" json:"key"`
	// Large asks for a large-class slot (the subscriber's declared message
	// size is above subscriber_size_threshold); granted while the device has
	// large slots left (max_large_subscribers).
	Large bool `yaml:"large" json:"large,omitempty"`
}

// Publication is one publisher of a device.
type Publication struct {
	// Key is the (non-wildcard) key published on.
	Key string `yaml:"key" json:"key"`
	// RateHz is the publish rate in samples per second, > 0 and at most
	// MaxRateHz (Interval is its period).
	RateHz float64 `yaml:"rate_hz" json:"rate_hz"`
	// Size is the serialized sample size in bytes (CDR with a
	// std_msgs/Header first; at least the header). Default 64, at most
	// MaxSampleSize.
	Size int `yaml:"size" json:"size,omitempty"`
	// Express is the publisher's tx_express QoS: each sample bypasses the
	// TX batch and goes out in its own send.
	Express bool `yaml:"express" json:"express,omitempty"`
	// BestEffort sends on the best-effort channel (default reliable, as
	// zenoh-pico publishers).
	BestEffort bool `yaml:"best_effort" json:"best_effort,omitempty"`
	// Count stops the publisher after this many attempts (0 = unlimited).
	Count int `yaml:"count" json:"count,omitempty"`
}

// Where the probe pong is sent from (DeviceConfig.PongFrom).
const (
	PongFromReadTask = "read_task"
	PongFromApp      = "app"
)

// Defaults.
const (
	// DefaultReconnectInterval is the pause between reconnect attempts
	// (zenoh-pico's auto-reconnect retries about once a second).
	DefaultReconnectInterval = time.Second
	// DefaultSampleSize is a publication's sample size when not given, bytes
	// (the 64 B samples of the tx-tuning.md measurements).
	DefaultSampleSize = 64
	// maxKeyLen is zenoh-pico's Z_MAX_KEYEXPR_LENGTH (zenoh-wire.md §14.2).
	maxKeyLen = 256
)

// Publication bounds, checked by Validate: the publish period 1/RateHz is at
// least a microsecond (a larger rate, +Inf or NaN would give the ticker a
// period of zero or less), and a sample is built in memory at its full size.
const (
	MaxRateHz     = 1e6
	MaxSampleSize = 16 << 20 // bytes
)

// Interval is the publication's period, 1/RateHz (positive for a Publication
// that passed Validate).
func (p Publication) Interval() time.Duration {
	return time.Duration(float64(time.Second) / p.RateHz)
}

// MaxReplicas bounds DeviceConfig.Replicas: a fleet file is checked against it before
// it is expanded, so a typo such as `replicas: 2000000000` is an error, not an
// allocation of that many devices.
const MaxReplicas = 10000

// NamePlaceholder in a subscription or publication key is replaced by the
// device's name (Expand), so that replicas publish on their own keys.
const NamePlaceholder = "${name}"

// Expand returns the devices c stands for: Replicas copies named
// <name>-<i> (or c itself), with NamePlaceholder replaced in every key.
func (c DeviceConfig) Expand() []DeviceConfig {
	one := func(name string) DeviceConfig {
		d := c
		d.Name, d.Replicas = name, 0
		d.Subscriptions = append([]Subscription(nil), c.Subscriptions...)
		for i := range d.Subscriptions {
			d.Subscriptions[i].Key = strings.ReplaceAll(d.Subscriptions[i].Key, NamePlaceholder, name)
		}
		d.Publications = append([]Publication(nil), c.Publications...)
		for i := range d.Publications {
			d.Publications[i].Key = strings.ReplaceAll(d.Publications[i].Key, NamePlaceholder, name)
		}
		return d
	}
	if c.Replicas <= 1 {
		return []DeviceConfig{one(c.Name)}
	}
	out := make([]DeviceConfig, 0, c.Replicas)
	for i := range c.Replicas {
		out = append(out, one(c.Name+"-"+strconv.Itoa(i)))
	}
	return out
}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

// Validate checks the configuration and reports every problem at once.
func (c *DeviceConfig) Validate() error {
	var errs []error
	bad := func(f string, a ...any) {
		errs = append(errs, fmt.Errorf("device %q: "+f, append([]any{c.Name}, a...)...))
	}
	if !nameRE.MatchString(c.Name) {
		bad("name must match [A-Za-z0-9_.-]{1,64}")
	}
	if c.Platform == "" && c.Board == "" {
		bad("platform or board is required")
	}
	if err := c.checkReplicas(); err != nil {
		errs = append(errs, err)
	}
	if c.PongFrom != "" && c.PongFrom != PongFromReadTask && c.PongFrom != PongFromApp {
		bad("pong_from must be %q or %q (got %q)", PongFromReadTask, PongFromApp, c.PongFrom)
	}
	if c.Spin < 0 {
		bad("spin must be >= 0 (got %s)", c.Spin)
	}
	for i, s := range c.Subscriptions {
		if err := keyexpr.ValidateCanonical(s.Key); err != nil || len(s.Key) > maxKeyLen {
			bad("subscriptions[%d].key %q: not a canonical key expression of at most %d bytes", i, s.Key, maxKeyLen)
		}
	}
	seen := map[string]bool{}
	for i, p := range c.Publications {
		if err := keyexpr.ValidateCanonical(p.Key); err != nil || hasWild(p.Key) || len(p.Key) > maxKeyLen {
			bad("publications[%d].key %q: not a canonical key without wildcards", i, p.Key)
		}
		if seen[p.Key] {
			bad("publications[%d].key %q: published twice", i, p.Key)
		}
		seen[p.Key] = true
		if !(p.RateHz > 0 && p.RateHz <= MaxRateHz) { // also NaN
			bad("publications[%d].rate_hz must be > 0 and <= %g (got %g)", i, float64(MaxRateHz), p.RateHz)
		}
		if p.Size < 0 || p.Size > MaxSampleSize {
			bad("publications[%d].size must be 0..%d bytes (got %d)", i, MaxSampleSize, p.Size)
		}
		if p.Count < 0 {
			bad("publications[%d].count must be >= 0 (got %d)", i, p.Count)
		}
	}
	return errors.Join(errs...)
}

// checkReplicas reports a Replicas outside 0..MaxReplicas.
func (c *DeviceConfig) checkReplicas() error {
	if c.Replicas < 0 || c.Replicas > MaxReplicas {
		return fmt.Errorf("device %q: replicas must be 0..%d (got %d)", c.Name, MaxReplicas, c.Replicas)
	}
	return nil
}

func hasWild(k string) bool {
	for i := 0; i < len(k); i++ {
		if k[i] == '*' || k[i] == '$' {
			return true
		}
	}
	return false
}

// nonWildPrefix is the part of key before its first chunk with a wildcard,
// without the trailing '/': what zenoh-pico declares as a key expression
// before a subscriber (zenoh-wire.md §12.3: "demo/example" for
// "demo/example/**"). The whole key when it has no wildcard.
func nonWildPrefix(key string) string {
	start := 0
	for i := 0; i <= len(key); i++ {
		if i == len(key) || key[i] == '/' {
			if hasWild(key[start:i]) {
				if start == 0 {
					return ""
				}
				return key[:start-1]
			}
			start = i + 1
		}
	}
	return key
}
