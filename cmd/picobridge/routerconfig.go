package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/titanous/json5"
)

// zenohd's configuration for `picobridge router`: -c/--config FILE, a
// zenohd JSON5 file, and the --cfg keys that set what a flag sets. The
// order is zenohd's: the file, then the flags, then --cfg.

// routerFlagKey is a zenohd key that sets what a router flag sets.
type routerFlagKey struct {
	flag string // the flag that wins over the file; "" for none
	set  func(o *routerOptions, v any) error
}

// routerFlagKeys are zenohd's keys (Zenoh 1.x DEFAULT_CONFIG.json5) for the
// settings that `picobridge router` has flags for.
var routerFlagKeys = map[string]routerFlagKey{
	"mode": {"", func(_ *routerOptions, v any) error {
		if s, ok := v.(string); !ok || s != "router" {
			return fmt.Errorf("%s: picobridge router runs in router mode (picobridge run -m peer|client for the others)", jsonText(v))
		}
		return nil
	}},
	"id": {"id", func(o *routerOptions, v any) error {
		s, ok := v.(string)
		if !ok {
			return fmt.Errorf("%s: want a zid in hex as a string", jsonText(v))
		}
		o.id = s
		return nil
	}},
	"listen/endpoints":  {"listen", func(o *routerOptions, v any) error { return endpointList(&o.listen, v) }},
	"connect/endpoints": {"connect", func(o *routerOptions, v any) error { return endpointList(&o.connect, v) }},
	"transport/link/tx/lease": {"lease", func(o *routerOptions, v any) error {
		return number(v, func(n int64) { o.lease = time.Duration(n) * time.Millisecond }, "milliseconds")
	}},
	"transport/link/tx/batch_size": {"batch-size", func(o *routerOptions, v any) error {
		return number(v, func(n int64) { o.batch = uint16(min(max(n, 0), 65535)) }, "bytes, up to 65535")
	}},
	"transport/link/rx/max_message_size": {"max-message-size", func(o *routerOptions, v any) error {
		return number(v, func(n int64) { o.maxMsg = int(min(max(n, 0), 1<<40)) }, "bytes")
	}},
}

func routerFlagKeyNames() []string {
	var ks []string
	for k := range routerFlagKeys {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// endpointList sets *dst from a list of endpoint strings, or from zenohd's
// per-mode form {router: [...], peer: [...]} (the router entry).
func endpointList(dst *[]string, v any) error {
	if m, ok := v.(map[string]any); ok {
		v = m["router"]
	}
	l, ok := v.([]any)
	if !ok {
		return fmt.Errorf("%s: want a list of endpoints, e.g. [\"tcp/0.0.0.0:7447\"]", jsonText(v))
	}
	eps := make([]string, 0, len(l))
	for _, e := range l {
		s, ok := e.(string)
		if !ok {
			return fmt.Errorf("%s: want a list of endpoints, e.g. [\"tcp/0.0.0.0:7447\"]", jsonText(v))
		}
		eps = append(eps, s)
	}
	*dst = eps
	return nil
}

func number(v any, set func(int64), unit string) error {
	f, ok := v.(float64)
	if !ok || f != float64(int64(f)) || f < 0 {
		return fmt.Errorf("%s: want a whole number of %s", jsonText(v), unit)
	}
	set(int64(f))
	return nil
}

// configEntry is one leaf of a configuration file: its zenohd key (parts
// joined by /) and its value.
type configEntry struct {
	key string
	v   any
}

// readJSON5Config reads a zenohd JSON5 configuration file into its leaves,
// sorted by key. Objects are walked into, except access_control (one
// value) and listen/endpoints and connect/endpoints (zenohd's per-mode
// form); null and {} mean zenohd's default and are left out.
func readJSON5Config(path string) ([]configEntry, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var doc any
	if err := json5.Unmarshal(data, &doc); err != nil {
		var se *json5.SyntaxError
		if errors.As(err, &se) {
			// Offset counts the bytes read, the faulty one included
			line, col := lineCol(data, se.Offset-1)
			return nil, &positionError{line, col, err}
		}
		return nil, err
	}
	root, ok := doc.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("want a JSON5 object at the top, as zenohd's configuration (got %s)", jsonText(doc))
	}
	var out []configEntry
	var walk func(prefix string, m map[string]any)
	walk = func(prefix string, m map[string]any) {
		for k, v := range m {
			key := prefix + k
			if sub, ok := v.(map[string]any); ok && key != "access_control" && key != "listen/endpoints" && key != "connect/endpoints" {
				walk(key+"/", sub)
				continue
			}
			if v == nil {
				continue
			}
			out = append(out, configEntry{key, v})
		}
	}
	walk("", root)
	slices.SortFunc(out, func(a, b configEntry) int { return strings.Compare(a.key, b.key) })
	return out, nil
}

// positionError is a syntax error at a line and column of the file.
type positionError struct {
	line, col int
	err       error
}

func (e *positionError) Error() string { return fmt.Sprintf("%d:%d: %v", e.line, e.col, e.err) }
func (e *positionError) Unwrap() error { return e.err }

// lineCol is the 1-based line and column (in bytes) of offset in data.
func lineCol(data []byte, offset int64) (int, int) {
	offset = min(max(offset, 0), int64(len(data)))
	before := data[:offset]
	line := 1 + strings.Count(string(before), "\n")
	col := int(offset) - strings.LastIndex(string(before), "\n")
	return line, col
}

// isEmpty reports whether v is an empty list (zenohd writes [] for "none").
func isEmpty(v any) bool {
	l, ok := v.([]any)
	return ok && len(l) == 0
}

// applyConfig lays -c/--config FILE, the flags and --cfg together as
// zenohd does: a flag given on the command line wins over the file, a --cfg
// over both. Keys that set a flag's setting are applied here; the others
// (scouting, security, link weights) stay in o.cfg, the file's first, for
// scouting(), security() and transportWeights(). --no-multicast-scouting
// turns multicast scouting off whatever set it. Errors name the file or
// the flag, then the key.
func (o *routerOptions) applyConfig() error {
	changed := o.changed
	if changed == nil {
		changed = func(string) bool { return false }
	}
	var fileCfg []string
	if o.configFile != "" {
		src := "--config " + o.configFile
		entries, err := readJSON5Config(o.configFile)
		if pe := (*positionError)(nil); errors.As(err, &pe) {
			return fmt.Errorf("%s:%w", src, err) // --config FILE:3:7: ...
		}
		if err != nil {
			return fmt.Errorf("%s: %w", src, err)
		}
		known := append(cfgKeyNames(), routerFlagKeyNames()...)
		for _, e := range entries {
			if fk, ok := routerFlagKeys[e.key]; ok {
				if fk.flag != "" && changed(fk.flag) {
					continue
				}
				if err := fk.set(o, e.v); err != nil {
					return fmt.Errorf("%s: %s: %w", src, e.key, err)
				}
				continue
			}
			if !slices.Contains(known, e.key) {
				if isEmpty(e.v) {
					continue
				}
				return fmt.Errorf("%s: unknown key %q (allowed: %s)", src, e.key, strings.Join(known, ", "))
			}
			v := jsonText(e.v)
			if s, ok := e.v.(string); ok {
				v = s
			}
			fileCfg = append(fileCfg, e.key+":"+v)
		}
		// the file's own scouting, link weight and security values,
		// checked here so that a problem names the file
		file := routerOptions{cfg: fileCfg}
		if _, err := file.scouting(); err != nil {
			return fmt.Errorf("%s: %s", src, strings.TrimPrefix(err.Error(), "--cfg "))
		}
		if _, err := file.transportWeights(); err != nil {
			return fmt.Errorf("%s: %s", src, strings.TrimPrefix(err.Error(), "--cfg "))
		}
	}
	var rest []string
	for _, kv := range o.cfg {
		k, v, ok := strings.Cut(kv, ":")
		fk, isFlag := routerFlagKeys[routerKey(k)]
		if !ok || !isFlag {
			rest = append(rest, kv)
			continue
		}
		// the value as JSON5 ("abc", ["tcp/..."], 5000), else plain text
		var val any
		if err := json5.Unmarshal([]byte(strings.TrimSpace(v)), &val); err != nil {
			val = strings.TrimSpace(v)
		}
		if err := fk.set(o, val); err != nil {
			return fmt.Errorf("--cfg %s: %w", routerKey(k), err)
		}
	}
	o.cfg = append(fileCfg, rest...)
	if o.noMulticast {
		o.cfg = append(o.cfg, "scouting/multicast/enabled:false")
	}
	return nil
}
