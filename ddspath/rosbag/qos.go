package rosbag

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// History is the rmw history policy (rmw/types.h rmw_qos_history_policy_e).
type History int

// History policies.
const (
	HistorySystemDefault History = 0
	HistoryKeepLast      History = 1
	HistoryKeepAll       History = 2
	HistoryUnknown       History = 3
)

// Reliability is the rmw reliability policy.
type Reliability int

// Reliability policies.
const (
	ReliabilitySystemDefault Reliability = 0
	ReliabilityReliable      Reliability = 1
	ReliabilityBestEffort    Reliability = 2
	ReliabilityUnknown       Reliability = 3
	ReliabilityBestAvailable Reliability = 4
)

// Durability is the rmw durability policy.
type Durability int

// Durability policies.
const (
	DurabilitySystemDefault  Durability = 0
	DurabilityTransientLocal Durability = 1
	DurabilityVolatile       Durability = 2
	DurabilityUnknown        Durability = 3
	DurabilityBestAvailable  Durability = 4
)

// Liveliness is the rmw liveliness policy.
type Liveliness int

// Liveliness policies.
const (
	LivelinessSystemDefault Liveliness = 0
	LivelinessAutomatic     Liveliness = 1
	LivelinessManualByNode  Liveliness = 2 // deprecated in ROS 2
	LivelinessManualByTopic Liveliness = 3
	LivelinessUnknown       Liveliness = 4
	LivelinessBestAvailable Liveliness = 5
)

var (
	historyNames     = []string{"system_default", "keep_last", "keep_all", "unknown"}
	reliabilityNames = []string{"system_default", "reliable", "best_effort", "unknown", "best_available"}
	durabilityNames  = []string{"system_default", "transient_local", "volatile", "unknown", "best_available"}
	livelinessNames  = []string{"system_default", "automatic", "manual_by_node", "manual_by_topic", "unknown", "best_available"}
)

func enumString(names []string, v int) string {
	if v >= 0 && v < len(names) {
		return names[v]
	}
	return strconv.Itoa(v)
}

// unmarshalEnum accepts the numeric form of Humble bags ("reliability: 1") and the named
// form of Jazzy and newer ("reliability: reliable").
func unmarshalEnum(n *yaml.Node, names []string, what string) (int, error) {
	if v, err := strconv.Atoi(n.Value); err == nil {
		if v < 0 || v >= len(names) {
			return 0, fmt.Errorf("line %d: %s %d out of range 0..%d", n.Line, what, v, len(names)-1)
		}
		return v, nil
	}
	for i, name := range names {
		if strings.EqualFold(n.Value, name) {
			return i, nil
		}
	}
	return 0, fmt.Errorf("line %d: unknown %s %q (want one of %s)", n.Line, what, n.Value, strings.Join(names, ", "))
}

func (h History) String() string     { return enumString(historyNames, int(h)) }
func (r Reliability) String() string { return enumString(reliabilityNames, int(r)) }
func (d Durability) String() string  { return enumString(durabilityNames, int(d)) }
func (l Liveliness) String() string  { return enumString(livelinessNames, int(l)) }

// UnmarshalYAML accepts a number or a policy name.
func (h *History) UnmarshalYAML(n *yaml.Node) error {
	v, err := unmarshalEnum(n, historyNames, "history")
	*h = History(v)
	return err
}

// UnmarshalYAML accepts a number or a policy name.
func (r *Reliability) UnmarshalYAML(n *yaml.Node) error {
	v, err := unmarshalEnum(n, reliabilityNames, "reliability")
	*r = Reliability(v)
	return err
}

// UnmarshalYAML accepts a number or a policy name.
func (d *Durability) UnmarshalYAML(n *yaml.Node) error {
	v, err := unmarshalEnum(n, durabilityNames, "durability")
	*d = Durability(v)
	return err
}

// UnmarshalYAML accepts a number or a policy name.
func (l *Liveliness) UnmarshalYAML(n *yaml.Node) error {
	v, err := unmarshalEnum(n, livelinessNames, "liveliness")
	*l = Liveliness(v)
	return err
}

// Duration is an rmw_time_t: seconds and nanoseconds. {0, 0} means "unspecified / use the
// default"; {9223372036, 854775807} (INT64_MAX ns) is RMW_DURATION_INFINITE.
type Duration struct {
	Sec  int64 `yaml:"sec"`
	Nsec int64 `yaml:"nsec"`
}

// IsInfinite reports whether d is RMW_DURATION_INFINITE (or longer), or the
// {INT32_MAX, UINT32_MAX} form that some newer recorders write for an infinite duration.
func (d Duration) IsInfinite() bool {
	const infSec, infNsec = math.MaxInt64 / int64(time.Second), math.MaxInt64 % int64(time.Second)
	if d.Sec == math.MaxInt32 && d.Nsec == math.MaxUint32 {
		return true
	}
	return d.Sec > infSec || (d.Sec == infSec && d.Nsec >= infNsec)
}

// Std converts to a time.Duration; infinite and out-of-range values give math.MaxInt64.
func (d Duration) Std() time.Duration {
	if d.IsInfinite() || d.Sec < 0 || d.Nsec < 0 {
		return math.MaxInt64
	}
	return time.Duration(d.Sec)*time.Second + time.Duration(d.Nsec)
}

func (d Duration) String() string {
	if d.IsInfinite() {
		return "infinite"
	}
	if d.Sec == 0 && d.Nsec == 0 {
		return "default"
	}
	return d.Std().String()
}

// QoSProfile is one entry of a topic's offered_qos_profiles: the QoS of one publisher seen
// by the recorder.
type QoSProfile struct {
	History                      History     `yaml:"history"`
	Depth                        int         `yaml:"depth"`
	Reliability                  Reliability `yaml:"reliability"`
	Durability                   Durability  `yaml:"durability"`
	Deadline                     Duration    `yaml:"deadline"`
	Lifespan                     Duration    `yaml:"lifespan"`
	Liveliness                   Liveliness  `yaml:"liveliness"`
	LivelinessLeaseDuration      Duration    `yaml:"liveliness_lease_duration"`
	AvoidROSNamespaceConventions bool        `yaml:"avoid_ros_namespace_conventions"`
}

// String gives a compact one-line form, e.g. "reliable volatile keep_last(10)"; a history
// other than keep_last/keep_all is labelled, e.g. "reliable volatile history=unknown(3)".
func (q QoSProfile) String() string {
	h := q.History.String()
	switch q.History {
	case HistoryKeepLast:
		h += "(" + strconv.Itoa(q.Depth) + ")"
	case HistoryKeepAll:
	default:
		// Labelled: a bare "unknown" after the durability reads as a third durability word.
		h = "history=" + h + "(" + strconv.Itoa(int(q.History)) + ")"
	}
	s := q.Reliability.String() + " " + q.Durability.String() + " " + h
	if !q.Deadline.IsInfinite() && q.Deadline != (Duration{}) {
		s += " deadline=" + q.Deadline.String()
	}
	if !q.Lifespan.IsInfinite() && q.Lifespan != (Duration{}) {
		s += " lifespan=" + q.Lifespan.String()
	}
	return s
}

// ParseQoSProfiles parses the offered_qos_profiles text of a topic: a YAML sequence of
// profiles (numeric enums in Humble, names in Jazzy and newer). An empty text gives nil.
func ParseQoSProfiles(text string) ([]QoSProfile, error) {
	if strings.TrimSpace(text) == "" {
		return nil, nil
	}
	var out []QoSProfile
	if err := yaml.Unmarshal([]byte(text), &out); err != nil {
		return nil, fmt.Errorf("offered_qos_profiles: %w", err)
	}
	return out, nil
}
