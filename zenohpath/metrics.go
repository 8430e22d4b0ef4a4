package zenohpath

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the router's Prometheus collectors (style.md convention 19):
//
//	picobridge_router_faces                   gauge: open faces (transport sessions and local sessions)
//	picobridge_router_routed_total{kind}      counter: messages routed to a face; kind is push,
//	                                          request, response, response_final, declare or interest
//	picobridge_router_dropped_total{reason}   counter: messages not delivered; reason is
//	                                          unresolved_key (unknown scope id),
//	                                          invalid_key (empty or malformed key expression),
//	                                          no_route (no matching subscriber/queryable),
//	                                          queue_full (DROP message, face queue full),
//	                                          congestion (BLOCK message, face did not drain in
//	                                          time, or marked congested), closed (face closing),
//	                                          send_failed (other), late_response (reply after
//	                                          the query ended), query_timeout (query ended by
//	                                          its timeout), too_large (message over the
//	                                          max message size)
//	picobridge_acl_denied_total{action,flow,subject}  counter: messages and declarations denied by
//	                                          access control (acl.go); action is put, delete,
//	                                          declare_subscriber, declare_queryable, query or reply;
//	                                          flow ingress or egress; subject the first configured
//	                                          subject id matching the face, or none
//	picobridge_router_scouting_hellos_total   counter: HELLOs sent in answer to a SCOUT (scouting.go)
//	picobridge_router_scouting_dropped_total{reason}  counter: scouting datagrams not answered;
//	                                          reason is malformed, not_scout, version, not_for_us
//	                                          (what excludes our role), interface (arrived on an
//	                                          interface not named), send_failed
//
// Create them with NewMetrics on a registry you own; a nil *Metrics records nothing.
type Metrics struct {
	faces   prometheus.Gauge
	routed  *prometheus.CounterVec
	dropped *prometheus.CounterVec
	// routedPush is routed{kind="push"}, resolved once: the fan-out path
	// adds to it per sample, not per face.
	routedPush prometheus.Counter
	hellos     prometheus.Counter
	scoutDr    *prometheus.CounterVec
	aclDenied  *prometheus.CounterVec
}

// Drop reasons (label values of picobridge_router_dropped_total).
const (
	dropUnresolved   = "unresolved_key"
	dropInvalidKey   = "invalid_key"
	dropNoRoute      = "no_route"
	dropSendFailed   = "send_failed"
	dropQueueFull    = "queue_full"
	dropCongestion   = "congestion"
	dropClosed       = "closed"
	dropLateResponse = "late_response"
	dropQueryTimeout = "query_timeout"
	dropTooLarge     = "too_large"
	// dropUnknownRouter: a router declaration whose NodeId names no router
	// of the link's link-state (mesh.go).
	dropUnknownRouter = "unknown_router"
	// dropLoop: a PUSH or REQUEST from a router whose NodeId names us as
	// its source: it came back to us (routers that disagree on a tree
	// would otherwise circulate it; mesh.go).
	dropLoop = "loop"
)

// Label values of the bounded label sets, pre-initialised to 0 so that a
// fresh /metrics shows every series.
var (
	routedKinds = []string{"push", "request", "response", "response_final", kindDeclareLabel, kindInterestLabel, kindOAMLabel}
	dropReasons = []string{dropUnresolved, dropInvalidKey, dropNoRoute, dropSendFailed, dropQueueFull,
		dropCongestion, dropClosed, dropLateResponse, dropQueryTimeout, dropTooLarge, dropUnknownRouter, dropLoop}
)

// NewMetrics creates the router collectors and registers them on reg (nil: not
// registered). Collectors already registered by an earlier call are reused.
// Every label value of routed_total and dropped_total starts at 0.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		faces: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "picobridge", Subsystem: "router", Name: "faces",
			Help: "Open router faces (transport sessions and in-process sessions).",
		}),
		routed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "picobridge", Subsystem: "router", Name: "routed_total",
			Help: "Network messages the router sent to a face, by kind.",
		}, []string{"kind"}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "picobridge", Subsystem: "router", Name: "dropped_total",
			Help: "Network messages the router did not deliver, by reason.",
		}, []string{"reason"}),
		hellos: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "picobridge", Subsystem: "router", Name: "scouting_hellos_total",
			Help: "HELLOs sent in answer to a SCOUT.",
		}),
		scoutDr: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "picobridge", Subsystem: "router", Name: "scouting_dropped_total",
			Help: "Scouting datagrams not answered, by reason.",
		}, []string{"reason"}),
		aclDenied: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "picobridge", Name: "acl_denied_total",
			Help: "Messages and declarations access control denied, by action, flow and the face's first matching subject id (none: no subject matched).",
		}, []string{"action", "flow", "subject"}),
	}
	defer func() {
		if m != nil {
			for _, k := range routedKinds {
				m.routed.WithLabelValues(k)
			}
			for _, r := range dropReasons {
				m.dropped.WithLabelValues(r)
			}
			m.routedPush = m.routed.WithLabelValues("push")
			for _, r := range scoutDropReasons {
				m.scoutDr.WithLabelValues(r)
			}
		}
	}()
	if reg == nil {
		return m, nil
	}
	var err error
	if m.faces, err = register(reg, m.faces); err != nil {
		return nil, err
	}
	if m.routed, err = register(reg, m.routed); err != nil {
		return nil, err
	}
	if m.dropped, err = register(reg, m.dropped); err != nil {
		return nil, err
	}
	if m.hellos, err = register(reg, m.hellos); err != nil {
		return nil, err
	}
	if m.scoutDr, err = register(reg, m.scoutDr); err != nil {
		return nil, err
	}
	if m.aclDenied, err = register(reg, m.aclDenied); err != nil {
		return nil, err
	}
	return m, nil
}

func register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if old, ok := are.ExistingCollector.(C); ok {
				return old, nil
			}
		}
		return c, err
	}
	return c, nil
}

func (m *Metrics) faceAdded(delta float64) {
	if m != nil {
		m.faces.Add(delta)
	}
}

func (m *Metrics) routedInc(kind string) {
	if m != nil {
		m.routed.WithLabelValues(kind).Inc()
	}
}

// pushesRouted counts n PUSHes sent to faces.
func (m *Metrics) pushesRouted(n int) {
	if m != nil && n > 0 {
		m.routedPush.Add(float64(n))
	}
}

func (m *Metrics) droppedInc(reason string) {
	if m != nil {
		m.dropped.WithLabelValues(reason).Inc()
	}
}

func (m *Metrics) helloSent() {
	if m != nil {
		m.hellos.Inc()
	}
}

func (m *Metrics) scoutDropped(reason string) {
	if m != nil {
		m.scoutDr.WithLabelValues(reason).Inc()
	}
}

func (m *Metrics) aclDeniedInc(action, flow, subject string) {
	if m != nil {
		m.aclDenied.WithLabelValues(action, flow, subject).Inc()
	}
}
