package bridge

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// HostStats is a reading of the host's CPU counters (/proc/stat, first
// line, in clock ticks) and load (/proc/loadavg), for the gateway-health
// guard.
type HostStats struct {
	CPUTotal uint64  // all ticks of all CPUs
	CPUSteal uint64  // ticks stolen by the hypervisor
	Load1    float64 // 1-minute load average
	CPUs     int     // online CPUs (runtime.NumCPU)
}

// ReadHostStats reads /proc/stat and /proc/loadavg (Linux); elsewhere an error.
func ReadHostStats() (HostStats, error) {
	st, err := os.ReadFile("/proc/stat")
	if err != nil {
		return HostStats{}, err
	}
	h, err := ParseProcStat(st)
	if err != nil {
		return HostStats{}, err
	}
	if la, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(la)); len(f) > 0 {
			h.Load1, _ = strconv.ParseFloat(f[0], 64)
		}
	}
	h.CPUs = runtime.NumCPU()
	return h, nil
}

// ParseProcStat reads the aggregate "cpu" line of /proc/stat: user nice
// system idle iowait irq softirq steal [guest guest_nice] (proc(5); guest
// time is already in user and nice, so it is not added again).
func ParseProcStat(b []byte) (HostStats, error) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || f[0] != "cpu" {
			continue
		}
		var h HostStats
		for i, v := range f[1:] {
			if i >= 8 {
				break
			}
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				return HostStats{}, fmt.Errorf("/proc/stat: cpu field %d: %w", i+1, err)
			}
			if h.CPUTotal+n < h.CPUTotal {
				return HostStats{}, fmt.Errorf("/proc/stat: cpu ticks overflow")
			}
			h.CPUTotal += n
			if i == 7 {
				h.CPUSteal = n
			}
		}
		return h, nil
	}
	return HostStats{}, fmt.Errorf("/proc/stat: no cpu line")
}

// Suspension reasons of the gateway-health guard (label reason of
// picobridge_classifier_suspended_total).
const (
	SuspendGatewayLag = "gateway_lag" // the gateway's scheduler woke late (classifier.suspend.lag)
	SuspendCPUSteal   = "cpu_steal"   // the hypervisor took CPU (classifier.suspend.steal)
	SuspendHostLoad   = "host_load"   // the host is overloaded (classifier.suspend.load)
)

var suspendReasons = []string{SuspendGatewayLag, SuspendCPUSteal, SuspendHostLoad}

// SuspendReasons lists the guard's reasons in label order.
func SuspendReasons() []string { return append([]string(nil), suspendReasons...) }

// minStealTicks is the least /proc/stat ticks (all CPUs) a steal ratio is
// computed over: at USER_HZ 100 on 2 CPUs, half a second.
const minStealTicks = 100

// healthGuard is the gateway-health guard (architecture invariant 8,
// issue 11 item 4): the classifier judges a device, not the gateway. At
// every classifier evaluation it reads the gateway's own lag (the largest
// lateness of its timers and tickers since the previous evaluation: the
// scheduler's wake-up delay), the host's CPU steal and load.
//
//   - CPU steal or load at their classifier.suspend limit: the evaluation
//     is suspended for every device (no reading applied, no class change).
//   - A wake-up lag at classifier.suspend.lag: the guard keeps the largest
//     lag for as long as the probe window still holds probes sent before it
//     (span); a device's bad reading that this lag explains — its mean RTT
//     minus the lag within demote_rtt, its loss or silence only when the lag
//     reaches half the probe timeout — is not applied. A reading the lag does
//     not explain (a device 100 ms slow beside a 20 ms gateway hiccup) is.
//
// Each guard decision holds until the window refilled (span), since older
// probes carry the gateway's delay. The delay the gateway's own TX backlog
// toward one device causes is subtracted per probe instead
// (Classifier.PingAfter, linkBudget.selfDelay).
type healthGuard struct {
	cfg  SuspendConfig
	read func() (HostStats, error)

	mu       sync.Mutex
	prev     HostStats
	havePrev bool
	last     GatewayHealth
	until    time.Time     // the host reason holds until
	reason   string        // host reason (cpu_steal, host_load); empty: none
	lagMax   time.Duration // largest wake-up lag at or above the limit, held until lagUntil
	lagUntil time.Time

	suspended map[string]*atomic.Uint64 // device evaluations suspended, by reason
	nowSusp   atomic.Int64              // devices whose last evaluation was suspended
}

// Guard is the guard's verdict for one evaluation round.
type Guard struct {
	// Reason suspends every device's evaluation (cpu_steal, host_load); empty: none.
	Reason string
	// Lag is the gateway's largest recent wake-up lag at or above
	// classifier.suspend.lag; a bad reading it explains is not applied.
	Lag time.Duration
}

// GatewayHealth is the guard's last reading, in /devicez.
type GatewayHealth struct {
	// WakeupLag is the largest lateness of the gateway's own timers since
	// the previous evaluation (scheduler wake-up delay).
	WakeupLag time.Duration `json:"wakeup_lag_ns"`
	// Steal is the host's CPU steal ratio since the previous evaluation.
	Steal float64 `json:"cpu_steal_ratio"`
	// LoadPerCPU is the 1-minute load average per CPU.
	LoadPerCPU float64 `json:"load_per_cpu"`
	// Suspended is the host reason judgement is suspended for every device
	// (cpu_steal, host_load); empty: none.
	Suspended string `json:"suspended,omitempty"`
	// ExplainingLag is the recent wake-up lag bad readings are checked
	// against (0: none at or above classifier.suspend.lag).
	ExplainingLag time.Duration `json:"explaining_lag_ns,omitempty"`
	// Until is when the current guard decision ends at the earliest.
	Until time.Time `json:"until,omitzero"`
	// SuspendedDevices is how many devices' last evaluation was suspended.
	SuspendedDevices int `json:"suspended_devices"`
	// SuspendedTotal counts suspended device evaluations by reason.
	SuspendedTotal map[string]uint64 `json:"suspended_total"`
}

func newHealthGuard(cfg ClassifierConfig, read func() (HostStats, error)) *healthGuard {
	if read == nil {
		read = ReadHostStats
	}
	h := &healthGuard{cfg: cfg.Suspend, read: read, suspended: map[string]*atomic.Uint64{}}
	for _, r := range suspendReasons {
		h.suspended[r] = &atomic.Uint64{}
	}
	return h
}

// observe takes one reading at now with the gateway's wake-up lag since
// the previous one; span is how long the probe window takes to refill.
func (h *healthGuard) observe(now time.Time, lag, span time.Duration) Guard {
	var hs HostStats
	var herr error
	if h.cfg.Steal > 0 || h.cfg.Load > 0 {
		hs, herr = h.read()
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.last.WakeupLag = lag
	if herr == nil && (h.cfg.Steal > 0 || h.cfg.Load > 0) {
		switch {
		case !h.havePrev || hs.CPUTotal < h.prev.CPUTotal || hs.CPUSteal < h.prev.CPUSteal:
			h.prev, h.havePrev = hs, true
		case hs.CPUTotal-h.prev.CPUTotal >= minStealTicks: // fewer ticks: too coarse a ratio, wait
			h.last.Steal = float64(hs.CPUSteal-h.prev.CPUSteal) / float64(hs.CPUTotal-h.prev.CPUTotal)
			h.prev = hs
		}
		if hs.CPUs > 0 {
			h.last.LoadPerCPU = hs.Load1 / float64(hs.CPUs)
		}
	}
	switch {
	case h.cfg.Steal > 0 && h.last.Steal >= h.cfg.Steal:
		h.reason, h.until = SuspendCPUSteal, now.Add(span)
	case h.cfg.Load > 0 && h.last.LoadPerCPU >= h.cfg.Load:
		h.reason, h.until = SuspendHostLoad, now.Add(span)
	}
	if !now.Before(h.until) {
		h.reason = ""
	}
	if !now.Before(h.lagUntil) {
		h.lagMax = 0
	}
	if h.cfg.Lag > 0 && lag >= h.cfg.Lag && lag >= h.lagMax {
		h.lagMax, h.lagUntil = lag, now.Add(span)
	}
	h.nowSusp.Store(0)
	return Guard{Reason: h.reason, Lag: h.lagMax}
}

// counted records one device evaluation suspended for reason.
func (h *healthGuard) counted(reason string) {
	if c := h.suspended[reason]; c != nil {
		c.Add(1)
		h.nowSusp.Add(1)
	}
}

// status is the last reading.
func (h *healthGuard) status() GatewayHealth {
	h.mu.Lock()
	defer h.mu.Unlock()
	g := h.last
	g.Suspended, g.ExplainingLag = h.reason, h.lagMax
	if h.reason != "" {
		g.Until = h.until
	}
	if h.lagMax > 0 && h.lagUntil.After(g.Until) {
		g.Until = h.lagUntil
	}
	g.SuspendedDevices = int(h.nowSusp.Load())
	g.SuspendedTotal = map[string]uint64{}
	for r, n := range h.suspended {
		g.SuspendedTotal[r] = n.Load()
	}
	return g
}

// lagMeter keeps the largest lateness of the gateway's own tickers (the
// housekeeping ticks and the lanes' scheduler timers) since the last swap.
type lagMeter struct{ max atomic.Int64 }

func (m *lagMeter) note(late time.Duration) {
	for cur := m.max.Load(); int64(late) > cur && !m.max.CompareAndSwap(cur, int64(late)); cur = m.max.Load() {
	}
}

func (m *lagMeter) swap() time.Duration { return time.Duration(m.max.Swap(0)) }
