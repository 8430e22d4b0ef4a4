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

// The zenoh-bridge-ros2dds keys of routes.* (its config.rs, 1.10; anchors.md
// §4.1): allow/deny per kind of ROS interface, pub_max_frequencies,
// pub_priorities, reliable_routes_blocking and
// transient_local_cache_multiplier, with its names and semantics, in our
// YAML (docs/bridge.md "zenoh-bridge-ros2dds keys").

// EntityKind is the kind of ROS interface an allow/deny list applies to,
// named as zenoh-bridge-ros2dds's allow/deny keys. The kind is that of the
// ROS entity discovered on DDS: a DDS publisher (its route goes DDS →
// Zenoh) is a publisher, a DDS subscriber (Zenoh → DDS) a subscriber.
type EntityKind int

const (
	KindPublisher EntityKind = iota
	KindSubscriber
	KindServiceServer
	KindServiceClient
	KindActionServer
	KindActionClient
)

// String is the kind's key in allow/deny.
func (k EntityKind) String() string {
	return [...]string{"publishers", "subscribers", "service_servers", "service_clients", "action_servers", "action_clients"}[k]
}

// NameFilter is routes.allow or routes.deny: zenoh-bridge-ros2dds's allow /
// deny block, one list of regexes (each matching the whole ROS name) per
// kind. Written as a plain list (picobridge's earlier form, and
// -a/--allow, --deny), the list applies to every kind (Flat).
type NameFilter struct {
	Publishers     []Pattern `yaml:"publishers"`
	Subscribers    []Pattern `yaml:"subscribers"`
	ServiceServers []Pattern `yaml:"service_servers"`
	ServiceClients []Pattern `yaml:"service_clients"`
	ActionServers  []Pattern `yaml:"action_servers"`
	ActionClients  []Pattern `yaml:"action_clients"`
	// Flat is the plain-list form: these patterns for every kind.
	Flat []Pattern `yaml:"-"`
}

// Set reports whether any list has an entry (an allow filter that is set
// bridges only what it names).
func (f NameFilter) Set() bool {
	if len(f.Flat) > 0 {
		return true
	}
	for k := KindPublisher; k <= KindActionClient; k++ {
		if len(f.List(k)) > 0 {
			return true
		}
	}
	return false
}

// List is the list of kind k (the flat list, if written as one).
func (f NameFilter) List(k EntityKind) []Pattern {
	if f.Flat != nil {
		return f.Flat
	}
	switch k {
	case KindPublisher:
		return f.Publishers
	case KindSubscriber:
		return f.Subscribers
	case KindServiceServer:
		return f.ServiceServers
	case KindServiceClient:
		return f.ServiceClients
	case KindActionServer:
		return f.ActionServers
	}
	return f.ActionClients
}

// Match reports whether a pattern of kind k matches the whole name.
func (f NameFilter) Match(k EntityKind, name string) bool { return anyMatch(f.List(k), name) }

// MarshalYAML prints the form it was written in (--print-config).
func (f NameFilter) MarshalYAML() (any, error) {
	if f.Flat != nil {
		return f.Flat, nil
	}
	m := map[string][]Pattern{}
	for k := KindPublisher; k <= KindActionClient; k++ {
		if l := f.List(k); len(l) > 0 {
			m[k.String()] = l
		}
	}
	if len(m) == 0 {
		return []Pattern{}, nil
	}
	return m, nil
}

// unflatten turns the plain-list form into the per-kind one.
func (f *NameFilter) unflatten() {
	if f.Flat == nil {
		return
	}
	flat := f.Flat
	*f = NameFilter{}
	for _, l := range []*[]Pattern{&f.Publishers, &f.Subscribers, &f.ServiceServers, &f.ServiceClients, &f.ActionServers, &f.ActionClients} {
		*l = append([]Pattern(nil), flat...)
	}
}

func (f NameFilter) clone() NameFilter {
	c := f
	for _, l := range []*[]Pattern{&c.Publishers, &c.Subscribers, &c.ServiceServers, &c.ServiceClients, &c.ActionServers, &c.ActionClients, &c.Flat} {
		if *l != nil {
			*l = append([]Pattern(nil), (*l)...)
		}
	}
	return c
}

// allowedBy is the rule of routes.allow and routes.deny for a name of kind
// k: a name a deny list of its kind matches is refused; with allow set, a
// name must match the allow list of its kind (a kind without a list
// bridges none of its names); neither: allowed. zenoh-bridge-ros2dds
// (config.rs Allowance) has allow or deny, never both; with both, deny
// wins here.
func allowedBy(allow, deny NameFilter, k EntityKind, name string) bool {
	if deny.Match(k, name) {
		return false
	}
	if allow.Set() {
		return allow.Match(k, name)
	}
	return true
}

// KindOfTopic is the kind a DDS topic's entity has in allow/deny: a
// publisher (pub) or subscriber, or, for an action's feedback and status
// topics (…/_action/feedback, …/_action/status), the action's server (the
// DDS publisher of them) or client, with the action's name, as
// zenoh-bridge-ros2dds groups them under the action.
func KindOfTopic(pub bool, topic string) (EntityKind, string) {
	if action, ok := ActionOf(topic); ok {
		if pub {
			return KindActionServer, action
		}
		return KindActionClient, action
	}
	if pub {
		return KindPublisher, topic
	}
	return KindSubscriber, topic
}

// KindOfService is the kind of a service name in allow/deny: a service
// server (server) or client, or for an action's services
// (…/_action/send_goal, cancel_goal, get_result) the action's server or
// client, with the action's name.
func KindOfService(server bool, name string) (EntityKind, string) {
	if action, ok := ActionOf(name); ok {
		if server {
			return KindActionServer, action
		}
		return KindActionClient, action
	}
	if server {
		return KindServiceServer, name
	}
	return KindServiceClient, name
}

// MaxFrequency is one routes.pub_max_frequencies entry, written
// "<regex>=<Hz>" (zenoh-bridge-ros2dds's pub_max_frequencies): a DDS
// publisher whose ROS name the regex matches (not anchored: anywhere in
// the name, as its Regex::is_match) is bridged to Zenoh at most Hz times
// a second.
type MaxFrequency struct {
	re  *regexp.Regexp
	src string
	Hz  float64
}

// ParseMaxFrequency reads one "<regex>=<Hz>" entry; the regex is the text
// before the last '=' and Hz a number > 0.
func ParseMaxFrequency(s string) (MaxFrequency, error) {
	re, src, v, err := splitRegexValue(s, "<regex>=<Hz>")
	if err != nil {
		return MaxFrequency{}, err
	}
	hz, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil || math.IsNaN(hz) || math.IsInf(hz, 0) || hz <= 0 {
		return MaxFrequency{}, fmt.Errorf("frequency of %q: want a number of Hz > 0, e.g. \"%s=10\" (got %q)", src, src, v)
	}
	return MaxFrequency{re: re, src: src, Hz: hz}, nil
}

// Period is the least time between two samples bridged at Hz.
func (m MaxFrequency) Period() time.Duration { return time.Duration(float64(time.Second) / m.Hz) }

// MarshalText writes the entry as it is read.
func (m MaxFrequency) MarshalText() ([]byte, error) {
	return []byte(m.src + "=" + strconv.FormatFloat(m.Hz, 'g', -1, 64)), nil
}

// Priorities of pub_priorities: Zenoh's 1 (real_time) .. 7 (background).
const (
	MinPubPriority = 1
	MaxPubPriority = 7
)

// PubPriority is one routes.pub_priorities entry, written
// "<regex>=<1..7>[:express]" (zenoh-bridge-ros2dds's pub_priorities): the
// Zenoh priority (1 real_time .. 7 background) and express flag of what a
// DDS publisher whose ROS name the regex matches (not anchored) is
// bridged with.
type PubPriority struct {
	re       *regexp.Regexp
	src      string
	Priority uint8
	Express  bool
}

// ParsePubPriority reads one "<regex>=<1..7>[:express]" entry.
func ParsePubPriority(s string) (PubPriority, error) {
	re, src, v, err := splitRegexValue(s, "<regex>=<1..7>[:express]")
	if err != nil {
		return PubPriority{}, err
	}
	p, express := strings.CutSuffix(v, ":express")
	n, err := strconv.Atoi(strings.TrimSpace(p))
	if err != nil || n < MinPubPriority || n > MaxPubPriority {
		return PubPriority{}, fmt.Errorf("priority of %q: want 1..7, optionally followed by :express (got %q; allowed: 1 real_time, 2 interactive_high, 3 interactive_low, 4 data_high, 5 data, 6 data_low, 7 background)", src, v)
	}
	return PubPriority{re: re, src: src, Priority: uint8(n), Express: express}, nil
}

// MarshalText writes the entry as it is read.
func (p PubPriority) MarshalText() ([]byte, error) {
	s := p.src + "=" + strconv.Itoa(int(p.Priority))
	if p.Express {
		s += ":express"
	}
	return []byte(s), nil
}

// splitRegexValue splits "<regex>=<value>" at the last '=' and compiles
// the regex (not anchored).
func splitRegexValue(s, form string) (*regexp.Regexp, string, string, error) {
	i := strings.LastIndex(s, "=")
	if i < 0 {
		return nil, "", "", fmt.Errorf("want %q (got %q)", form, s)
	}
	re, err := regexp.Compile(s[:i])
	if err != nil {
		msg := err.Error()
		var se *syntax.Error
		if errors.As(err, &se) {
			msg = string(se.Code)
		}
		return nil, "", "", fmt.Errorf("bad regular expression %q: %s", s[:i], msg)
	}
	return re, s[:i], s[i+1:], nil
}

// DefaultTransientLocalCacheMultiplier is zenoh-bridge-ros2dds's
// transient_local_cache_multiplier default.
const DefaultTransientLocalCacheMultiplier = 10

// MaxTransientLocalCacheMultiplier bounds routes.transient_local_cache_multiplier
// (a route's cache holds depth × multiplier samples).
const MaxTransientLocalCacheMultiplier = 10000

// validateRoutes adds the problems of the routes.* keys of
// zenoh-bridge-ros2dds through at.
func (c *Config) validateRoutes(at func(key, format string, args ...any)) {
	r := &c.Routes
	if m := r.TransientLocalCacheMultiplier; m < 1 || m > MaxTransientLocalCacheMultiplier {
		at("routes.transient_local_cache_multiplier", "must be in 1..%d (got %d; zenoh-bridge-ros2dds default: %d)", MaxTransientLocalCacheMultiplier, m, DefaultTransientLocalCacheMultiplier)
	}
	// Service kinds in two places would leave the reader to guess which wins.
	for _, f := range []struct {
		name     string
		routes   NameFilter
		services ServiceFilter
	}{{"allow", r.Allow, c.Services.Allow}, {"deny", r.Deny, c.Services.Deny}} {
		if f.routes.Flat != nil || !f.services.set() {
			continue
		}
		for _, k := range []EntityKind{KindServiceServer, KindServiceClient, KindActionServer, KindActionClient} {
			if len(f.routes.List(k)) > 0 {
				at("routes."+f.name+"."+k.String(), "set in services.%s too: give the service and action kinds in one place (routes.%s, zenoh-bridge-ros2dds's layout; or services.%s)", f.name, f.name, f.name)
			}
		}
	}
}

// MaxFrequencyOf is the pub_max_frequencies entry of a DDS publisher's ROS
// name: the first whose regex matches it; ok false when none does.
func (r RoutesConfig) MaxFrequencyOf(topic string) (MaxFrequency, bool) {
	for _, m := range r.PubMaxFrequencies {
		if m.re.MatchString(topic) {
			return m, true
		}
	}
	return MaxFrequency{}, false
}

// PriorityOf is the pub_priorities entry of a DDS publisher's ROS name: the
// first whose regex matches it; ok false when none does.
func (r RoutesConfig) PriorityOf(topic string) (PubPriority, bool) {
	for _, p := range r.PubPriorities {
		if p.re.MatchString(topic) {
			return p, true
		}
	}
	return PubPriority{}, false
}
