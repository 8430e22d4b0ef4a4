package bridge

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"regexp/syntax"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/picobridge/picobridge/knobs"
)

// position is where a key's value was written.
type position struct {
	file      string
	line, col int
}

type problemList []*knobs.Problem

func (ps problemList) err() error {
	if len(ps) == 0 {
		return nil
	}
	return &knobs.ConfigError{Problems: ps}
}

// decoder walks a yaml.Node tree into a Go value by reflection, strictly:
// unknown keys, duplicate keys, wrong kinds and values outside an enum are
// problems, and all problems are collected.
type decoder struct {
	file    string
	noLines bool // an override: positions in the value text mean nothing
	ps      problemList
	pos     map[string]position
}

func (d *decoder) problem(n *yaml.Node, key string, sentinel error, format string, args ...any) {
	p := &knobs.Problem{File: d.file, Key: key, Msg: fmt.Sprintf(format, args...), Err: sentinel}
	if n != nil && !d.noLines {
		p.Line, p.Col = n.Line, n.Column
	}
	d.ps = append(d.ps, p)
}

var yamlLineRE = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// yamlError splits a yaml.v3 error into its line (0 when it names none)
// and its message.
func yamlError(err error) (int, string) {
	if m := yamlLineRE.FindStringSubmatch(err.Error()); m != nil {
		line, _ := strconv.Atoi(m[1])
		return line, m[2]
	}
	return 0, err.Error()
}

// maxSyntaxSearchLines bounds syntaxPosition's search (a parse per line
// and per character of the faulty line): past it, yaml.v3's line stands.
const maxSyntaxSearchLines = 5000

// syntaxPosition is where the YAML syntax error msg lies in data: the
// first line whose text up to and including it fails to parse with msg,
// and in that line the first character (1-based, in runes) up to which it
// does. yaml.v3 reports the line its parser context started on (the
// mapping a bad indent is in, the line before a tab) and no column; this
// finds the line a reader would fix. A prefix that fails with another
// message (a flow list that the next lines close) is passed over. 0, 0
// when no prefix fails with msg.
func syntaxPosition(data []byte, msg string) (line, col int) {
	lines := strings.SplitAfter(string(data), "\n")
	if len(lines) > maxSyntaxSearchLines {
		return 0, 0
	}
	failsWith := func(doc string) bool {
		var n yaml.Node
		err := yaml.Unmarshal([]byte(doc), &n)
		if err == nil {
			return false
		}
		_, m := yamlError(err)
		return m == msg
	}
	var prefix strings.Builder
	for i, l := range lines {
		if failsWith(prefix.String() + l) {
			c := 0
			for j := range l {
				c++
				if j > 0 && failsWith(prefix.String()+l[:j]) {
					return i + 1, c - 1
				}
			}
			return i + 1, c
		}
		prefix.WriteString(l)
	}
	return 0, 0
}

// decodeConfig decodes data over a copy of base (nil: zero Config).
func decodeConfig(file string, data []byte, base *Config) (*Config, error) {
	c := &Config{}
	if base != nil {
		c = base.clone()
	}
	c.File = file
	if c.pos == nil {
		c.pos = map[string]position{}
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		line, msg := yamlError(err)
		p := &knobs.Problem{File: file, Line: line, Msg: msg, Err: knobs.ErrSyntax}
		if l, c := syntaxPosition(data, msg); l > 0 {
			p.Line, p.Col = l, c
		}
		return nil, &knobs.ConfigError{Problems: []*knobs.Problem{p}}
	}
	d := &decoder{file: file, pos: c.pos}
	if len(root.Content) > 0 {
		n := root.Content[0]
		if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
			return c, nil
		}
		d.value(n, reflect.ValueOf(c).Elem(), "")
	}
	if err := d.ps.err(); err != nil {
		return nil, err
	}
	// An entry without class is auto (the classifier decides): written out,
	// so that --print-config prints a value the decoder accepts back.
	for i := range c.Devices.List {
		if c.Devices.List[i].Class == "" {
			c.Devices.List[i].Class = OverrideAuto
		}
	}
	return c, nil
}

// clone deep-copies the slices and maps a decode may replace.
func (c *Config) clone() *Config {
	n := *c
	n.Zenoh.Listen = slices.Clone(c.Zenoh.Listen)
	n.Zenoh.Connect = slices.Clone(c.Zenoh.Connect)
	n.Zenoh.Routing.Router.Linkstate.TransportWeights = slices.Clone(c.Zenoh.Routing.Router.Linkstate.TransportWeights)
	n.Routes.Allow = c.Routes.Allow.clone()
	n.Routes.Deny = c.Routes.Deny.clone()
	n.Routes.PubMaxFrequencies = slices.Clone(c.Routes.PubMaxFrequencies)
	n.Routes.PubPriorities = slices.Clone(c.Routes.PubPriorities)
	n.Routes.Critical = slices.Clone(c.Routes.Critical)
	n.Devices.Default = c.Devices.Default.clone()
	n.Devices.List = make([]DeviceConfig, len(c.Devices.List))
	for i, dc := range c.Devices.List {
		dc.DeviceProfile = dc.DeviceProfile.clone()
		n.Devices.List[i] = dc
	}
	n.pos = make(map[string]position, len(c.pos))
	for k, v := range c.pos {
		n.pos[k] = v
	}
	return &n
}

func (p DeviceProfile) clone() DeviceProfile {
	q := p
	q.EnvFiles = slices.Clone(p.EnvFiles)
	if p.Env != nil {
		q.Env = make(map[string]string, len(p.Env))
		for k, v := range p.Env {
			q.Env[k] = v
		}
	}
	return q
}

func (c *Config) override(source, key, yamlValue string) error {
	var root yaml.Node
	if err := yaml.Unmarshal([]byte(yamlValue), &root); err != nil || len(root.Content) == 0 {
		msg := "empty value"
		if err != nil {
			msg = err.Error()
		}
		return &knobs.ConfigError{Problems: []*knobs.Problem{{File: source, Key: key, Msg: msg, Err: knobs.ErrSyntax}}}
	}
	v := reflect.ValueOf(c).Elem()
	for i, part := range strings.Split(key, ".") {
		if v.Type() == nameFilterType {
			// routes.allow.publishers over a plain list: the list becomes
			// every kind's, then this kind is replaced.
			v.Addr().Interface().(*NameFilter).unflatten()
		}
		f, ok := fieldByName(v, part)
		if !ok {
			prefix := strings.Join(strings.Split(key, ".")[:i], ".")
			return &knobs.ConfigError{Problems: []*knobs.Problem{{File: source, Key: key, Err: knobs.ErrUnknownKey,
				Msg: fmt.Sprintf("unknown key %q%s (allowed: %s)", part, inWhat(prefix), strings.Join(fieldNames(v.Type()), ", "))}}}
		}
		v = f
	}
	if c.pos == nil {
		c.pos = map[string]position{}
	}
	for k := range c.pos {
		if k == key || strings.HasPrefix(k, key+".") || strings.HasPrefix(k, key+"[") {
			delete(c.pos, k)
		}
	}
	d := &decoder{file: source, pos: c.pos, noLines: true}
	d.value(root.Content[0], v, key)
	return d.ps.err()
}

func inWhat(prefix string) string {
	if prefix == "" {
		return ""
	}
	return " in " + prefix
}

var durationType = reflect.TypeFor[time.Duration]()
var patternType = reflect.TypeFor[Pattern]()
var timeoutType = reflect.TypeFor[Timeout]()
var nameFilterType = reflect.TypeFor[NameFilter]()
var maxFrequencyType = reflect.TypeFor[MaxFrequency]()
var maxFrequenciesType = reflect.TypeFor[[]MaxFrequency]()
var pubPriorityType = reflect.TypeFor[PubPriority]()

func (d *decoder) value(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if d.pos != nil && path != "" && d.file != "" {
		d.pos[path] = position{file: d.file, line: n.Line, col: n.Column}
		if d.noLines {
			d.pos[path] = position{file: d.file}
		}
	}
	isNull := n.Kind == yaml.ScalarNode && n.Tag == "!!null"
	t := v.Type()
	switch {
	case t == durationType:
		s, ok := d.scalar(n, path, "a duration with a unit (200ms, 1s)")
		if !ok {
			return
		}
		dur, err := time.ParseDuration(s)
		if err != nil {
			d.problem(n, path, knobs.ErrBadValue, "cannot parse %q as a duration (want a number with a unit: ns, us, ms, s, m, h)", s)
			return
		}
		v.SetInt(int64(dur))
		return
	case t == timeoutType:
		d.timeout(n, v, path)
		return
	case t == nameFilterType:
		// A plain list (every kind) or a mapping per kind; either
		// replaces the whole filter.
		f := NameFilter{}
		switch {
		case isNull:
			f.Flat = []Pattern{}
		case n.Kind == yaml.SequenceNode:
			d.value(n, reflect.ValueOf(&f.Flat).Elem(), path)
		case n.Kind == yaml.MappingNode:
			d.fields(n, reflect.ValueOf(&f).Elem(), path)
		default:
			d.problem(n, path, knobs.ErrType, "want a list of regexes (every kind) or a mapping with keys %s (got %s)", strings.Join(fieldNames(t), ", "), kindName(n))
			return
		}
		v.Set(reflect.ValueOf(f))
		return
	case t == maxFrequenciesType && n.Kind == yaml.ScalarNode && !isNull:
		// zenoh-bridge-ros2dds: a bare number caps every publisher.
		s := n.Value
		m, err := ParseMaxFrequency(".*=" + s)
		if err != nil || (n.Tag != "!!int" && n.Tag != "!!float") {
			d.problem(n, path, knobs.ErrType, "want a list of \"<regex>=<Hz>\" or a number of Hz > 0 for every topic (got %q)", s)
			return
		}
		v.Set(reflect.ValueOf([]MaxFrequency{m}))
		return
	case t == maxFrequencyType:
		s, ok := d.scalar(n, path, `"<regex>=<Hz>", e.g. "/scan=10"`)
		if !ok {
			return
		}
		m, err := ParseMaxFrequency(s)
		if err != nil {
			d.problem(n, path, knobs.ErrBadValue, "%v", err)
			return
		}
		v.Set(reflect.ValueOf(m))
		return
	case t == pubPriorityType:
		s, ok := d.scalar(n, path, `"<regex>=<1..7>[:express]", e.g. "/cmd_vel=1:express"`)
		if !ok {
			return
		}
		p, err := ParsePubPriority(s)
		if err != nil {
			d.problem(n, path, knobs.ErrBadValue, "%v", err)
			return
		}
		v.Set(reflect.ValueOf(p))
		return
	case t == patternType:
		s, ok := d.scalar(n, path, "a regular expression")
		if !ok {
			return
		}
		p, err := NewPattern(s)
		if err != nil {
			msg := err.Error()
			var se *syntax.Error
			if errors.As(err, &se) {
				msg = string(se.Code)
			}
			d.problem(n, path, knobs.ErrBadValue, "bad regular expression: %s", msg)
			return
		}
		v.Set(reflect.ValueOf(p))
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			d.problem(n, path, knobs.ErrType, "want a mapping with keys %s (got %s)", strings.Join(fieldNames(t), ", "), kindName(n))
			return
		}
		d.fields(n, v, path)
	case reflect.Slice:
		if isNull {
			v.Set(reflect.MakeSlice(t, 0, 0))
			return
		}
		if n.Kind != yaml.SequenceNode {
			d.problem(n, path, knobs.ErrType, "want a list (got %s)", kindName(n))
			return
		}
		s := reflect.MakeSlice(t, len(n.Content), len(n.Content))
		for i, e := range n.Content {
			d.value(e, s.Index(i), fmt.Sprintf("%s[%d]", path, i))
		}
		v.Set(s)
	case reflect.Map:
		if isNull {
			v.Set(reflect.MakeMap(t))
			return
		}
		if n.Kind != yaml.MappingNode {
			d.problem(n, path, knobs.ErrType, "want a mapping (got %s)", kindName(n))
			return
		}
		m := reflect.MakeMap(t)
		for i := 0; i+1 < len(n.Content); i += 2 {
			kn, vn := n.Content[i], n.Content[i+1]
			ev := reflect.New(t.Elem()).Elem()
			d.value(vn, ev, join(path, kn.Value))
			m.SetMapIndex(reflect.ValueOf(kn.Value), ev)
		}
		v.Set(m)
	case reflect.String:
		if n.Kind == yaml.ScalarNode && isNull && t.Kind() == reflect.String && !isEnum(v) {
			v.SetString("")
			return
		}
		s, ok := d.scalar(n, path, "a string")
		if !ok {
			return
		}
		if e, ok := v.Interface().(enum); ok && !slices.Contains(e.allowed(), s) {
			d.problem(n, path, knobs.ErrBadValue, "unknown value %q (allowed: %s)", s, strings.Join(e.allowed(), ", "))
			return
		}
		v.SetString(s)
	case reflect.Bool:
		s, ok := d.scalar(n, path, "true or false")
		if !ok {
			return
		}
		if n.Tag != "!!bool" {
			d.problem(n, path, knobs.ErrType, "want true or false (got %q)", s)
			return
		}
		b, _ := strconv.ParseBool(strings.ToLower(s))
		v.SetBool(b)
	case reflect.Int, reflect.Int64, reflect.Int32:
		s, ok := d.scalar(n, path, "an integer")
		if !ok {
			return
		}
		i, err := strconv.ParseInt(s, 0, 64)
		if err != nil || n.Tag != "!!int" {
			d.problem(n, path, knobs.ErrType, "want an integer (got %q)", s)
			return
		}
		v.SetInt(i)
	case reflect.Float64:
		s, ok := d.scalar(n, path, "a number")
		if !ok {
			return
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || (n.Tag != "!!int" && n.Tag != "!!float") {
			d.problem(n, path, knobs.ErrType, "want a number (got %q)", s)
			return
		}
		v.SetFloat(f)
	default:
		panic("bridge: config field of unsupported kind " + t.String())
	}
}

// fields decodes mapping n into the fields of struct v.
func (d *decoder) fields(n *yaml.Node, v reflect.Value, path string) {
	t := v.Type()
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, vn := n.Content[i], n.Content[i+1]
		name := kn.Value
		kp := join(path, name)
		if seen[name] {
			d.problem(kn, kp, knobs.ErrSyntax, "duplicate key")
			continue
		}
		seen[name] = true
		f, ok := fieldByName(v, name)
		if !ok {
			d.problem(kn, kp, knobs.ErrUnknownKey, "unknown key%s (allowed: %s)", inWhat(path), strings.Join(fieldNames(t), ", "))
			continue
		}
		d.value(vn, f, kp)
	}
}

// timeout decodes a queries_timeout value: a duration (or seconds) for
// every name, or a list of "<regex>=<duration>" entries.
func (d *decoder) timeout(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind == yaml.SequenceNode {
		var t Timeout
		for i, e := range n.Content {
			ep := fmt.Sprintf("%s[%d]", path, i)
			s, ok := d.scalar(e, ep, `"<regex>=<duration>", e.g. ".*/set_bool=1s"`)
			if !ok {
				continue
			}
			nt, err := ParseNameTimeout(s)
			if err != nil {
				d.problem(e, ep, knobs.ErrBadValue, "%v", err)
				continue
			}
			t.Names = append(t.Names, nt)
		}
		v.Set(reflect.ValueOf(t))
		return
	}
	s, ok := d.scalar(n, path, `a duration (1s, or seconds: 1.0) or a list of "<regex>=<duration>"`)
	if !ok {
		return
	}
	dur, err := parseTimeoutValue(s)
	if err != nil {
		d.problem(n, path, knobs.ErrBadValue, "%v, or a list of \"<regex>=<duration>\"", err)
		return
	}
	v.Set(reflect.ValueOf(Timeout{All: dur}))
}

func isEnum(v reflect.Value) bool { _, ok := v.Interface().(enum); return ok }

// scalar returns a scalar's text, or reports that want was expected.
func (d *decoder) scalar(n *yaml.Node, path, want string) (string, bool) {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		d.problem(n, path, knobs.ErrType, "want %s (got %s)", want, kindName(n))
		return "", false
	}
	return n.Value, true
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return "nothing"
		}
		return strconv.Quote(n.Value)
	}
	return "?"
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// fieldByName finds the field tagged name in struct v, looking into inline
// (embedded) structs.
func fieldByName(v reflect.Value, name string) (reflect.Value, bool) {
	if v.Kind() != reflect.Struct {
		return reflect.Value{}, false
	}
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		tag, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if tag == "-" || !f.IsExported() {
			continue
		}
		if opts == "inline" {
			if fv, ok := fieldByName(v.Field(i), name); ok {
				return fv, true
			}
			continue
		}
		if tag == name {
			return v.Field(i), true
		}
	}
	return reflect.Value{}, false
}

// fieldNames lists the YAML keys of struct type t, inline fields included, sorted.
func fieldNames(t reflect.Type) []string {
	var names []string
	for i := range t.NumField() {
		f := t.Field(i)
		tag, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if tag == "-" || !f.IsExported() {
			continue
		}
		if opts == "inline" {
			names = append(names, fieldNames(f.Type)...)
			continue
		}
		names = append(names, tag)
	}
	slices.Sort(names)
	return names
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
