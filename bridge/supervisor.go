package bridge

import (
	"fmt"
	"sync"
	"time"
)

// SupervisorMode is the gateway's overall operating mode.
type SupervisorMode uint8

const (
	// Normal: both lanes forward.
	Normal SupervisorMode = iota
	// Degraded: noncritical forwarding (the batched lane) is suspended.
	Degraded
	// Emergency: all forwarding is stopped; diagnostics are published.
	Emergency
)

func (m SupervisorMode) String() string {
	switch m {
	case Degraded:
		return "DEGRADED"
	case Emergency:
		return "EMERGENCY"
	}
	return "NORMAL"
}

// Label is the lower-case form used in metric labels.
func (m SupervisorMode) Label() string {
	switch m {
	case Degraded:
		return "degraded"
	case Emergency:
		return "emergency"
	}
	return "normal"
}

// MarshalText writes String.
func (m SupervisorMode) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

// UnmarshalText reads String's forms (and Label's).
func (m *SupervisorMode) UnmarshalText(b []byte) error {
	for _, x := range []SupervisorMode{Normal, Degraded, Emergency} {
		if string(b) == x.String() || string(b) == x.Label() {
			*m = x
			return nil
		}
	}
	return fmt.Errorf("bridge: unknown supervisor mode %q", b)
}

// Health is one supervisor reading of the gateway as a whole. It measures
// the gateway, not one device: one impaired device is the classifier's
// business and must not change the mode for the others (invariant 6).
type Health struct {
	// QueueOccupancy is the samples pending in all lanes over what all lanes
	// can hold, 0..1.
	QueueOccupancy float64 `json:"queue_occupancy"`
	// Lag is the gateway's processing lag: the largest delay of its own
	// housekeeping tick and of ingress handling since the previous reading.
	Lag time.Duration `json:"lag_ns"`
	// Errors counts sink and ingress errors since the previous reading
	// (ErrCongested is not an error: it is counted as a congestion drop;
	// nor is ErrDeviceClosed: a device that left).
	Errors int `json:"errors"`
	// HostLag is a lag that is the host's, not the gateway's: measured
	// while the gateway's process used less than half of its CPUs
	// (hostLagBusy), so its timers ran late because the OS did not run it
	// (CPU steal, other processes). It is reported, and no limit applies to
	// it: suspending the lanes would not give the host's CPU back, and
	// would drop every critical sample of a gateway that keeps up.
	HostLag time.Duration `json:"host_lag_ns,omitempty"`
}

// ModeChange is one supervisor transition, with the reading behind it.
type ModeChange struct {
	At     time.Time      `json:"at"`
	From   SupervisorMode `json:"from"`
	To     SupervisorMode `json:"to"`
	Health Health         `json:"health"`
	Reason string         `json:"reason"`
}

// Supervisor turns Health readings into a mode with hysteresis: a reading at
// or above any emergency limit enters EMERGENCY at once, one at or above
// any degraded limit enters DEGRADED at once (from NORMAL); the mode steps
// down one level only after recover.evaluations consecutive readings all at
// or below the recover limits. A limit of 0 is off (for entering limits).
// Safe for concurrent use; times are passed in.
type Supervisor struct {
	mu      sync.Mutex
	cfg     SupervisorConfig
	mode    SupervisorMode
	calm    int
	last    Health
	history []ModeChange
	total   uint64
	changed chan struct{} // closed at the next transition; nil: nobody asked (Changed)
}

// NewSupervisor starts in NORMAL.
func NewSupervisor(cfg SupervisorConfig) *Supervisor { return &Supervisor{cfg: cfg} }

func reached(h Health, l Limits) (bool, string) {
	switch {
	case l.QueueOccupancy > 0 && h.QueueOccupancy >= l.QueueOccupancy:
		return true, fmt.Sprintf("queue occupancy %.2f ≥ %.2f", h.QueueOccupancy, l.QueueOccupancy)
	case l.Lag > 0 && h.Lag >= l.Lag:
		return true, fmt.Sprintf("lag %v ≥ %v", h.Lag, l.Lag)
	case l.Errors > 0 && h.Errors >= l.Errors:
		return true, fmt.Sprintf("%d errors ≥ %d", h.Errors, l.Errors)
	}
	return false, ""
}

func calm(h Health, l Limits) bool {
	return h.QueueOccupancy <= l.QueueOccupancy && h.Lag <= l.Lag && h.Errors <= l.Errors
}

// Observe applies one reading and returns the transition it caused, if any.
func (s *Supervisor) Observe(h Health, now time.Time) (ModeChange, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.last = h
	to := s.mode
	var reason string
	if hit, why := reached(h, s.cfg.Emergency); hit {
		to, reason = Emergency, why
	} else if hit, why := reached(h, s.cfg.Degraded); hit && s.mode == Normal {
		to, reason = Degraded, why
	}
	if to != s.mode {
		s.calm = 0
		return s.setLocked(to, h, now, reason), true
	}
	if s.mode == Normal || !calm(h, s.cfg.Recover.Limits) || reachedAny(h, s.cfg.Degraded) {
		s.calm = 0
		return ModeChange{}, false
	}
	s.calm++
	if s.calm < s.cfg.Recover.Evaluations {
		return ModeChange{}, false
	}
	s.calm = 0
	return s.setLocked(s.mode-1, h, now, fmt.Sprintf("%d calm evaluations", s.cfg.Recover.Evaluations)), true
}

func reachedAny(h Health, l Limits) bool { hit, _ := reached(h, l); return hit }

func (s *Supervisor) setLocked(to SupervisorMode, h Health, now time.Time, reason string) ModeChange {
	c := ModeChange{At: now, From: s.mode, To: to, Health: h, Reason: reason}
	s.mode = to
	if s.changed != nil {
		close(s.changed)
		s.changed = nil
	}
	s.total++
	const keep = 64
	if len(s.history) == keep {
		copy(s.history, s.history[1:])
		s.history = s.history[:keep-1]
	}
	s.history = append(s.history, c)
	return c
}

// Mode is the current mode.
func (s *Supervisor) Mode() SupervisorMode {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mode
}

// Changed returns a channel closed at the next mode change (Device.Replay
// waits on it while the batched lane is suspended, rather than poll Mode).
func (s *Supervisor) Changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.changed == nil {
		s.changed = make(chan struct{})
	}
	return s.changed
}

// SupervisorStatus is a snapshot for status and diagnostics.
type SupervisorStatus struct {
	Mode        SupervisorMode `json:"mode"`
	Health      Health         `json:"health"`
	Calm        int            `json:"calm_evaluations"`
	Transitions uint64         `json:"transitions_total"`
	History     []ModeChange   `json:"transitions"`
}

// Status returns a snapshot.
func (s *Supervisor) Status() SupervisorStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	return SupervisorStatus{Mode: s.mode, Health: s.last, Calm: s.calm, Transitions: s.total,
		History: append([]ModeChange(nil), s.history...)}
}
