package bridge

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"regexp/syntax"
	"strconv"
	"strings"
	"time"
)

// ServicesConfig is how ROS 2 services and actions are bridged
// (docs/services.md). Timeouts follow zenoh-bridge-ros2dds's
// queries_timeout (its DEFAULT_CONFIG.json5), with durations instead of
// float seconds (bare numbers are read as seconds too), each value one
// duration for every name or a list of "<regex>=<duration>" entries;
// Allow and Deny are its allow/deny for service and action servers and
// clients (ros2-services.md §3.6).
type ServicesConfig struct {
	// Enabled bridges services and actions (both ways); false: topics only.
	Enabled bool `yaml:"enabled"`
	// QueriesTimeout bounds each call bridged in either direction.
	QueriesTimeout QueriesTimeout `yaml:"queries_timeout"`
	// MaxPending bounds the calls in flight per service and direction;
	// beyond it a call is refused (reason too_many_pending).
	MaxPending int `yaml:"max_pending"`
	// Allow and Deny filter services and actions by kind (exclusive, as in
	// zenoh-bridge-ros2dds); the routes.allow/deny of topics apply too.
	Allow ServiceFilter `yaml:"allow"`
	Deny  ServiceFilter `yaml:"deny"`
}

// ServiceFilter lists regexes (full match, like routes.allow) on ROS names
// per kind, zenoh-bridge-ros2dds's allow/deny lists for services and
// actions. The kind is the one of the DDS entity the gateway bridges:
// service_servers for a DDS server it offers to Zenoh (or the DDS client
// endpoints it makes for an rmw_zenoh client's SC token), service_clients
// for DDS clients it serves from Zenoh (or for an SS token); an action's
// services (…/_action/send_goal, cancel_goal, get_result) are checked with
// action_servers / action_clients against the action's name.
type ServiceFilter struct {
	ServiceServers []Pattern `yaml:"service_servers"`
	ServiceClients []Pattern `yaml:"service_clients"`
	ActionServers  []Pattern `yaml:"action_servers"`
	ActionClients  []Pattern `yaml:"action_clients"`
}

func (f ServiceFilter) set() bool {
	return len(f.ServiceServers)+len(f.ServiceClients)+len(f.ActionServers)+len(f.ActionClients) > 0
}

func (f ServiceFilter) list(server, action bool) []Pattern {
	switch {
	case server && action:
		return f.ActionServers
	case server:
		return f.ServiceServers
	case action:
		return f.ActionClients
	}
	return f.ServiceClients
}

func anyMatch(ps []Pattern, name string) bool {
	for _, p := range ps {
		if p.Match(name) {
			return true
		}
	}
	return false
}

// ActionOf is the action name of one of its services ("/fib" for
// "/fib/_action/send_goal"); ok is false for a plain service.
func ActionOf(service string) (action string, ok bool) {
	i := strings.LastIndex(service, "/_action/")
	if i <= 0 {
		return "", false
	}
	return service[:i], true
}

// Allowed reports whether the service name may be bridged as a server
// (server true: a DDS service server offered to Zenoh) or as a client (a
// Zenoh service served to DDS clients). Rules (zenoh-bridge-ros2dds
// config.rs): with Allow set, a name must match the list of its kind (an
// empty list allows none of that kind); with Deny set, a name matching the
// list of its kind is refused (an empty list refuses none); neither set:
// everything.
func (s ServicesConfig) Allowed(server bool, name string) bool {
	action, isAction := ActionOf(name)
	if isAction {
		name = action
	}
	switch {
	case s.Allow.set():
		return anyMatch(s.Allow.list(server, isAction), name)
	case s.Deny.set():
		return !anyMatch(s.Deny.list(server, isAction), name)
	}
	return true
}

// QueriesTimeout are the per-kind call timeouts; a kind left 0 (or whose
// list has no entry matching the name) takes Default.
type QueriesTimeout struct {
	Default  time.Duration  `yaml:"default"`
	Services Timeout        `yaml:"services"`
	Actions  ActionTimeouts `yaml:"actions"`
	// TransientLocal bounds a late joiner's history query
	// (zenoh-bridge-ros2dds: transient_local_subscribers).
	TransientLocal Timeout `yaml:"transient_local"`
}

// ActionTimeouts are the timeouts of an action's three services.
type ActionTimeouts struct {
	SendGoal   Timeout `yaml:"send_goal"`
	CancelGoal Timeout `yaml:"cancel_goal"`
	GetResult  Timeout `yaml:"get_result"`
}

// Timeout is one queries_timeout value: a duration for every name (All; 0:
// the default), or per-name entries written "<regex>=<duration>" (regex
// not anchored, first match wins, as zenoh-bridge-ros2dds; the duration
// may be a bare number of seconds, "1.0", as in its json5).
type Timeout struct {
	All   time.Duration
	Names []NameTimeout
}

// NameTimeout is one "<regex>=<duration>" entry of a Timeout list.
type NameTimeout struct {
	re  *regexp.Regexp
	src string
	D   time.Duration
}

// Secs is a Timeout of d for every name.
func Secs(d time.Duration) Timeout { return Timeout{All: d} }

// ParseNameTimeout reads one "<regex>=<duration>" entry; the regex is the
// text before the last '='. Errors say what is wrong.
func ParseNameTimeout(s string) (NameTimeout, error) {
	i := strings.LastIndex(s, "=")
	if i < 0 {
		return NameTimeout{}, fmt.Errorf("want \"<regex>=<duration>\" (got %q)", s)
	}
	re, err := regexp.Compile(s[:i])
	if err != nil {
		msg := err.Error()
		var se *syntax.Error
		if errors.As(err, &se) {
			msg = string(se.Code)
		}
		return NameTimeout{}, fmt.Errorf("bad regular expression %q: %s", s[:i], msg)
	}
	d, err := parseTimeoutValue(s[i+1:])
	if err != nil {
		return NameTimeout{}, err
	}
	if d <= 0 {
		return NameTimeout{}, fmt.Errorf("timeout of %q must be > 0 (got %v)", s[:i], d)
	}
	return NameTimeout{re: re, src: s[:i], D: d}, nil
}

// parseTimeoutValue reads a duration with a unit or a number of seconds.
func parseTimeoutValue(v string) (time.Duration, error) {
	v = strings.TrimSpace(v)
	if d, err := time.ParseDuration(v); err == nil {
		return d, nil
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(f) > float64(math.MaxInt64/int64(time.Second)) {
		return 0, fmt.Errorf("cannot parse %q as a duration (want a number with a unit: ms, s, m, h; or seconds: 1.5)", v)
	}
	return time.Duration(f * float64(time.Second)), nil
}

// For is the timeout of name: the first entry whose regex matches, else
// All; ok is false when neither gives one (then the caller's default).
func (t Timeout) For(name string) (time.Duration, bool) {
	for _, e := range t.Names {
		if e.re.MatchString(name) {
			return e.D, true
		}
	}
	return t.All, t.All > 0
}

// String shows the value as written ("1s" or "[.*/x=1s .*/y=2s]").
func (t Timeout) String() string {
	if len(t.Names) == 0 {
		return t.All.String()
	}
	parts := make([]string, len(t.Names))
	for i, e := range t.Names {
		parts[i] = e.src + "=" + e.D.String()
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// MarshalText writes String.
func (t Timeout) MarshalText() ([]byte, error) { return []byte(t.String()), nil }

// MaxServicePending is the largest services.max_pending.
const MaxServicePending = 65536

// TimeoutFor is the call timeout of a service by its ROS name:
// …/_action/send_goal, …/_action/cancel_goal and …/_action/get_result get
// the action timeouts, other names the services timeout; unset (0) values
// fall back to Default.
//
// A list entry's regex is matched against the service name for services and
// against the action name for an action's services ("/fib" for
// "/fib/_action/get_result"), as zenoh-bridge-ros2dds does.
func (q QueriesTimeout) TimeoutFor(name string) time.Duration {
	t, subject := q.Services, name
	if action, ok := ActionOf(name); ok {
		switch name[len(action):] {
		case "/_action/send_goal":
			t, subject = q.Actions.SendGoal, action
		case "/_action/cancel_goal":
			t, subject = q.Actions.CancelGoal, action
		case "/_action/get_result":
			t, subject = q.Actions.GetResult, action
		}
	}
	if d, ok := t.For(subject); ok {
		return d
	}
	return q.Default
}

// HistoryTimeout is the timeout of a late joiner's history query on topic.
func (q QueriesTimeout) HistoryTimeout(topic string) time.Duration {
	if d, ok := q.TransientLocal.For(topic); ok {
		return d
	}
	return q.Default
}

// validateServices adds the problems of c.Services through at.
func (c *Config) validateServices(at func(key, format string, args ...any)) {
	s := &c.Services
	if s.QueriesTimeout.Default <= 0 {
		at("services.queries_timeout.default", "must be > 0 (got %v; zenoh-bridge-ros2dds: 5s)", s.QueriesTimeout.Default)
	}
	for _, d := range []struct {
		key string
		v   time.Duration
	}{
		{"services.queries_timeout.services", s.QueriesTimeout.Services.All},
		{"services.queries_timeout.actions.send_goal", s.QueriesTimeout.Actions.SendGoal.All},
		{"services.queries_timeout.actions.cancel_goal", s.QueriesTimeout.Actions.CancelGoal.All},
		{"services.queries_timeout.actions.get_result", s.QueriesTimeout.Actions.GetResult.All},
		{"services.queries_timeout.transient_local", s.QueriesTimeout.TransientLocal.All},
	} {
		if d.v < 0 {
			at(d.key, "must be ≥ 0 (got %v; 0: queries_timeout.default)", d.v)
		}
	}
	if s.Allow.set() && s.Deny.set() {
		at("services.deny", "services.allow and services.deny are exclusive (zenoh-bridge-ros2dds): set one (allowed keys in each: service_servers, service_clients, action_servers, action_clients)")
	}
	if s.MaxPending < 1 || s.MaxPending > MaxServicePending {
		at("services.max_pending", "must be in 1..%d calls (got %d)", MaxServicePending, s.MaxPending)
	}
}

// String shows the timeouts for logs.
func (q QueriesTimeout) String() string {
	return fmt.Sprintf("default=%v services=%v send_goal=%v cancel_goal=%v get_result=%v transient_local=%v",
		q.Default, q.Services, q.Actions.SendGoal, q.Actions.CancelGoal,
		q.Actions.GetResult, q.TransientLocal)
}
