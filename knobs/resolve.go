package knobs

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Rung is a step of the precedence ladder: builtin < platform < board < env.
type Rung int

const (
	RungBuiltin  Rung = iota // the registry default
	RungPlatform             // a platform profile (inherits chain, child wins per field)
	RungBoard                // a board profile
	RungEnv                  // an environment or Kconfig variable
	// RungDevice is what the device itself announced it was built with
	// (announce.go, docs/probe.md "Knob announcement"): above every rung the
	// gateway can only infer.
	RungDevice
)

func (r Rung) String() string {
	switch r {
	case RungBuiltin:
		return "builtin"
	case RungPlatform:
		return "platform"
	case RungBoard:
		return "board"
	case RungEnv:
		return "env"
	case RungDevice:
		return "device"
	}
	return "invalid"
}

// Source is the provenance of a resolved value: the rung that set it and
// where exactly.
type Source struct {
	Rung    Rung
	Profile string  // platform or board name (RungPlatform, RungBoard)
	Var     string  // variable name (RungEnv)
	VarKind EnvKind // spelling of Var (RungEnv)
	File    string  // profile or env file; ProcessEnvFile for the process environment
	Line    int     // 1-based line in File; 0 when unknown
	Note    string  // why a value differs from what its rung said (capability downgrade)
}

// String renders the "set by" column: "builtin", "platform zephyr
// (firmware/platforms/zephyr.toml:12)", "kconfig CONFIG_NROS_ZENOH_TX_BATCH (prj.conf:3)".
func (s Source) String() string {
	var b strings.Builder
	switch s.Rung {
	case RungBuiltin:
		b.WriteString("builtin")
	case RungPlatform, RungBoard:
		fmt.Fprintf(&b, "%s %s (%s)", s.Rung, s.Profile, fileLine(s.File, s.Line))
	case RungEnv:
		label := "env"
		if s.VarKind == EnvKconfig {
			label = "kconfig"
		}
		fmt.Fprintf(&b, "%s %s (%s)", label, s.Var, fileLine(s.File, s.Line))
	case RungDevice:
		fmt.Fprintf(&b, "device %s (announced)", s.Profile)
	}
	if s.Note != "" {
		b.WriteString(" [" + s.Note + "]")
	}
	return b.String()
}

func fileLine(file string, line int) string {
	if line == 0 {
		return file
	}
	return file + ":" + strconv.Itoa(line)
}

// Value is one resolved knob.
type Value struct {
	Knob   Knob
	Value  int64 // Bool knobs: 0 or 1
	Source Source
}

// String renders the value ("true", "1024").
func (v Value) String() string { return v.Knob.Format(v.Value) }

// Capability is one resolved capability.
type Capability struct {
	Name   string
	Value  bool
	Source Source
}

// Warning is something the user should know about a resolution that is not
// an error: a capability downgrade, a value set but not effective, a
// deprecated spelling.
type Warning struct {
	Key string // knob id, capability or variable name
	Msg string
}

func (w Warning) String() string { return w.Key + ": " + w.Msg }

// Resolved is the outcome of the ladder for one device: every knob of the
// registry with its value and provenance, the capabilities, and warnings.
type Resolved struct {
	Platform     *Profile
	Chain        []*Profile // platform inherits chain, root first, Platform last
	Board        *Profile   // nil without a board
	Values       []Value    // registry order
	Capabilities []Capability
	Warnings     []Warning
}

// Get returns the resolved knob id; it panics on an id that is not in the
// registry (a programming error: use the exported id constants).
func (r *Resolved) Get(id string) Value {
	i, ok := byID[id]
	if !ok {
		panic("knobs: unknown knob id " + strconv.Quote(id))
	}
	return r.Values[i]
}

// Int is the value of an Int knob.
func (r *Resolved) Int(id string) int64 { return r.Get(id).Value }

// Bool is the value of a Bool knob.
func (r *Resolved) Bool(id string) bool { return r.Get(id).Value != 0 }

// Cap reports a resolved capability (false for an unknown name).
func (r *Resolved) Cap(name string) bool {
	for _, c := range r.Capabilities {
		if c.Name == name {
			return c.Value
		}
	}
	return false
}

// Options select what Resolve resolves.
type Options struct {
	// Platform is a platform name or alias. It may be empty when Board names a
	// board, whose platform is then used.
	Platform string
	// Board is a board name, alias or the path of a board file; empty for none.
	Board string
	// Env is the env rung; nil for none.
	Env *Env
}

// Resolve walks the ladder builtin < platform (inherits chain, child wins per
// field) < board < env/Kconfig for every knob of the registry, then applies
// the capability check (split lock needs threads) and looks for values that
// are set but not effective. Problems (unknown names, unparseable or
// out-of-range env values) are reported all at once in a *ConfigError.
func (c *Catalog) Resolve(opts Options) (*Resolved, error) {
	r := &Resolved{}
	if opts.Board != "" {
		b, err := c.Board(opts.Board)
		if err != nil {
			return nil, err
		}
		r.Board = b
	}
	platName := opts.Platform
	if platName == "" {
		if r.Board == nil {
			return nil, &ConfigError{Problems: []*Problem{{Key: "platform", Err: ErrUnknownPlatform,
				Msg: "no platform given (name one, or a board)"}}}
		}
		platName = r.Board.Platform
	}
	plat, err := c.Platform(platName)
	if err != nil {
		var ce *ConfigError
		if r.Board != nil && opts.Platform == "" && errors.As(err, &ce) && len(ce.Problems) == 1 {
			// The name came from the board file: point at its `platform =` line.
			p := *ce.Problems[0]
			p.File, p.Line, p.Msg = r.Board.File, r.Board.PlatformLine, "board "+r.Board.Name()+": "+p.Msg
			return nil, &ConfigError{Problems: []*Problem{&p}}
		}
		return nil, err
	}
	if r.Board != nil && !plat.HasName(r.Board.Platform) {
		return nil, &ConfigError{Problems: []*Problem{{File: r.Board.File, Line: r.Board.PlatformLine, Key: "platform", Err: ErrProfile,
			Msg: fmt.Sprintf("board %s is for platform %s, not %s", r.Board.Name(), r.Board.Platform, plat.Name())}}}
	}
	r.Platform = plat
	if r.Chain, err = c.chain(plat); err != nil {
		return nil, err
	}

	// Profiles in ladder order.
	type rungProfile struct {
		rung Rung
		p    *Profile
	}
	var rungs []rungProfile
	for _, p := range r.Chain {
		rungs = append(rungs, rungProfile{RungPlatform, p})
	}
	if r.Board != nil {
		rungs = append(rungs, rungProfile{RungBoard, r.Board})
	}

	for _, name := range Capabilities() {
		cp := Capability{Name: name}
		for _, rp := range rungs {
			if s, ok := rp.p.Capabilities[name]; ok {
				cp.Value = s.Value != 0
				cp.Source = Source{Rung: rp.rung, Profile: rp.p.Name(), File: rp.p.File, Line: s.Line}
			}
		}
		r.Capabilities = append(r.Capabilities, cp)
	}

	r.Values = make([]Value, len(registry))
	for i, k := range registry {
		v := Value{Knob: k, Value: k.Default, Source: Source{Rung: RungBuiltin}}
		for _, rp := range rungs {
			if s, ok := rp.p.Knobs[k.ID]; ok {
				v.Value = s.Value
				v.Source = Source{Rung: rp.rung, Profile: rp.p.Name(), File: rp.p.File, Line: s.Line}
			}
		}
		r.Values[i] = v
	}

	var ps problems
	if opts.Env != nil {
		r.applyEnv(opts.Env, &ps)
	}
	if err := ps.err(); err != nil {
		return nil, err
	}
	r.crossCheck()
	return r, nil
}

// envRank orders the spellings of one knob: canonical NROS_* first, then the
// deprecated ZPICO_* alias, then Kconfig (the Zephyr road today is env >
// Kconfig, anchors.md §2.3); within one spelling the process environment
// before files, and a later variable (later line, later file) before an
// earlier one. seq is the variable's index in Env.Vars.
func envRank(v EnvVar, kind EnvKind, seq int) [3]int {
	origin := 1
	if v.File == ProcessEnvFile {
		origin = 0
	}
	return [3]int{int(kind), origin, -seq}
}

func (r *Resolved) applyEnv(env *Env, ps *problems) {
	type cand struct {
		v     EnvVar
		name  EnvName
		value int64
		seq   int
	}
	byKnob := map[string][]cand{}
	capCands := map[string][]cand{}
	deprecated := map[string]bool{}
	var derived []EnvVar
	for seq, v := range env.Vars {
		if cap, kind, ok := capabilityEnv(v.Name); ok {
			val, msg := parseEnvValue(Knob{Type: Bool, Max: 1}, v.Value)
			if msg != "" {
				ps.add(v.File, v.Line, 0, v.Name, ErrBadValue, "%s", msg)
				continue
			}
			capCands[cap] = append(capCands[cap], cand{v, EnvName{v.Name, kind}, val, seq})
			continue
		}
		k, name, ok := LookupEnv(v.Name)
		if !ok {
			if v.File != ProcessEnvFile {
				if near := nearestEnvName(v.Name); near != "" {
					r.warn(v.Name, "%s: not a knob picobridge models; did you mean %s?", v.where(), near)
				} else if strings.HasPrefix(v.Name, "CONFIG_NROS_") && !nrosKconfigNotKnobs[v.Name] {
					r.warn(v.Name, "%s: unknown CONFIG_NROS_* symbol (not a knob, nor a nano-ros Kconfig option picobridge knows): ignored", v.where())
				}
			}
			continue
		}
		if k.Derivable && strings.TrimSpace(v.Value) == "-1" {
			derived = append(derived, v)
			continue
		}
		val, msg := parseEnvValue(k, v.Value)
		if msg != "" {
			ps.add(v.File, v.Line, 0, v.Name, ErrBadValue, "%s", msg)
			continue
		}
		if name.Kind == EnvDeprecated && !deprecated[v.Name] {
			deprecated[v.Name] = true
			r.warn(v.Name, "deprecated spelling of %s; use %s", k.ID, strings.Join(k.EnvNames(EnvCanonical), ", "))
		}
		byKnob[k.ID] = append(byKnob[k.ID], cand{v, name, val, seq})
	}
	rank := func(cs []cand) {
		sort.SliceStable(cs, func(i, j int) bool {
			a, b := envRank(cs[i].v, cs[i].name.Kind, cs[i].seq), envRank(cs[j].v, cs[j].name.Kind, cs[j].seq)
			for n := range a {
				if a[n] != b[n] {
					return a[n] < b[n]
				}
			}
			return false
		})
	}
	for i := range r.Capabilities {
		cs := capCands[r.Capabilities[i].Name]
		if len(cs) == 0 {
			continue
		}
		rank(cs)
		win := cs[0]
		r.Capabilities[i].Value = win.value != 0
		r.Capabilities[i].Source = Source{Rung: RungEnv, Var: win.v.Name, VarKind: win.name.Kind, File: win.v.File, Line: win.v.Line}
		for _, lose := range cs[1:] {
			if lose.value != win.value {
				r.warn("capabilities."+r.Capabilities[i].Name, "%s=%s (%s) is not effective: %s=%s (%s) wins",
					lose.v.Name, lose.v.Value, lose.v.where(), win.v.Name, win.v.Value, win.v.where())
			}
		}
	}
	ids := make([]string, 0, len(byKnob))
	for id := range byKnob {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return byID[ids[i]] < byID[ids[j]] })
	for _, id := range ids {
		cs := byKnob[id]
		rank(cs)
		win := cs[0]
		i := byID[id]
		r.Values[i].Value = win.value
		r.Values[i].Source = Source{Rung: RungEnv, Var: win.v.Name, VarKind: win.name.Kind, File: win.v.File, Line: win.v.Line}
		for _, lose := range cs[1:] {
			if lose.value != win.value {
				r.warn(id, "%s=%s (%s) is not effective: %s=%s (%s) wins",
					lose.v.Name, lose.v.Value, lose.v.where(), win.v.Name, win.v.Value, win.v.where())
			}
		}
	}
	r.warnDerived(derived)
}

// warnDerived reports -1 ("derive at build time") values of Derivable knobs.
func (r *Resolved) warnDerived(derived []EnvVar) {
	for _, v := range derived {
		k, _, _ := LookupEnv(v.Name)
		cur := r.Get(k.ID)
		r.warn(k.ID, "%s=-1 (%s) derives the value at build time from the image's message types, which picobridge cannot see: it models %s (%s); set the value explicitly to model the device exactly",
			v.Name, v.where(), cur, cur.Source)
	}
}

// nrosKconfigNotKnobs are nano-ros Kconfig symbols that exist but are not
// knobs (transport selection, locator, query buffers): no warning for them.
var nrosKconfigNotKnobs = map[string]bool{
	"CONFIG_NROS_RMW_ZENOH":              true,
	"CONFIG_NROS_RMW_XRCE":               true,
	"CONFIG_NROS_ZENOH_LINK_TCP":         true,
	"CONFIG_NROS_ZENOH_LINK_UDP_UNICAST": true,
	"CONFIG_NROS_ZENOH_SCOUTING":         true,
	"CONFIG_NROS_ZENOH_LOCATOR":          true,
	"CONFIG_NROS_MAX_PENDING_GETS":       true,
	"CONFIG_NROS_GET_REPLY_BUF_SIZE":     true,
}

// capabilityEnv maps the build spellings of a capability: threads is
// Z_FEATURE_MULTI_THREAD, which Zephyr sets with CONFIG_NROS_ZENOH_MULTI_THREAD.
func capabilityEnv(name string) (string, EnvKind, bool) {
	switch name {
	case "NROS_ZENOH_MULTI_THREAD":
		return CapThreads, EnvCanonical, true
	case "CONFIG_NROS_ZENOH_MULTI_THREAD":
		return CapThreads, EnvKconfig, true
	}
	return "", 0, false
}

// nearestEnvName returns the registry spelling within edit distance 2 of an
// unknown variable name (a likely typo), or "".
func nearestEnvName(name string) string {
	if !strings.HasPrefix(name, "NROS_") && !strings.HasPrefix(name, "ZPICO_") && !strings.HasPrefix(name, "CONFIG_NROS_") {
		return ""
	}
	best, bestD := "", 3
	for _, k := range registry {
		for _, e := range k.Env {
			if d := editDistance(name, e.Name, bestD); d < bestD {
				best, bestD = e.Name, d
			}
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b, or limit when it is
// at least limit.
func editDistance(a, b string, limit int) int {
	if d := len(a) - len(b); d >= limit || -d >= limit {
		return limit
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		rowMin := cur[0]
		for j := 1; j <= len(b); j++ {
			c := 1
			if a[i-1] == b[j-1] {
				c = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+c)
			rowMin = min(rowMin, cur[j])
		}
		if rowMin >= limit {
			return limit
		}
		prev, cur = cur, prev
	}
	return min(prev[len(b)], limit)
}

func (r *Resolved) warn(key, format string, args ...any) {
	r.Warnings = append(r.Warnings, Warning{Key: key, Msg: fmt.Sprintf(format, args...)})
}

// crossCheck applies the capability check and finds values that are set but
// not effective (issue 0316's failure shape: a knob silently ignored).
func (r *Resolved) crossCheck() {
	split := &r.Values[byID[TxSplitLock]]
	if split.Value != 0 && !r.Cap(CapThreads) {
		r.warn(TxSplitLock, "true from %s downgraded to false: platform %s has no threads (capabilities.threads = false)",
			split.Source, r.Platform.Name())
		split.Value = 0
		split.Source = Source{Rung: RungBuiltin, Note: "downgraded from " + split.Source.Rung.String() + ": no threads"}
	}
	batch := r.Get(TxBatch)
	if !batch.Bool() {
		if split.Value != 0 {
			r.warn(TxSplitLock, "true (set by %s) is not effective: %s is false", split.Source, TxBatch)
		}
		if f := r.Get(TxFlushMs); f.Source.Rung != RungBuiltin {
			r.warn(TxFlushMs, "%s (set by %s) is not effective: %s is false", f, f.Source, TxBatch)
		}
	} else if !r.Cap(CapFlushThread) || !r.Cap(CapThreads) {
		r.warn(TxFlushMs, "platform %s has no flush thread: a batch leaves only when the application spins, not every %d ms",
			r.Platform.Name(), r.Int(TxFlushMs))
	}
	if frag := r.Get(FragMaxSize); !r.Bool(Fragmentation) && frag.Source.Rung != RungBuiltin {
		r.warn(FragMaxSize, "%s (set by %s) is not effective: %s is false", frag, frag.Source, Fragmentation)
	}
}

// Bool reports a Bool value as a Go bool.
func (v Value) Bool() bool { return v.Value != 0 }
