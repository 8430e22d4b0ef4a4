package testlane

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/picobridge/picobridge/knobs"
)

// Expectations is a lane's expectations file (YAML, docs/lane.md):
//
//	device: robot1-imu          # name of the device (its probe responder's name)
//	knobs:                      # how the device was built: the ladder of `knobs explain`
//	  platform: zephyr
//	  board: native_sim
//	  env_files: [prj.conf]     # KEY=VALUE or Kconfig files, relative to this file
//	  env: {NROS_ZENOH_LEASE_MS: "3000"}
//	wait: 30s                   # for the device's session to open
//	duration: 10s               # observation, from the session's OPEN
//	declares:                   # keys the device must declare
//	  subscribers: [robot1/cmd_vel]
//	  publishers: [robot1/imu]
//	  queryables: []
//	  tokens: []
//	responder: true             # it runs the probe responder under `device`
//	probes: 5                   # pings that must be answered
//	tolerance:
//	  keepalive: 500ms          # added to lease / expire factor
//	  sends: 10%                # added to the knob-derived send ceiling
//	faults:
//	  - kind: stall_reads       # stall_reads | close_mid_fragment | restart_router
//	    at: 3s                  # since the session opened
//	    for: 500ms              # stall_reads only
//	    expect: survive         # survive | reconnect (stall: survive, others: reconnect)
//	    within: 10s             # recovery deadline
//
// Every duration is fixed by the file (no scaling by load): a lane's
// verdict depends on what the device did, not on how busy the CI host was.
type Expectations struct {
	// File is the path the expectations were read from ("" when built in code).
	File string
	// Device is the device's name ([A-Za-z0-9_.-]{1,64}); required with Responder.
	Device string
	// Knobs selects the device's build (the ladder builtin < platform < board < env).
	Knobs KnobsSelect
	// Wait bounds how long the lane waits for the device's session. Default 30 s.
	Wait time.Duration
	// Duration is the observation, from the session's OPEN. Default 10 s.
	Duration time.Duration
	// Declares lists keys the device must declare, by kind.
	Declares Declares
	// Responder: the device runs the probe responder (docs/probe.md) under Device.
	Responder bool
	// Probes is how many pings must be answered (default 5 with Responder).
	Probes int
	// KeepAliveTolerance is added to lease / expire factor. Default 500 ms.
	KeepAliveTolerance time.Duration
	// SendsTolerance is the fraction added to the knob-derived send ceiling. Default 0.1.
	SendsTolerance float64
	// Faults are injected in order.
	Faults []Fault
}

// KnobsSelect is the device's knob selection (knobs.Options in file form).
type KnobsSelect struct {
	Platform string
	Board    string
	EnvFiles []string          // resolved against the expectations file's folder
	Env      map[string]string // env-rung overrides, NROS_* / ZPICO_* / CONFIG_NROS_* spellings
}

// Declares lists expected declarations by kind.
type Declares struct {
	Subscribers []string
	Publishers  []string // a DeclareKeyExpr, a publisher INTEREST or a PUT on the key
	Queryables  []string
	Tokens      []string
}

// FaultKind is a fault the lane injects.
type FaultKind string

// Fault kinds.
const (
	// FaultStallReads stops reading from the device for For (the device's
	// sends back up in its socket).
	FaultStallReads FaultKind = "stall_reads"
	// FaultCloseMidFragment closes the device's link right after the first
	// FRAGMENT of a message (either direction) passes, from At on.
	FaultCloseMidFragment FaultKind = "close_mid_fragment"
	// FaultRestartRouter closes the router (and every session) and starts a
	// fresh one.
	FaultRestartRouter FaultKind = "restart_router"
)

var faultKinds = []string{string(FaultStallReads), string(FaultCloseMidFragment), string(FaultRestartRouter)}

// Recovery is what a fault must lead to.
type Recovery string

// Recoveries.
const (
	// RecoverSurvive: the same session carries on (no reconnect) and the
	// device sends again within Within.
	RecoverSurvive Recovery = "survive"
	// RecoverReconnect: the device opens a new session within Within and
	// declares every expected key again.
	RecoverReconnect Recovery = "reconnect"
)

// Fault is one fault to inject.
type Fault struct {
	Kind   FaultKind
	At     time.Duration // since the session opened
	For    time.Duration // stall_reads
	Expect Recovery
	Within time.Duration // default 10 s
	Line   int           // line and column in the expectations file
	Col    int
}

// Defaults of an expectations file.
const (
	DefaultWait               = 30 * time.Second
	DefaultDuration           = 10 * time.Second
	DefaultProbes             = 5
	DefaultKeepAliveTolerance = 500 * time.Millisecond
	DefaultSendsTolerance     = 0.1
	DefaultRecoverWithin      = 10 * time.Second
	// maxDuration bounds every duration of the file.
	maxDuration = time.Hour
)

var (
	topKeys       = []string{"device", "knobs", "wait", "duration", "declares", "responder", "probes", "tolerance", "faults"}
	knobsKeys     = []string{"platform", "board", "env_files", "env"}
	declaresKeys  = []string{"subscribers", "publishers", "queryables", "tokens"}
	toleranceKeys = []string{"keepalive", "sends"}
	faultKeys     = []string{"kind", "at", "for", "expect", "within"}
	recoveries    = []string{string(RecoverSurvive), string(RecoverReconnect)}
)

// ParseExpectations parses an expectations file. Every problem is reported
// at once in a *knobs.ConfigError (exit status 2) whose lines name the file,
// line, column and key, and the allowed values:
//
//	lane.yaml:7:11: faults[0].kind: unknown fault "stall" (allowed: stall_reads, close_mid_fragment, restart_router)
func ParseExpectations(file string, data []byte) (*Expectations, error) {
	e := &Expectations{File: file, Wait: DefaultWait, Duration: DefaultDuration,
		KeepAliveTolerance: DefaultKeepAliveTolerance, SendsTolerance: DefaultSendsTolerance}
	d := &decoder{file: file}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		d.add(nil, "", knobs.ErrSyntax, "%s", strings.TrimPrefix(err.Error(), "yaml: "))
		return nil, d.err()
	}
	if len(doc.Content) == 0 {
		d.add(nil, "", knobs.ErrSyntax, "empty file (want a mapping with %s)", strings.Join(topKeys, ", "))
		return nil, d.err()
	}
	probesSet := false
	d.mapping(doc.Content[0], "", topKeys, func(key string, k, v *yaml.Node) {
		switch key {
		case "device":
			e.Device = d.str(v, key)
			if e.Device != "" && !validName(e.Device) {
				d.add(v, key, knobs.ErrBadValue, "%q is not a device name (allowed: [A-Za-z0-9_.-]{1,64})", e.Device)
			}
		case "knobs":
			d.mapping(v, key, knobsKeys, func(kk string, _, kv *yaml.Node) {
				path := key + "." + kk
				switch kk {
				case "platform":
					e.Knobs.Platform = d.str(kv, path)
				case "board":
					e.Knobs.Board = d.str(kv, path)
				case "env_files":
					for i, n := range d.seq(kv, path) {
						if f := d.str(n, fmt.Sprintf("%s[%d]", path, i)); f != "" {
							if !filepath.IsAbs(f) && file != "" {
								f = filepath.Join(filepath.Dir(file), f)
							}
							e.Knobs.EnvFiles = append(e.Knobs.EnvFiles, f)
						}
					}
				case "env":
					e.Knobs.Env = map[string]string{}
					d.mapping(kv, path, nil, func(name string, _, ev *yaml.Node) {
						e.Knobs.Env[name] = d.str(ev, path+"."+name)
					})
				}
			})
		case "wait":
			e.Wait = d.duration(v, key, true)
		case "duration":
			e.Duration = d.duration(v, key, true)
		case "declares":
			d.mapping(v, key, declaresKeys, func(kk string, _, kv *yaml.Node) {
				path := key + "." + kk
				var keys []string
				for i, n := range d.seq(kv, path) {
					if s := d.str(n, fmt.Sprintf("%s[%d]", path, i)); s != "" {
						keys = append(keys, s)
					}
				}
				switch kk {
				case "subscribers":
					e.Declares.Subscribers = keys
				case "publishers":
					e.Declares.Publishers = keys
				case "queryables":
					e.Declares.Queryables = keys
				case "tokens":
					e.Declares.Tokens = keys
				}
			})
		case "responder":
			e.Responder = d.boolean(v, key)
		case "probes":
			e.Probes = d.integer(v, key, 1, 1000)
			probesSet = true
		case "tolerance":
			d.mapping(v, key, toleranceKeys, func(kk string, _, kv *yaml.Node) {
				switch kk {
				case "keepalive":
					e.KeepAliveTolerance = d.duration(kv, key+"."+kk, false)
				case "sends":
					e.SendsTolerance = d.percent(kv, key+"."+kk)
				}
			})
		case "faults":
			for i, n := range d.seq(v, key) {
				e.Faults = append(e.Faults, d.fault(n, fmt.Sprintf("%s[%d]", key, i)))
			}
		}
	})
	if e.Knobs.Platform == "" && e.Knobs.Board == "" {
		d.add(doc.Content[0], "knobs", knobs.ErrUnknownPlatform, "name the device's platform or board (knobs.platform, knobs.board): the checks derive from its knobs")
	}
	if e.Responder && e.Device == "" {
		d.add(doc.Content[0], "device", knobs.ErrBadValue, "responder: true needs the device's name (device: NAME, the name its probe responder answers for)")
	}
	for i, fl := range e.Faults {
		if fl.At+fl.For >= e.Duration && e.Duration > 0 {
			d.ps = append(d.ps, &knobs.Problem{File: file, Line: fl.Line, Col: fl.Col, Key: fmt.Sprintf("faults[%d].at", i), Err: knobs.ErrRange,
				Msg: fmt.Sprintf("%s (+ for %s) is not before duration %s: the fault would fall outside the observation", fl.At, fl.For, e.Duration)})
		}
	}
	if e.Responder && !probesSet {
		e.Probes = DefaultProbes
	}
	if err := d.err(); err != nil {
		return nil, err
	}
	return e, nil
}

// validName is the probe responder's name rule (docs/probe.md).
func validName(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for _, c := range []byte(s) {
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-') {
			return false
		}
	}
	return true
}

// decoder walks the YAML tree strictly, collecting problems.
type decoder struct {
	file string
	ps   []*knobs.Problem
}

func (d *decoder) add(n *yaml.Node, key string, sentinel error, format string, args ...any) {
	p := &knobs.Problem{File: d.file, Key: key, Err: sentinel, Msg: fmt.Sprintf(format, args...)}
	if n != nil {
		p.Line, p.Col = n.Line, n.Column
	}
	d.ps = append(d.ps, p)
}

func (d *decoder) err() error {
	if len(d.ps) == 0 {
		return nil
	}
	return &knobs.ConfigError{Problems: d.ps}
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	}
	if n.Tag == "!!null" {
		return "null"
	}
	return fmt.Sprintf("%q", n.Value)
}

// mapping calls fn for each key of n in order; keys outside allowed (when
// allowed is not nil) and duplicates are problems.
func (d *decoder) mapping(n *yaml.Node, path string, allowed []string, fn func(key string, k, v *yaml.Node)) {
	if n.Kind != yaml.MappingNode {
		if n.Tag == "!!null" {
			return
		}
		d.add(n, orTop(path), knobs.ErrType, "want a mapping, got %s", kindName(n))
		return
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		full := k.Value
		if path != "" {
			full = path + "." + k.Value
		}
		if allowed != nil && !slices.Contains(allowed, k.Value) {
			d.add(k, full, knobs.ErrUnknownKey, "unknown key (allowed: %s)", strings.Join(allowed, ", "))
			continue
		}
		if seen[k.Value] {
			d.add(k, full, knobs.ErrSyntax, "given twice")
			continue
		}
		seen[k.Value] = true
		fn(k.Value, k, v)
	}
}

func orTop(path string) string {
	if path == "" {
		return "(top level)"
	}
	return path
}

func (d *decoder) seq(n *yaml.Node, path string) []*yaml.Node {
	if n.Kind != yaml.SequenceNode {
		if n.Tag != "!!null" {
			d.add(n, path, knobs.ErrType, "want a list, got %s", kindName(n))
		}
		return nil
	}
	return n.Content
}

func (d *decoder) scalar(n *yaml.Node, path, want string) (string, bool) {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		d.add(n, path, knobs.ErrType, "want %s, got %s", want, kindName(n))
		return "", false
	}
	return n.Value, true
}

func (d *decoder) str(n *yaml.Node, path string) string {
	s, _ := d.scalar(n, path, "a string")
	return s
}

func (d *decoder) boolean(n *yaml.Node, path string) bool {
	s, ok := d.scalar(n, path, "true or false")
	if !ok {
		return false
	}
	switch s {
	case "true":
		return true
	case "false":
		return false
	}
	d.add(n, path, knobs.ErrBadValue, "%q is not a bool (allowed: true, false)", s)
	return false
}

func (d *decoder) integer(n *yaml.Node, path string, lo, hi int) int {
	s, ok := d.scalar(n, path, "an integer")
	if !ok {
		return 0
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < lo || v > hi {
		d.add(n, path, knobs.ErrRange, "%q is not an integer in %d..%d", s, lo, hi)
		return 0
	}
	return v
}

// duration parses a Go duration ("500ms", "10s") in (0, 1h] (or [0, 1h]
// when positive is false).
func (d *decoder) duration(n *yaml.Node, path string, positive bool) time.Duration {
	s, ok := d.scalar(n, path, "a duration")
	if !ok {
		return 0
	}
	v, err := time.ParseDuration(s)
	lo := "0s"
	if positive {
		lo = "a positive duration"
	}
	if err != nil || v < 0 || (positive && v == 0) || v > maxDuration {
		d.add(n, path, knobs.ErrBadValue, "%q is not a duration in %s..1h (allowed: Go durations such as 500ms, 10s, 2m)", s, lo)
		return 0
	}
	return v
}

// percent parses "10%" or a fraction "0.1" into a fraction in [0, 10].
func (d *decoder) percent(n *yaml.Node, path string) float64 {
	s, ok := d.scalar(n, path, "a percentage")
	if !ok {
		return 0
	}
	t := strings.TrimSpace(s)
	div := 1.0
	if strings.HasSuffix(t, "%") {
		t, div = strings.TrimSuffix(t, "%"), 100
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsNaN(v) || v < 0 || v/div > 10 {
		d.add(n, path, knobs.ErrBadValue, "%q is not a percentage in 0%%..1000%% (allowed: 10%%, or a fraction such as 0.1)", s)
		return 0
	}
	return v / div
}

func (d *decoder) fault(n *yaml.Node, path string) Fault {
	f := Fault{Line: n.Line, Col: n.Column, Within: DefaultRecoverWithin}
	var kindNode *yaml.Node
	d.mapping(n, path, faultKeys, func(key string, _, v *yaml.Node) {
		p := path + "." + key
		switch key {
		case "kind":
			s := d.str(v, p)
			kindNode = v
			if s != "" && !slices.Contains(faultKinds, s) {
				d.add(v, p, knobs.ErrBadValue, "unknown fault %q (allowed: %s)", s, strings.Join(faultKinds, ", "))
				return
			}
			f.Kind = FaultKind(s)
		case "at":
			f.At = d.duration(v, p, false)
		case "for":
			f.For = d.duration(v, p, true)
		case "expect":
			s := d.str(v, p)
			if s != "" && !slices.Contains(recoveries, s) {
				d.add(v, p, knobs.ErrBadValue, "unknown recovery %q (allowed: %s)", s, strings.Join(recoveries, ", "))
				return
			}
			f.Expect = Recovery(s)
		case "within":
			f.Within = d.duration(v, p, true)
		}
	})
	if n.Kind != yaml.MappingNode {
		return f
	}
	switch {
	case kindNode == nil:
		d.add(n, path+".kind", knobs.ErrBadValue, "missing (allowed: %s)", strings.Join(faultKinds, ", "))
	case f.Kind == FaultStallReads && f.For == 0:
		d.add(kindNode, path+".for", knobs.ErrBadValue, "stall_reads needs for: DURATION (how long reads stall)")
	case f.Kind != FaultStallReads && f.For != 0:
		d.add(kindNode, path+".for", knobs.ErrBadValue, "only stall_reads takes for")
	}
	if f.Expect == "" {
		f.Expect = RecoverReconnect
		if f.Kind == FaultStallReads {
			f.Expect = RecoverSurvive
		}
	}
	return f
}
