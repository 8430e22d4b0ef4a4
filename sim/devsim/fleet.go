package devsim

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// FleetConfig is a fleet file (YAML):
//
//	endpoint: tcp/127.0.0.1:7447
//	devices:
//	  - name: zephyr1
//	    platform: zephyr
//	    board: nucleo_f429zi
//	    env: {NROS_ZENOH_SUBSCRIBER_RING_DEPTH: "8"}
//	    spin: 200ms
//	    subscriptions: [{key: scan}, {key: "cmd/**"}]
//	    publications: [{key: telemetry/zephyr1, rate_hz: 10, size: 64, express: false}]
type FleetConfig struct {
	// Endpoint is the default router locator of every device.
	Endpoint string `yaml:"endpoint" json:"endpoint,omitempty"`
	// Devices are the simulated devices.
	Devices []DeviceConfig `yaml:"devices" json:"devices"`
}

// ParseFleetConfig decodes a fleet file, rejecting unknown fields; name is
// used in error messages.
func ParseFleetConfig(name string, data []byte) (*FleetConfig, error) {
	var fc FleetConfig
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&fc); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	var devs []DeviceConfig
	var errs []error
	for i, dc := range fc.Devices {
		// Expand resets Replicas, so its bound is checked here, before it allocates.
		if err := dc.checkReplicas(); err != nil {
			errs = append(errs, fmt.Errorf("%s: devices[%d]: %w", name, i, err))
			continue
		}
		for _, e := range dc.Expand() {
			if err := e.Validate(); err != nil {
				errs = append(errs, fmt.Errorf("%s: devices[%d]: %w", name, i, err))
				break
			}
			devs = append(devs, e)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	fc.Devices = devs
	return &fc, nil
}

// LoadFleetConfig reads and parses a fleet file.
func LoadFleetConfig(path string) (*FleetConfig, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseFleetConfig(path, b)
}

// ParseDeviceSpec parses the command-line form of a device, comma-separated
// key=value pairs:
//
//	name=zephyr1,platform=zephyr,board=nucleo_f429zi,sub=scan,sub=cmd/**,
//	pub=telemetry:10[:64[:express]],spin=200ms,endpoint=tcp/host:7447,
//	NROS_ZENOH_SUBSCRIBER_RING_DEPTH=8
//
// sub and pub repeat; sub=KEY:large asks for a large slot; upper-case keys
// (NROS_*, ZPICO_*, CONFIG_NROS_*) are knob overrides on the env rung.
func ParseDeviceSpec(spec string) (DeviceConfig, error) {
	var c DeviceConfig
	for _, kv := range strings.Split(spec, ",") {
		if kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return c, fmt.Errorf("device spec %q: %q is not key=value", spec, kv)
		}
		switch {
		case k == "name":
			c.Name = v
		case k == "platform":
			c.Platform = v
		case k == "board":
			c.Board = v
		case k == "endpoint":
			c.Endpoint = v
		case k == "spin":
			d, err := time.ParseDuration(v)
			if err != nil {
				return c, fmt.Errorf("device spec %q: spin: %w", spec, err)
			}
			c.Spin = d
		case k == "drain":
			return c, fmt.Errorf("device spec %q: drain is now spin (the application's spin period; 0 = woken on arrival)", spec)
		case k == "sub":
			s := Subscription{Key: v}
			if key, ok := strings.CutSuffix(v, ":large"); ok {
				s = Subscription{Key: key, Large: true}
			}
			c.Subscriptions = append(c.Subscriptions, s)
		case k == "pub":
			p, err := parsePubSpec(v)
			if err != nil {
				return c, fmt.Errorf("device spec %q: %w", spec, err)
			}
			c.Publications = append(c.Publications, p)
		case k == "noprobe":
			c.NoProbeResponder = v == "1" || v == "true"
		case k == "pong":
			c.PongFrom = v
		case strings.ToUpper(k) == k && (strings.HasPrefix(k, "NROS_") || strings.HasPrefix(k, "ZPICO_") || strings.HasPrefix(k, "CONFIG_NROS_")):
			if c.Env == nil {
				c.Env = map[string]string{}
			}
			c.Env[k] = v
		default:
			return c, fmt.Errorf("device spec %q: unknown key %q (name, platform, board, endpoint, spin, sub, pub, noprobe, pong, NROS_*/ZPICO_*/CONFIG_NROS_*)", spec, k)
		}
	}
	return c, c.Validate()
}

// parsePubSpec parses KEY:RATE[:SIZE[:express]].
func parsePubSpec(v string) (Publication, error) {
	parts := strings.Split(v, ":")
	if len(parts) < 2 || len(parts) > 4 {
		return Publication{}, fmt.Errorf("pub %q: want KEY:RATE_HZ[:SIZE[:express]]", v)
	}
	p := Publication{Key: parts[0]}
	r, err := strconv.ParseFloat(parts[1], 64)
	if err != nil {
		return p, fmt.Errorf("pub %q: rate: %w", v, err)
	}
	p.RateHz = r
	if len(parts) >= 3 {
		if p.Size, err = strconv.Atoi(parts[2]); err != nil {
			return p, fmt.Errorf("pub %q: size: %w", v, err)
		}
	}
	if len(parts) == 4 {
		if parts[3] != "express" {
			return p, fmt.Errorf("pub %q: the 4th field may only be express", v)
		}
		p.Express = true
	}
	return p, nil
}

// Fleet is a set of simulated devices started and stopped together.
type Fleet struct {
	devices []*Device
}

// NewFleet creates every device of cfg (none runs until Start). opts apply
// to all; cfg.Endpoint is the default endpoint.
func NewFleet(cfg *FleetConfig, opts Options) (*Fleet, error) {
	if cfg.Endpoint != "" && opts.Endpoint == "" {
		opts.Endpoint = cfg.Endpoint
	}
	f := &Fleet{}
	names := map[string]bool{}
	var errs []error
	var all []DeviceConfig
	for _, dc := range cfg.Devices {
		all = append(all, dc.Expand()...)
	}
	for _, dc := range all {
		if names[dc.Name] {
			errs = append(errs, fmt.Errorf("device %q: duplicate name", dc.Name))
			continue
		}
		names[dc.Name] = true
		d, err := NewDevice(dc, opts)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		f.devices = append(f.devices, d)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return f, nil
}

// Devices returns the fleet's devices in configuration order.
func (f *Fleet) Devices() []*Device { return append([]*Device(nil), f.devices...) }

// Device returns the device named name, or nil.
func (f *Fleet) Device(name string) *Device {
	for _, d := range f.devices {
		if d.Name() == name {
			return d
		}
	}
	return nil
}

// Start starts every device.
func (f *Fleet) Start(ctx context.Context) error {
	for _, d := range f.devices {
		if err := d.Start(ctx); err != nil {
			return err
		}
	}
	return nil
}

// Stop stops every device; when it returns no goroutine of the fleet is
// left.
func (f *Fleet) Stop() {
	for _, d := range f.devices {
		d.cancelOnly()
	}
	for _, d := range f.devices {
		d.Stop()
	}
}

// Stats returns every device's snapshot and the totals.
func (f *Fleet) Stats() FleetStats {
	fs := FleetStats{Devices: make([]DeviceStats, 0, len(f.devices))}
	for _, d := range f.devices {
		s := d.Stats()
		fs.Devices = append(fs.Devices, s)
		fs.Totals.add(s)
	}
	return fs
}
