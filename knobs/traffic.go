package knobs

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2/unstable"
)

// Direction says who publishes a topic, seen from the device.
type Direction int

const (
	// Pub: the device publishes (device TX, the subject of the TX tuning tree).
	Pub Direction = iota + 1
	// Sub: the device subscribes (gateway → device, checked against Capacity).
	Sub
)

func (d Direction) String() string {
	if d == Sub {
		return "sub"
	}
	return "pub"
}

// Topic is one topic of a device's traffic.
type Topic struct {
	Name          string
	Direction     Direction
	RateHz        float64       // samples per second
	SizeBytes     int           // serialized sample size (CDR payload)
	LatencyBudget time.Duration // end-to-end budget the application accepts
	Line          int           // line of its [[topic]] header
}

// Traffic is a device's traffic description (a TOML file):
//
//	[[topic]]
//	name = "/imu"
//	direction = "pub"        # pub: the device publishes; sub: it subscribes
//	rate_hz = 100
//	size_bytes = 324
//	latency_budget_ms = 100
//
// A gateway builds the same description from what it offers a connected
// device (bridge.Device.ObservedTraffic, `knobs advise --gateway`); then
// File names the gateway and the device, and Observed carries what only a
// running gateway sees.
type Traffic struct {
	File        string
	Description string
	Topics      []Topic
	// Observed is nil for a traffic file.
	Observed *Observed
	// FlushInterval is the cadence of the gateway's batched lane toward the
	// device (bridge policy.batched.flush_interval): a subscribed topic at
	// rate r bursts r × FlushInterval samples per flush into its ring. 0:
	// DefaultGatewayFlush.
	FlushInterval time.Duration
}

// DefaultGatewayFlush is the batched lane's cadence when a traffic file
// does not come from a gateway: 50 ms, the bridge's default
// policy.batched.flush_interval (the same 50 ms zenoh-pico and nano-ros use
// for their own TX flush, "a good default for telemetry", tx-tuning.md).
const DefaultGatewayFlush = 50 * time.Millisecond

// GatewayFlush is FlushInterval, or DefaultGatewayFlush when unset.
func (t *Traffic) GatewayFlush() time.Duration {
	if t == nil || t.FlushInterval <= 0 {
		return DefaultGatewayFlush
	}
	return t.FlushInterval
}

// Observed is what a gateway measured beyond the topics' rates and sizes.
// Advise turns it into notes; the recommended settings come from Topics
// alone, so a traffic file with the same topics gets the same settings.
type Observed struct {
	// Window is how long the gateway has metered the device; RateTau the
	// time constant of its weighted rates.
	Window, RateTau time.Duration
	// Dropped counts samples the gateway did not forward to the device, by
	// reason (the bridge's labels: oversize, ring_budget, rate_limit, stale,
	// queue_full, congestion, suspended, link_budget, closed); zero reasons left out.
	Dropped map[string]uint64
	// Flushes counts the batched lane's flushes; FullFlushes those in which
	// one subscription got RingDepth samples (the ring budget was full).
	Flushes, FullFlushes uint64
	// FlushOccupancy is the recent mean of the fullest subscription's
	// samples per flush over RingDepth (0..1).
	FlushOccupancy float64
	RingDepth      int
	// Unmetered counts samples of subscriptions beyond the gateway's per-device
	// key limit (bridge.MaxTrafficKeys), which have no topic of their own.
	Unmetered uint64
}

var topicKeys = []string{"name", "direction", "rate_hz", "size_bytes", "latency_budget_ms"}

// ParseTraffic parses a traffic file; every problem is reported at once with
// file, line and column.
func ParseTraffic(file string, data []byte) (*Traffic, error) {
	doc, err := parseTOML(file, data)
	if err != nil {
		return nil, err
	}
	t := &Traffic{File: file}
	var ps problems
	index := map[string]int{}
	var badTables []string
	for _, tb := range doc.tables {
		if i := strings.IndexByte(tb.path, '['); i > 0 && tb.path[:i] == "topic" && !strings.Contains(tb.path, "].") {
			index[tb.path] = len(t.Topics)
			t.Topics = append(t.Topics, Topic{Line: tb.line})
			continue
		}
		badTables = append(badTables, tb.path+".")
		ps.add(file, tb.line, tb.col, tb.path, ErrUnknownKey, "unknown table (a traffic file has description and [[topic]] tables)")
	}
	// Problems name a topic by its name (one convention for every message:
	// the file's line, then `topic "/imu"`), or by its header line before
	// the name is known.
	for _, e := range doc.entries {
		if tbl, key, ok := strings.Cut(e.path, "]."); ok && key == "name" && e.kind == unstable.String && strings.TrimSpace(e.str) != "" {
			if i, ok := index[tbl+"]"]; ok {
				t.Topics[i].Name = e.str
			}
		}
	}
	label := func(i int) string {
		if n := t.Topics[i].Name; n != "" {
			return "topic " + strconv.Quote(n)
		}
		return "topic at line " + strconv.Itoa(t.Topics[i].Line)
	}
	seen := map[int]map[string]bool{}
	for _, e := range doc.entries {
		if slices.ContainsFunc(badTables, func(t string) bool { return strings.HasPrefix(e.path, t) }) {
			continue // reported once, at its table
		}
		if e.path == "description" {
			if e.kind != unstable.String {
				ps.add(file, e.line, e.col, e.path, ErrType, "want a string, got %s", typeName(e.kind))
			}
			t.Description = e.str
			continue
		}
		tbl, key, _ := strings.Cut(e.path, "].")
		i, ok := index[tbl+"]"]
		if !ok || !strings.HasPrefix(e.path, "topic[") {
			ps.add(file, e.line, e.col, e.path, ErrUnknownKey, "unknown key (a traffic file has description and [[topic]] tables)")
			continue
		}
		tp := &t.Topics[i]
		path := label(i) + "." + key
		if seen[i] == nil {
			seen[i] = map[string]bool{}
		}
		seen[i][key] = true
		switch key {
		case "name":
			if e.kind != unstable.String || strings.TrimSpace(e.str) == "" {
				ps.add(file, e.line, e.col, path, ErrType, "want a non-empty string")
				continue
			}
			tp.Name = e.str
		case "direction":
			switch {
			case e.kind == unstable.String && e.str == "pub":
				tp.Direction = Pub
			case e.kind == unstable.String && e.str == "sub":
				tp.Direction = Sub
			default:
				ps.add(file, e.line, e.col, path, ErrType, "want \"pub\" (the device publishes) or \"sub\" (the device subscribes)")
			}
		case "rate_hz":
			var v float64
			switch e.kind {
			case unstable.Integer:
				v = float64(e.integer)
			case unstable.Float:
				v = e.float
			default:
				ps.add(file, e.line, e.col, path, ErrType, "want a number (Hz), got %s", typeName(e.kind))
				continue
			}
			if !(v > 0 && v <= 1e6) || math.IsNaN(v) {
				ps.add(file, e.line, e.col, path, ErrRange, "must be in (0, 1000000] Hz (got %g)", v)
				continue
			}
			tp.RateHz = v
		case "size_bytes", "latency_budget_ms":
			if e.kind != unstable.Integer {
				ps.add(file, e.line, e.col, path, ErrType, "want an integer, got %s", typeName(e.kind))
				continue
			}
			lo, hi := int64(1), int64(maxInt32)
			if key == "latency_budget_ms" {
				hi = 3600000
			}
			if e.intErr != nil || e.integer < lo || e.integer > hi {
				ps.add(file, e.line, e.col, path, ErrRange, "must be in %d..%d (got %d)", lo, hi, e.integer)
				continue
			}
			if key == "size_bytes" {
				if most := registry[byID[FragMaxSize]].Max - rxMessageOverhead; e.integer > most {
					ps.add(file, e.line, e.col, path, ErrRange, "%d B is more than any device can take: the largest message is %s ≤ %d B (%d B with the %d B PUSH overhead)",
						e.integer, FragMaxSize, registry[byID[FragMaxSize]].Max, most, rxMessageOverhead)
					continue
				}
				tp.SizeBytes = int(e.integer)
			} else {
				tp.LatencyBudget = ms(e.integer)
			}
		default:
			ps.add(file, e.line, e.col, path, ErrUnknownKey, "unknown key (a topic has %s)", strings.Join(topicKeys, ", "))
		}
	}
	names := map[string]bool{}
	for i, tp := range t.Topics {
		for _, k := range topicKeys {
			if !seen[i][k] {
				ps.add(file, tp.Line, 0, label(i), ErrProfile, "missing %s", k)
			}
		}
		id := tp.Name + " " + tp.Direction.String()
		if tp.Name != "" && names[id] {
			ps.add(file, tp.Line, 0, label(i), ErrProfile, "listed twice (%s)", tp.Direction)
		}
		names[id] = true
	}
	if len(t.Topics) == 0 && len(ps) == 0 {
		ps.add(file, 0, 0, "topic", ErrProfile, "no [[topic]] tables")
	}
	if err := ps.err(); err != nil {
		return nil, err
	}
	return t, nil
}
