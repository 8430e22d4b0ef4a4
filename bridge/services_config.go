package bridge

import (
	"fmt"
	"strings"
	"time"
)

// ServicesConfig is how ROS 2 services and actions are bridged
// (docs/services.md). Timeouts follow zenoh-bridge-ros2dds's
// queries_timeout (its DEFAULT_CONFIG.json5), with durations instead of
// float seconds and one value per kind instead of per-name regex lists.
type ServicesConfig struct {
	// Enabled bridges services and actions (both ways); false: topics only.
	Enabled bool `yaml:"enabled"`
	// QueriesTimeout bounds each call bridged in either direction.
	QueriesTimeout QueriesTimeout `yaml:"queries_timeout"`
	// MaxPending bounds the calls in flight per service and direction;
	// beyond it a call is refused (reason too_many_pending).
	MaxPending int `yaml:"max_pending"`
}

// QueriesTimeout are the per-kind call timeouts; 0 means Default.
type QueriesTimeout struct {
	Default  time.Duration  `yaml:"default"`
	Services time.Duration  `yaml:"services"`
	Actions  ActionTimeouts `yaml:"actions"`
	// TransientLocal bounds a late joiner's history query
	// (zenoh-bridge-ros2dds: transient_local_subscribers).
	TransientLocal time.Duration `yaml:"transient_local"`
}

// ActionTimeouts are the timeouts of an action's three services.
type ActionTimeouts struct {
	SendGoal   time.Duration `yaml:"send_goal"`
	CancelGoal time.Duration `yaml:"cancel_goal"`
	GetResult  time.Duration `yaml:"get_result"`
}

// MaxServicePending is the largest services.max_pending.
const MaxServicePending = 65536

// TimeoutFor is the call timeout of a service by its ROS name:
// …/_action/send_goal, …/_action/cancel_goal and …/_action/get_result get
// the action timeouts, other names the services timeout; unset (0) values
// fall back to Default.
func (q QueriesTimeout) TimeoutFor(name string) time.Duration {
	d := q.Services
	switch {
	case strings.HasSuffix(name, "/_action/send_goal"):
		d = q.Actions.SendGoal
	case strings.HasSuffix(name, "/_action/cancel_goal"):
		d = q.Actions.CancelGoal
	case strings.HasSuffix(name, "/_action/get_result"):
		d = q.Actions.GetResult
	}
	if d <= 0 {
		return q.Default
	}
	return d
}

// HistoryTimeout is the timeout of a late joiner's history query.
func (q QueriesTimeout) HistoryTimeout() time.Duration {
	if q.TransientLocal <= 0 {
		return q.Default
	}
	return q.TransientLocal
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
		{"services.queries_timeout.services", s.QueriesTimeout.Services},
		{"services.queries_timeout.actions.send_goal", s.QueriesTimeout.Actions.SendGoal},
		{"services.queries_timeout.actions.cancel_goal", s.QueriesTimeout.Actions.CancelGoal},
		{"services.queries_timeout.actions.get_result", s.QueriesTimeout.Actions.GetResult},
		{"services.queries_timeout.transient_local", s.QueriesTimeout.TransientLocal},
	} {
		if d.v < 0 {
			at(d.key, "must be ≥ 0 (got %v; 0: queries_timeout.default)", d.v)
		}
	}
	if s.MaxPending < 1 || s.MaxPending > MaxServicePending {
		at("services.max_pending", "must be in 1..%d calls (got %d)", MaxServicePending, s.MaxPending)
	}
}

// String shows the timeouts for logs.
func (q QueriesTimeout) String() string {
	return fmt.Sprintf("default=%v services=%v send_goal=%v cancel_goal=%v get_result=%v transient_local=%v",
		q.Default, q.TimeoutFor("/s"), q.TimeoutFor("/a/_action/send_goal"), q.TimeoutFor("/a/_action/cancel_goal"),
		q.TimeoutFor("/a/_action/get_result"), q.HistoryTimeout())
}
