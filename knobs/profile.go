package knobs

import (
	"slices"
	"sort"
	"strings"

	"github.com/pelletier/go-toml/v2/unstable"
)

// Capabilities a profile can declare in its [capabilities] table. Each is
// false unless a profile says otherwise (builtin rung).
const (
	// CapThreads: Z_FEATURE_MULTI_THREAD=1, the read, lease and flush tasks
	// exist. Split lock needs it (nano-ros platform_config.rs capability check).
	CapThreads = "threads"
	// CapPerFdTxCeiling: the socket layer serialises send and receive per file
	// descriptor (Zephyr zsock mutex), so the read task holding the socket for
	// one socket timeout window caps TX at ~1 send per window (nano-ros tx-tuning.md).
	CapPerFdTxCeiling = "per_fd_tx_ceiling"
	// CapFlushThread: TX batching has a dedicated flush task; without it
	// (ThreadX, bare metal) a batch leaves only when the application spins.
	CapFlushThread = "flush_thread"
	// CapIPStack: the device has an IP stack (TCP/UDP links).
	CapIPStack = "ip_stack"
	// CapSerial: the device can use a serial link.
	CapSerial = "serial"
)

// Capabilities lists the capability names, in display order.
func Capabilities() []string {
	return []string{CapThreads, CapPerFdTxCeiling, CapFlushThread, CapIPStack, CapSerial}
}

// ProfileKind says whether a profile describes a platform or a board.
type ProfileKind int

const (
	// PlatformProfile is an RTOS / OS family (firmware/platforms/*.toml).
	PlatformProfile ProfileKind = iota + 1
	// BoardProfile is one board on one platform (firmware/boards/<platform>/*.toml).
	BoardProfile
)

func (k ProfileKind) String() string {
	if k == BoardProfile {
		return "board"
	}
	return "platform"
}

// Setting is a value a profile sets, with where it sets it.
type Setting struct {
	Value     int64
	Line, Col int
}

// Profile is one parsed platform or board file.
//
// Platform file:
//
//	names = ["zephyr", "zephyr-rtos"]   # first is canonical, the rest aliases
//	inherits = "generic"                # optional parent platform
//	description = "..."
//	[capabilities]
//	per_fd_tx_ceiling = true
//	[knobs.zenoh.tx]
//	batch = true
//
// A board file has the same shape with `platform = "<name>"` instead of
// `inherits`.
type Profile struct {
	Kind         ProfileKind
	Names        []string // Names[0] is canonical
	Inherits     string   // platform only
	Platform     string   // board only
	PlatformLine int      // board only: line of `platform =` (0 when unknown)
	Description  string
	File         string
	Capabilities map[string]Setting // Value 0 or 1
	Knobs        map[string]Setting // by knob id
}

// Name is the canonical name.
func (p *Profile) Name() string { return p.Names[0] }

// HasName reports whether name is the profile's name or one of its aliases
// (case-insensitive).
func (p *Profile) HasName(name string) bool {
	for _, n := range p.Names {
		if strings.EqualFold(n, name) {
			return true
		}
	}
	return false
}

var topKeys = map[ProfileKind][]string{
	PlatformProfile: {"names", "inherits", "description"},
	BoardProfile:    {"names", "platform", "description"},
}

// ParseProfile parses a platform or board file. Every problem is reported at
// once in a *ConfigError whose lines name the file, line and column.
func ParseProfile(kind ProfileKind, file string, data []byte) (*Profile, error) {
	doc, err := parseTOML(file, data)
	if err != nil {
		return nil, err
	}
	p := &Profile{Kind: kind, File: file, Capabilities: map[string]Setting{}, Knobs: map[string]Setting{}}
	var ps problems
	knobTables := knobTableSet()
	var badTables []string
	for _, t := range doc.tables {
		if t.path == "capabilities" || t.path == "knobs" || knobTables[t.path] {
			continue
		}
		badTables = append(badTables, t.path+".")
		ps.add(file, t.line, t.col, t.path, ErrUnknownKey, "%s", unknownTableMsg(kind, t.path))
	}
	namesLine := 0
	for _, e := range doc.entries {
		if slices.ContainsFunc(badTables, func(t string) bool { return strings.HasPrefix(e.path, t) }) {
			continue // reported once, at its table
		}
		switch {
		case slices.Contains(topKeys[kind], e.path):
			switch e.path {
			case "names":
				namesLine = e.line
				if e.kind != unstable.Array {
					ps.add(file, e.line, e.col, e.path, ErrType, "want an array of strings, got %s", typeName(e.kind))
					continue
				}
				p.Names = e.strs
			default:
				if e.kind != unstable.String {
					ps.add(file, e.line, e.col, e.path, ErrType, "want a string, got %s", typeName(e.kind))
					continue
				}
				switch e.path {
				case "inherits":
					p.Inherits = e.str
				case "platform":
					p.Platform, p.PlatformLine = e.str, e.line
				case "description":
					p.Description = e.str
				}
			}
		case strings.HasPrefix(e.path, "capabilities."):
			name := strings.TrimPrefix(e.path, "capabilities.")
			if !slices.Contains(Capabilities(), name) {
				ps.add(file, e.line, e.col, e.path, ErrUnknownKey, "unknown capability (known: %s)", strings.Join(Capabilities(), ", "))
				continue
			}
			if e.kind != unstable.Bool {
				ps.add(file, e.line, e.col, e.path, ErrType, "want a bool, got %s", typeName(e.kind))
				continue
			}
			p.Capabilities[name] = Setting{Value: b2i(e.boolean), Line: e.line, Col: e.col}
		case strings.HasPrefix(e.path, "knobs."):
			id := strings.TrimPrefix(e.path, "knobs.")
			k, ok := Lookup(id)
			if !ok {
				ps.add(file, e.line, e.col, e.path, ErrUnknownKey, "%s", unknownKnobMsg(e.path))
				continue
			}
			v, ok := knobValue(&ps, file, e, k)
			if !ok {
				continue
			}
			p.Knobs[id] = Setting{Value: v, Line: e.line, Col: e.col}
		default:
			ps.add(file, e.line, e.col, e.path, ErrUnknownKey, "%s", unknownTopMsg(kind))
		}
	}
	switch {
	case namesLine == 0:
		ps.add(file, 0, 0, "names", ErrProfile, "missing: a %s needs names = [\"<name>\", <aliases>...]", kind)
	case len(p.Names) == 0 && !slices.ContainsFunc(ps, func(q *Problem) bool { return q.Key == "names" }):
		ps.add(file, namesLine, 1, "names", ErrProfile, "must not be empty")
	}
	for _, n := range p.Names {
		if strings.TrimSpace(n) == "" || strings.ContainsAny(n, " \t") {
			ps.add(file, namesLine, 1, "names", ErrProfile, "%q is not a valid name (no blanks)", n)
		}
	}
	if kind == BoardProfile && p.Platform == "" {
		ps.add(file, 0, 0, "platform", ErrProfile, "missing: a board needs platform = \"<platform name>\"")
	}
	if err := ps.err(); err != nil {
		return nil, err
	}
	return p, nil
}

// knobValue checks the TOML type and the range of one knob setting.
func knobValue(ps *problems, file string, e entry, k Knob) (int64, bool) {
	switch k.Type {
	case Bool:
		if e.kind != unstable.Bool {
			ps.add(file, e.line, e.col, e.path, ErrType, "want a bool, got %s", typeName(e.kind))
			return 0, false
		}
		return b2i(e.boolean), true
	default:
		if e.kind != unstable.Integer {
			ps.add(file, e.line, e.col, e.path, ErrType, "want an integer (%s), got %s", unitOrCount(k), typeName(e.kind))
			return 0, false
		}
		if e.intErr != nil {
			ps.add(file, e.line, e.col, e.path, ErrRange, "must be in %s (does not fit 64 bits)", k.RangeString())
			return 0, false
		}
		if msg := rangeMsg(k, e.integer); msg != "" {
			ps.add(file, e.line, e.col, e.path, ErrRange, "%s", msg)
			return 0, false
		}
		return e.integer, true
	}
}

// rangeMsg is "" when v is valid for k, else the complaint.
func rangeMsg(k Knob, v int64) string {
	switch {
	case v < k.Min:
		return "must be ≥ " + k.Format(k.Min) + " (got " + k.Format(v) + ")"
	case v > k.Max:
		return "must be ≤ " + k.Format(k.Max) + " (got " + k.Format(v) + ")"
	}
	return ""
}

func unitOrCount(k Knob) string {
	if k.Unit == UnitNone {
		return "count"
	}
	return string(k.Unit)
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// knobTableSet is every table (and parent table) that holds knobs:
// "knobs.zenoh", "knobs.zenoh.tx", ...
func knobTableSet() map[string]bool {
	set := map[string]bool{}
	for _, k := range registry {
		t := k.Table()
		for t != "knobs" {
			set[t] = true
			t = t[:strings.LastIndexByte(t, '.')]
		}
	}
	return set
}

func unknownTopMsg(kind ProfileKind) string {
	return "unknown key (a " + kind.String() + " file has " + strings.Join(topKeys[kind], ", ") + ", [capabilities], [knobs.*])"
}

func unknownTableMsg(kind ProfileKind, path string) string {
	if strings.HasPrefix(path, "knobs.") {
		return unknownKnobMsg(path)
	}
	return "unknown table (a " + kind.String() + " file has " + strings.Join(topKeys[kind], ", ") + ", [capabilities], [knobs.*])"
}

// unknownKnobMsg suggests the keys of the table when the table exists, else
// the knob tables.
func unknownKnobMsg(path string) string {
	tbl := path[:max(strings.LastIndexByte(path, '.'), 0)]
	var keys []string
	for _, k := range registry {
		if k.Table() == tbl {
			keys = append(keys, k.Key())
		}
	}
	if len(keys) > 0 {
		return "unknown knob (known in [" + tbl + "]: " + strings.Join(keys, ", ") + ")"
	}
	tables := map[string]bool{}
	for _, k := range registry {
		tables[k.Table()] = true
	}
	names := make([]string, 0, len(tables))
	for t := range tables {
		names = append(names, "["+t+"]")
	}
	sort.Strings(names)
	return "unknown knob table (known: " + strings.Join(names, ", ") + ")"
}
