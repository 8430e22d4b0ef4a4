package bridge

import (
	"strconv"
	"strings"
)

// Route is one bridged ROS topic: its Zenoh key and its criticality.
type Route struct {
	Topic       string      `json:"topic"`     // ROS name, "/scan"
	Type        string      `json:"type"`      // ROS type, "sensor_msgs/msg/LaserScan"
	TypeHash    string      `json:"type_hash"` // "RIHS01_<hex>" or empty
	Key         string      `json:"key"`       // Zenoh key expression
	Criticality Criticality `json:"criticality"`
	// Priority and Express are the route's pub_priorities entry (Zenoh
	// priority 1..7 and express flag of what it publishes to Zenoh); 0:
	// none matched (critical routes go at 1 real_time with express, others
	// at 5 data).
	Priority uint8 `json:"priority,omitempty"`
	Express  bool  `json:"express,omitempty"`
}

// CriticalPubPriority is the lowest pub_priorities priority (numerically the
// highest) that makes a route critical (1 real_time, 2 interactive_high):
// those go on the devices' express lane, as does any :express entry.
const CriticalPubPriority = 2

// Routes decides which ROS topics are bridged and how (routes.* of the
// configuration). It is immutable and safe for concurrent use.
type Routes struct {
	cfg       RoutesConfig
	namespace string
	domain    int
}

// NewRoutes builds the route table of c.
func NewRoutes(c *Config) *Routes {
	return &Routes{cfg: c.Routes, namespace: c.DDS.Namespace, domain: c.DDS.Domain}
}

// Allowed reports whether a topic passes allow/deny as a publisher or as a
// subscriber (AllowedKind).
func (r *Routes) Allowed(topic string) bool {
	return r.AllowedTopic(true, topic) || r.AllowedTopic(false, topic)
}

// AllowedKind reports whether a ROS name of kind k passes routes.allow and
// routes.deny: refused when a deny list of its kind matches; with allow
// set, only when the allow list of its kind matches (a kind without a
// list: none); else allowed (NameFilter, zenoh-bridge-ros2dds Allowance).
func (r *Routes) AllowedKind(k EntityKind, name string) bool {
	return allowedBy(r.cfg.Allow, r.cfg.Deny, k, name)
}

// AllowedTopic is AllowedKind for a DDS publisher (pub) or subscriber of
// topic (KindOfTopic: an action's feedback and status are the action's).
func (r *Routes) AllowedTopic(pub bool, topic string) bool {
	k, name := KindOfTopic(pub, topic)
	return r.AllowedKind(k, name)
}

// AllowedService is AllowedKind for a service server (server) or client
// (KindOfService: an action's services are the action's).
func (r *Routes) AllowedService(server bool, name string) bool {
	k, n := KindOfService(server, name)
	return r.AllowedKind(k, n)
}

// AllowSet reports whether routes.allow names anything (then only what it
// names is bridged, even without auto_bridge).
func (r *Routes) AllowSet() bool { return r.cfg.Allow.Set() }

// AutoBridge reports whether discovered topics are bridged without being named.
func (r *Routes) AutoBridge() bool { return r.cfg.AutoBridge }

// CriticalityOf is critical when a routes.critical pattern matches the
// name, or when its pub_priorities entry is :express or has a priority ≤
// CriticalPubPriority; noncritical when its pub_priorities entry is
// neither; else routes.default_criticality.
func (r *Routes) CriticalityOf(topic string) Criticality {
	for _, p := range r.cfg.Critical {
		if p.Match(topic) {
			return Critical
		}
	}
	if p, ok := r.cfg.PriorityOf(topic); ok {
		if p.Express || p.Priority <= CriticalPubPriority {
			return Critical
		}
		return Noncritical
	}
	return r.cfg.DefaultCriticality
}

// Resolve returns the route of a discovered topic, ok false when allow/deny
// refuse it both as a publisher and as a subscriber.
func (r *Routes) Resolve(topic, rosType, typeHash string) (Route, bool) {
	if !r.Allowed(topic) {
		return Route{}, false
	}
	rt := Route{Topic: topic, Type: rosType, TypeHash: typeHash,
		Key: r.KeyOf(topic, rosType, typeHash), Criticality: r.CriticalityOf(topic)}
	if p, ok := r.cfg.PriorityOf(topic); ok {
		rt.Priority, rt.Express = p.Priority, p.Express
	}
	return rt, true
}

// MaxFrequency is the pub_max_frequencies cap of a DDS publisher's topic;
// ok false: none.
func (r *Routes) MaxFrequency(topic string) (MaxFrequency, bool) {
	return r.cfg.MaxFrequencyOf(topic)
}

// ReliableBlocking reports routes.reliable_routes_blocking.
func (r *Routes) ReliableBlocking() bool { return r.cfg.ReliableRoutesBlocking }

// TransientLocalCacheMultiplier is routes.transient_local_cache_multiplier
// (at least 1).
func (r *Routes) TransientLocalCacheMultiplier() int {
	return max(r.cfg.TransientLocalCacheMultiplier, 1)
}

// KeyOf maps a ROS topic to its Zenoh key expression:
//
//   - plain (zenoh-bridge-ros2dds): <namespace>/<topic> without leading or
//     trailing slash: "/scan" → "scan"; with namespace "/bot1", "bot1/scan".
//   - rmw_zenoh: <domain>/<topic without leading and trailing slash>/<DDS
//     type>/<type hash>: "/scan", sensor_msgs/msg/LaserScan, RIHS01_ab… →
//     "0/scan/sensor_msgs::msg::dds_::LaserScan_/RIHS01_ab…"; an empty hash is
//     written TypeHashNotSupported (rmw_zenoh on Humble).
func (r *Routes) KeyOf(topic, rosType, typeHash string) string {
	t := strings.Trim(topic, "/")
	if r.cfg.KeyStyle == KeyRmwZenoh {
		if typeHash == "" {
			typeHash = "TypeHashNotSupported"
		}
		return strconv.Itoa(r.domain) + "/" + t + "/" + DDSTypeName(rosType) + "/" + typeHash
	}
	if ns := strings.Trim(r.namespace, "/"); ns != "" {
		return ns + "/" + t
	}
	return t
}

// TopicOf maps a plain-style key back to its ROS topic (for what devices
// publish toward DDS); ok is false for a key outside the namespace.
func (r *Routes) TopicOf(key string) (string, bool) {
	if r.cfg.KeyStyle == KeyRmwZenoh {
		parts := strings.Split(key, "/")
		if len(parts) < 4 || parts[0] != strconv.Itoa(r.domain) {
			return "", false
		}
		return "/" + strings.Join(parts[1:len(parts)-2], "/"), true
	}
	if ns := strings.Trim(r.namespace, "/"); ns != "" {
		rest, ok := strings.CutPrefix(key, ns+"/")
		if !ok {
			return "", false
		}
		key = rest
	}
	if key == "" {
		return "", false
	}
	return "/" + key, true
}

// DDSTypeName mangles a ROS type for DDS: "sensor_msgs/msg/LaserScan" →
// "sensor_msgs::msg::dds_::LaserScan_". A name that is not pkg/kind/Name is
// returned as it is.
func DDSTypeName(rosType string) string {
	parts := strings.Split(rosType, "/")
	if len(parts) != 3 {
		return rosType
	}
	return parts[0] + "::" + parts[1] + "::dds_::" + parts[2] + "_"
}

// KeyIncludes reports whether the key expression sub includes the concrete
// key (no wildcards in key): chunks are compared one by one, `*` matches one
// chunk, `**` zero or more, and a chunk starting with @ only matches itself
// (Zenoh 1.x verbatim chunks). The lead may replace it with
// zenohpath/keyexpr through Options.KeyIncludes.
func KeyIncludes(sub, key string) bool {
	return includes(strings.Split(sub, "/"), strings.Split(key, "/"))
}

func includes(sub, key []string) bool {
	for len(sub) > 0 {
		switch sub[0] {
		case "**":
			rest := sub[1:]
			for i := 0; i <= len(key); i++ {
				if i > 0 && strings.HasPrefix(key[i-1], "@") {
					return false
				}
				if includes(rest, key[i:]) {
					return true
				}
			}
			return false
		case "*":
			if len(key) == 0 || strings.HasPrefix(key[0], "@") {
				return false
			}
		default:
			if len(key) == 0 || !chunkIncludes(sub[0], key[0]) {
				return false
			}
		}
		sub, key = sub[1:], key[1:]
	}
	return len(key) == 0
}

// chunkIncludes handles a literal chunk, with `$*` matching any run of
// characters inside a chunk.
func chunkIncludes(pat, s string) bool {
	if !strings.Contains(pat, "$*") {
		return pat == s
	}
	parts := strings.Split(pat, "$*")
	if !strings.HasPrefix(s, parts[0]) {
		return false
	}
	s = s[len(parts[0]):]
	for i, p := range parts[1:] {
		if i == len(parts)-2 {
			return strings.HasSuffix(s, p)
		}
		j := strings.Index(s, p)
		if j < 0 {
			return false
		}
		s = s[j+len(p):]
	}
	return true
}
