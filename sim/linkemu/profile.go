package linkemu

import (
	"bytes"
	_ "embed"
	"fmt"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Impairment is what one direction of the link does to each packet, in
// this order: Gilbert–Elliott loss, serialization at Rate behind a bounded
// queue, then a one-way delay Delay plus Extra (two independent draws).
// The zero Impairment is a clean direction.
type Impairment struct {
	// Loss is the Gilbert–Elliott loss model of this direction.
	Loss GE `json:"loss"`
	// Rate is the link rate in bit/s; 0 is unlimited.
	Rate Bitrate `json:"rate_bps"`
	// Delay is the one-way propagation delay with jitter.
	Delay Jitter `json:"delay"`
	// Extra is an additional delay drawn independently of Delay: the
	// probe-return delay of evaluation.md on the device → gateway path.
	Extra Jitter `json:"extra_delay"`
}

// Clean reports whether the direction does nothing to packets.
func (im Impairment) Clean() bool {
	return im.Loss.Zero() && im.Rate == 0 && im.Delay.Zero() && im.Extra.Zero()
}

// ExpectedLoss is the long-run loss ratio of the direction's GE chain.
func (im Impairment) ExpectedLoss() float64 { return im.Loss.ExpectedLoss() }

// MeanDelay is the mean one-way delay, ignoring serialization.
func (im Impairment) MeanDelay() time.Duration { return im.Delay.Mean + im.Extra.Mean }

// Validate checks every field.
func (im Impairment) Validate() error {
	if err := im.Loss.Validate(); err != nil {
		return err
	}
	if im.Rate < 0 {
		return fmt.Errorf("rate: must be >= 0 bit/s (got %d)", im.Rate)
	}
	if err := im.Delay.Validate(); err != nil {
		return err
	}
	return im.Extra.Validate()
}

// Profile is a named impairment of the device's link, one Impairment per
// direction. The device is the proxy's client (it connects to the listen
// address); the gateway is at the upstream address.
type Profile struct {
	// Name identifies the profile in stats and on the toggle timeline.
	Name string `json:"name"`
	// ToDevice applies to gateway → device traffic.
	ToDevice Impairment `json:"to_device"`
	// ToGateway applies to device → gateway traffic (probe responses
	// travel this way).
	ToGateway Impairment `json:"to_gateway"`
}

// Dir returns the impairment of one direction.
func (p Profile) Dir(d Direction) Impairment {
	if d == ToGateway {
		return p.ToGateway
	}
	return p.ToDevice
}

// Validate checks both directions.
func (p Profile) Validate() error {
	if p.Name == "" {
		return fmt.Errorf("profile: name must not be empty")
	}
	if err := p.ToDevice.Validate(); err != nil {
		return fmt.Errorf("profile %s: to_device: %w", p.Name, err)
	}
	if err := p.ToGateway.Validate(); err != nil {
		return fmt.Errorf("profile %s: to_gateway: %w", p.Name, err)
	}
	return nil
}

// Clean is the profile that changes nothing.
var Clean = Profile{Name: "clean"}

//go:embed profiles.yaml
var profilesYAML []byte

// builtin holds the parsed profiles.yaml; a broken embedded file is a
// programmer error caught by the package's tests, so init panics on it.
var builtin = func() []Profile {
	ps, err := ParseProfiles(profilesYAML)
	if err != nil {
		panic("linkemu: embedded profiles.yaml: " + err.Error())
	}
	return ps
}()

// Profiles returns the built-in profiles in file order: those of
// evaluation.md (clean, mild, moderate, strong), then the link classes of
// the middleware comparison (ethernet, wifi, 4g).
func Profiles() []Profile { return slices.Clone(builtin) }

// ProfileNames lists the names Profiles returns.
func ProfileNames() []string {
	names := make([]string, len(builtin))
	for i, p := range builtin {
		names[i] = p.Name
	}
	return names
}

// LookupProfile returns the built-in profile with that name.
func LookupProfile(name string) (Profile, error) {
	for _, p := range builtin {
		if p.Name == name {
			return p, nil
		}
	}
	return Profile{}, fmt.Errorf("unknown profile %q (allowed: %s)", name, strings.Join(ProfileNames(), ", "))
}

// profileFile is the YAML form of profiles.yaml.
type profileFile struct {
	Profiles []profileEntry `yaml:"profiles"`
}

type msJitter struct {
	Mean float64 `yaml:"mean"` // milliseconds
	SD   float64 `yaml:"sd"`   // milliseconds
}

func (m msJitter) jitter() Jitter {
	return Jitter{Mean: time.Duration(m.Mean * float64(time.Millisecond)), SD: time.Duration(m.SD * float64(time.Millisecond))}
}

type profileEntry struct {
	Name          string   `yaml:"name"`
	BandwidthKbit float64  `yaml:"bandwidth_kbit"`
	DelayMs       msJitter `yaml:"delay_ms"`
	GE            GE       `yaml:"ge"`
	ReturnDelayMs msJitter `yaml:"return_delay_ms"`
}

// Bounds of a profiles file's numbers: 1 Tbit/s, one hour.
const (
	maxBandwidthKbit = 1e9
	maxDelayMs       = 3.6e6
)

// ParseProfiles decodes a profiles file in the format of the embedded
// profiles.yaml (unknown keys are errors) and validates each profile.
func ParseProfiles(b []byte) ([]Profile, error) {
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	var f profileFile
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("profiles: %w", err)
	}
	var out []Profile
	seen := map[string]bool{}
	for i, e := range f.Profiles {
		if seen[e.Name] {
			return nil, fmt.Errorf("profiles[%d]: duplicate name %q", i, e.Name)
		}
		seen[e.Name] = true
		for _, v := range []struct {
			key string
			v   float64
			max float64
		}{
			{"bandwidth_kbit", e.BandwidthKbit, maxBandwidthKbit},
			{"delay_ms.mean", e.DelayMs.Mean, maxDelayMs}, {"delay_ms.sd", e.DelayMs.SD, maxDelayMs},
			{"return_delay_ms.mean", e.ReturnDelayMs.Mean, maxDelayMs}, {"return_delay_ms.sd", e.ReturnDelayMs.SD, maxDelayMs},
		} {
			// Checked before the conversion to integer units, which is undefined for NaN,
			// ±Inf and out-of-range values (and differs between amd64 and arm64).
			if !(v.v >= 0 && v.v <= v.max) {
				return nil, fmt.Errorf("profiles[%d] %s: %s: must be a number in [0, %g] (got %v)", i, e.Name, v.key, v.max, v.v)
			}
		}
		im := Impairment{Loss: e.GE, Rate: Bitrate(e.BandwidthKbit * float64(Kbit)), Delay: e.DelayMs.jitter()}
		p := Profile{Name: e.Name, ToDevice: im, ToGateway: im}
		p.ToGateway.Extra = e.ReturnDelayMs.jitter()
		if err := p.Validate(); err != nil {
			return nil, fmt.Errorf("profiles[%d]: %w", i, err)
		}
		out = append(out, p)
	}
	return out, nil
}
