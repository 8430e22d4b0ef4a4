package bridge

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/picobridge/picobridge/knobs"
)

// Status endpoint paths (convention 14).
const (
	PathDevicez = "/devicez"
	PathHealthz = "/healthz"
	PathMetrics = "/metrics"
)

// DevicezOptions filter Devicez.
type DevicezOptions struct {
	// Device limits the answer to one device name; empty: all.
	Device string
	// Transitions includes each device's recorded class transitions.
	Transitions bool
	// Advice includes each device's knob advice (DeviceStatus.Advice):
	// /devicez does unless advice=0; Diagnostics does not.
	Advice bool
}

// DevicezResponse is the answer of /devicez and `picobridge status`.
type DevicezResponse struct {
	Now        time.Time        `json:"now"`
	Supervisor SupervisorStatus `json:"supervisor"`
	// Gateway is the gateway-health guard's reading: its own wake-up lag,
	// CPU steal and load, and whether classifier judgement is suspended.
	Gateway GatewayHealth `json:"gateway_health"`
	// Realtime is what policy.express.realtime applied to the critical
	// path's threads (realtime.go).
	Realtime RealtimeThreads `json:"realtime"`
	Devices  []DeviceStatus  `json:"devices"`
}

// DeviceStatus is one device's state.
type DeviceStatus struct {
	Name       string           `json:"name"`
	ZID        string           `json:"zid,omitempty"`
	Configured bool             `json:"configured"`
	Platform   string           `json:"platform"`
	Board      string           `json:"board,omitempty"`
	Capacity   knobs.Capacity   `json:"capacity"`
	Shaping    Shaping          `json:"shaping"`
	Classifier ClassifierStatus `json:"classifier"`
	// BatchedRateHz is the batched lane's token bucket rate now.
	BatchedRateHz float64               `json:"batched_rate_hz"`
	Subscriptions []string              `json:"subscriptions"`
	Lanes         map[string]LaneStatus `json:"lanes"` // "express", "batched"
	// Link is the device link's byte budget.
	Link LinkStatus `json:"link"`
	// CriticalDropped counts dropped samples of critical routes by reason
	// (zero reasons left out).
	CriticalDropped map[string]uint64 `json:"critical_dropped"`
	// CriticalForwarded counts forwarded samples of critical routes, whatever their lane.
	CriticalForwarded uint64 `json:"critical_forwarded"`
	// KnobSource is "device" when the profile comes from the device's knob
	// announcement, "config" otherwise (devices.list or devices.default).
	KnobSource string `json:"knob_source"`
	// KnobDisagreements lists the knobs where the announcement overruled
	// the configuration.
	KnobDisagreements []string `json:"knob_disagreements,omitempty"`
	// OversizeFix says, after the first oversize drop of an unlisted device
	// that announced nothing, which setting would fix it.
	OversizeFix string `json:"oversize_fix,omitempty"`
	// Traffic is what the gateway offered the device, per subscription
	// (traffic.go).
	Traffic TrafficStatus `json:"traffic"`
	// Advice is `knobs advise` on the device's resolution and its observed
	// traffic (Device.Advise); nil when the device has no resolution or
	// DevicezOptions.Advice is false.
	Advice *knobs.AdviceJSON `json:"advice,omitempty"`
}

// LinkStatus is a device link's byte budget (policy.link).
type LinkStatus struct {
	BudgetBytesPerS float64 `json:"budget_bytes_per_s"` // 0: none
	LaneBytesPerS   float64 `json:"lane_bytes_per_s"`   // budget × headroom: the lanes' and the transport's pacing
	// SelfDelay is how long a message handed over now waits behind what the
	// gateway already queued toward the device.
	SelfDelay time.Duration `json:"self_delay_ns"`
	// Learned is the learned budget's state (policy.link.estimate:
	// learn): the pacing rate it found, the link's min RTT and the queue
	// estimate; nil with another estimate.
	Learned *LinkLearnStatus `json:"learned,omitempty"`
}

// LaneStatus is one lane's counters and depth.
type LaneStatus struct {
	Depth     int               `json:"depth"`
	Forwarded uint64            `json:"forwarded"`
	Dropped   map[string]uint64 `json:"dropped"` // by reason; zero reasons left out
	Lag       time.Duration     `json:"lag_ns,omitempty"`
}

// Devicez reports every attached device (or one, opts.Device).
func (g *Gateway) Devicez(opts DevicezOptions) DevicezResponse {
	now := g.clock.Now()
	r := DevicezResponse{Now: now, Supervisor: g.sup.Status(), Gateway: g.guard.status(), Realtime: g.rt.status(), Devices: []DeviceStatus{}}
	for _, d := range g.Devices() {
		if opts.Device != "" && d.Name() != opts.Device {
			continue
		}
		r.Devices = append(r.Devices, d.status(now, opts.Transitions, opts.Advice))
	}
	return r
}

func (d *Device) status(now time.Time, transitions, advice bool) DeviceStatus {
	d.mu.RLock()
	s := DeviceStatus{Name: d.name, ZID: d.zid, Configured: d.conf != nil, Capacity: d.capa, Shaping: d.shape,
		Subscriptions: append([]string{}, d.subs...)}
	if d.resolved != nil && d.resolved.Platform != nil {
		s.Platform = d.resolved.Platform.Name()
	}
	if d.resolved != nil && d.resolved.Board != nil {
		s.Board = d.resolved.Board.Name()
	}
	eg, cls := d.eg, d.cls
	d.mu.RUnlock()
	s.KnobSource, s.KnobDisagreements, s.OversizeFix = d.knobStatus()
	s.Traffic = eg.stats.traffic.status(now)
	if advice {
		if a := d.Advise(AdviceSource(s.Name)); a != nil {
			j := knobs.AdviceToJSON(a)
			s.Advice = &j
		}
	}
	s.Classifier = cls.Status()
	if !transitions {
		s.Classifier.History = nil
	}
	eg.bat.mu.Lock()
	s.BatchedRateHz = eg.bat.rate
	eg.bat.mu.Unlock()
	e, b, lag := eg.depth(now)
	s.Link.BudgetBytesPerS, s.Link.LaneBytesPerS = d.link.Rate()
	s.Link.SelfDelay = d.link.selfDelay(now)
	if d.g.cfg.Policy.Link.Estimate == LinkEstimateLearn {
		ls := d.learn.status()
		s.Link.Learned = &ls
	}
	s.CriticalForwarded = eg.stats.critForwarded.Load()
	s.CriticalDropped = map[string]uint64{}
	for r := range numReasons {
		if n := eg.stats.critDropped[r].Load(); n > 0 {
			s.CriticalDropped[r.String()] = n
		}
	}
	s.Lanes = map[string]LaneStatus{}
	for l := range numLanes {
		ls := LaneStatus{Forwarded: eg.stats.lanes[l].forwarded.Load(), Dropped: map[string]uint64{}}
		for r := range numReasons {
			if n := eg.stats.lanes[l].dropped[r].Load(); n > 0 {
				ls.Dropped[r.String()] = n
			}
		}
		if l == LaneExpress {
			ls.Depth, ls.Lag = e, lag
		} else {
			ls.Depth = b
		}
		s.Lanes[l.String()] = ls
	}
	return s
}

// HandleDevicez serves Devicez as JSON, with each device's advice;
// query parameters device=NAME, transitions=1 and advice=0 (leave the
// advice out). A device=NAME that names no attached device is 404 with
// {"error": ...}, as for /knobz and /advicez.
func (g *Gateway) HandleDevicez(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if name := q.Get("device"); name != "" && g.Device(name) == nil {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": fmt.Errorf("%w: %q", ErrNoSuchDevice, name).Error()})
		return
	}
	writeJSON(w, http.StatusOK, g.Devicez(DevicezOptions{Device: q.Get("device"),
		Transitions: q.Get("transitions") == "1" || q.Get("transitions") == "true",
		Advice:      q.Get("advice") != "0" && q.Get("advice") != "false"}))
}

// HealthzResponse is the answer of /healthz.
type HealthzResponse struct {
	Status string         `json:"status"` // "ok", "degraded" or "emergency"
	Mode   SupervisorMode `json:"mode"`
	Uptime time.Duration  `json:"uptime_ns"`
}

// Healthz is the gateway's liveness: ok in NORMAL, degraded in DEGRADED
// (still 200: critical forwarding runs), emergency in EMERGENCY (503).
func (g *Gateway) Healthz() HealthzResponse {
	m := g.sup.Mode()
	return HealthzResponse{Status: map[SupervisorMode]string{Normal: "ok", Degraded: "degraded", Emergency: "emergency"}[m],
		Mode: m, Uptime: g.clock.Now().Sub(g.started)}
}

// HandleHealthz serves Healthz: 200 unless EMERGENCY (503).
func (g *Gateway) HandleHealthz(w http.ResponseWriter, r *http.Request) {
	h := g.Healthz()
	code := http.StatusOK
	if h.Mode == Emergency {
		code = http.StatusServiceUnavailable
	}
	writeJSON(w, code, h)
}

// Diagnostics is what the lead publishes in EMERGENCY (and on demand): the
// supervisor's state and every device's.
func (g *Gateway) Diagnostics() DevicezResponse {
	return g.Devicez(DevicezOptions{Transitions: true})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}
