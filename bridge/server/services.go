package server

import (
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/picobridge/picobridge/bridge"
	"github.com/picobridge/picobridge/ddspath"
	"github.com/picobridge/picobridge/ddspath/ros2"
)

// ROS 2 services across the gateway (docs/services.md; the conventions are
// ros2-services.md's):
//
//   - DDS service server → Zenoh queryable (svcServer): once a DDS server's
//     request reader (rq/<name>Request) and reply writer (rr/<name>Reply)
//     are discovered and matched with the gateway's own request writer and
//     reply reader, a complete queryable is declared on the service's key.
//     Each query is written to DDS with a fresh rmw_cyclonedds header
//     (gateway request writer's instance handle, sequence number) and
//     answered with the DDS reply carrying that header, or with an error
//     reply on timeout, when the server is gone or the call is refused.
//   - Zenoh queryable → DDS service server (svcClient): for a DDS client
//     (request writer + reply reader) whose service has a Zenoh queryable
//     somewhere and no DDS server on this DDS domain, the gateway creates a
//     request reader and a reply writer (it becomes the DDS server); each
//     request is a Zenoh get on the service's key, the first OK reply is
//     written back with the client's header.
//
// Fast DDS (rmw_fastrtps) correlates requests and replies in RTPS inline QoS
// (related sample identity), which the Cyclone C API can neither set nor
// read (ros2-services.md §2.5). Toward a Fast DDS server the gateway sends
// plain requests, one at a time per service, and takes the next reply as
// the answer (correct while the gateway is the server's only client). Fast
// DDS clients are refused (reason vendor_unsupported): their replies would
// need the related identity.

// Results of picobridge_service_calls_total (docs/metrics.md).
const (
	callOK                = "ok"
	callTimeout           = "timeout"            // no reply within queries_timeout
	callNoServer          = "no_server"          // the DDS server is not (or no longer) there
	callNoReply           = "no_reply"           // the Zenoh get ended without an OK reply or error
	callErrorReply        = "error_reply"        // the Zenoh queryable answered with an error
	callBadPayload        = "bad_payload"        // request not plain CDR / shorter than its header
	callBadReply          = "bad_reply"          // reply not plain CDR (cannot carry the DDS header)
	callTooManyPending    = "too_many_pending"   // services.max_pending calls in flight
	callWriteError        = "write_error"        // the DDS write failed
	callVendorUnsupported = "vendor_unsupported" // a Fast DDS client (no related sample identity through Cyclone)
	callTooLarge          = "too_large"          // larger than the device whose queryable it goes to can receive (its knobs)
	callSuspended         = "suspended"          // the device's lane is suspended by the supervisor
)

// Reasons of picobridge_service_replies_dropped_total.
const (
	replyLate      = "late"      // a DDS reply to a call that already timed out
	replyMalformed = "malformed" // a DDS reply shorter than the header or not plain CDR
	replyNoCall    = "no_call"   // a Fast DDS server's reply with no call in flight
)

const (
	svcPollInterval = 250 * time.Millisecond // readiness / matching re-check
	svcDepth        = 10                     // rmw_qos_profile_services_default
)

type svcMetrics struct {
	calls   *prometheus.CounterVec
	dropped *prometheus.CounterVec
	seconds *prometheus.HistogramVec
	routes  *prometheus.GaugeVec
}

func newSvcMetrics(reg prometheus.Registerer) *svcMetrics {
	m := &svcMetrics{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "picobridge", Subsystem: "service", Name: "calls_total",
			Help: "Bridged ROS 2 service calls by direction (zenoh_to_dds: a Zenoh query answered by a DDS server; dds_to_zenoh: a DDS client's call answered over Zenoh) and result (ok or why it failed).",
		}, []string{"direction", "result"}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "picobridge", Subsystem: "service", Name: "replies_dropped_total",
			Help: "DDS service replies dropped by the gateway, by reason (late, malformed, no_call).",
		}, []string{"reason"}),
		seconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "picobridge", Subsystem: "service", Name: "call_seconds",
			Help:    "Time from a bridged call's request to its reply at the gateway, by direction (OK calls only).",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 18),
		}, []string{"direction"}),
		routes: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: "picobridge", Subsystem: "service", Name: "routes",
			Help: "Bridged services answering now, by direction.",
		}, []string{"direction"}),
	}
	for _, d := range []string{dirToDDS, dirToZenoh} {
		m.calls.WithLabelValues(d, callOK)
		m.routes.WithLabelValues(d)
	}
	reg.MustRegister(m.calls, m.dropped, m.seconds, m.routes)
	return m
}

// services is the ROS 2 service part of the DDS bridge.
type services struct {
	b   *ddsBridge
	cfg bridge.ServicesConfig
	m   *svcMetrics
	log *slog.Logger

	csid  atomic.Uint32 // client/service id counter (USER_DATA clientid=/serviceid=)
	wg    sync.WaitGroup
	done  <-chan struct{} // closed when the gateway stops: pending gets are abandoned
	recMu sync.Mutex      // one reconcile at a time

	mu      sync.Mutex
	closed  bool
	servers map[string]*svcServer // by ROS service name
	clients map[string]*svcClient
	warned  map[string]bool
}

func newServices(b *ddsBridge, done <-chan struct{}) *services {
	return &services{b: b, cfg: b.s.cfg.Services, m: b.s.svcStats, log: b.s.log.With("part", "services"), done: done,
		servers: map[string]*svcServer{}, clients: map[string]*svcClient{}, warned: map[string]bool{}}
}

// warnOnce logs a warning once per key.
func (sv *services) warnOnce(key, msg string, args ...any) {
	sv.mu.Lock()
	seen := sv.warned[key]
	sv.warned[key] = true
	sv.mu.Unlock()
	if !seen {
		sv.log.Warn(msg, args...)
	}
}

// userData is rmw_cyclonedds's USER_DATA for a client or a server:
// "clientid=<id>;" with id = the participant GUID's first 12 bytes and a
// 4-byte big-endian counter, bytes in hex joined by '.' (ros2-services.md §2.2).
func (sv *services) userData(kind string) []byte {
	g := sv.b.p.GUID()
	n := sv.csid.Add(1)
	id := append(g[:12:12], byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
	parts := make([]string, len(id))
	for i, c := range id {
		parts[i] = fmt.Sprintf("%x", c)
	}
	return []byte(kind + "=" + strings.Join(parts, ".") + ";")
}

func svcQoS(userData []byte) ddspath.QoS {
	q := ddspath.ROSDefaultQoS()
	q.Depth = svcDepth
	q.IgnoreLocal = true // never the gateway's own endpoints: no loops between the two directions
	q.UserData = userData
	return q
}

// otherType turns a request type into the reply type and back.
func otherType(t string) string {
	if b, ok := strings.CutSuffix(t, "_Request_"); ok {
		return b + "_Response_"
	}
	if b, ok := strings.CutSuffix(t, "_Response_"); ok {
		return b + "_Request_"
	}
	return t
}

func requestType(t string) string {
	if b, ok := strings.CutSuffix(t, "_Response_"); ok {
		return b + "_Request_"
	}
	return t
}

// handle routes a discovery event on rq/ or rr/.
func (sv *services) handle(e ddspath.Endpoint, name string, kind ros2.TopicKind) {
	if !sv.cfg.Enabled {
		return
	}
	// rq reader / rr writer belong to a server; rq writer / rr reader to a client.
	serverSide := (kind == ros2.KindServiceRequest) == (e.Kind == ddspath.Subscription)
	sv.mu.Lock()
	if sv.closed {
		sv.mu.Unlock()
		return
	}
	if !sv.b.allowedService(serverSide, name) {
		sv.mu.Unlock()
		return
	}
	if !sv.cfg.Allowed(serverSide, name) {
		sv.mu.Unlock()
		kind := "client"
		if serverSide {
			kind = "server"
		}
		sv.warnOnce("svc-denied-"+kind+name, "service not bridged (services.allow / services.deny)", "service", name, "side", kind)
		return
	}
	reqType := requestType(e.TypeName)
	if serverSide {
		r := sv.servers[name]
		if r == nil {
			if !e.Alive {
				sv.mu.Unlock()
				return
			}
			r = &svcServer{sv: sv, name: name, reqType: reqType}
			sv.servers[name] = r
		}
		set := &r.writers
		if kind == ros2.KindServiceRequest {
			set = &r.readers
		}
		set.track(e)
		if e.Alive && e.GUID.Vendor() == ddspath.VendorFastDDS {
			r.fastDDS = true
		}
		sv.mu.Unlock()
		sv.reconcile()
		return
	}
	c := sv.clients[name]
	if c == nil {
		if !e.Alive {
			sv.mu.Unlock()
			return
		}
		c = &svcClient{sv: sv, name: name, reqType: reqType}
		sv.clients[name] = c
	}
	set := &c.readers
	if kind == ros2.KindServiceRequest {
		set = &c.writers
	}
	set.track(e)
	sv.mu.Unlock()
	sv.reconcile()
}

// run re-checks readiness until close (DDS matching and Zenoh queryables
// change without a discovery event).
func (sv *services) run(done <-chan struct{}) {
	t := time.NewTicker(svcPollInterval)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
			sv.reconcile()
		}
	}
}

// reconcile brings every route to the state its endpoints call for.
func (sv *services) reconcile() {
	sv.recMu.Lock()
	defer sv.recMu.Unlock()
	sv.mu.Lock()
	if sv.closed {
		sv.mu.Unlock()
		return
	}
	servers := make([]*svcServer, 0, len(sv.servers))
	for _, r := range sv.servers {
		servers = append(servers, r)
	}
	clients := make([]*svcClient, 0, len(sv.clients))
	for _, c := range sv.clients {
		clients = append(clients, c)
	}
	sv.mu.Unlock()
	for _, r := range servers {
		r.reconcile()
	}
	for _, c := range clients {
		c.reconcile()
	}
}

// localServer reports whether a DDS server of name is on this domain.
func (sv *services) localServer(name string) bool {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	r := sv.servers[name]
	if r == nil {
		return false
	}
	dds, _ := r.readers.counts()
	return dds > 0 // not an rmw_zenoh client's virtual one (graphin.go)
}

func (sv *services) keyOf(name, reqType string) string {
	t, err := ros2.ServiceTypeFromDDS(reqType)
	if err != nil {
		t = reqType
	}
	return sv.b.s.gw.Routes().KeyOf(name, t, "")
}

func (sv *services) rmwZenoh() bool { return sv.b.s.cfg.Routes.KeyStyle == bridge.KeyRmwZenoh }

// close ends every route: pending Zenoh queries get an error reply.
func (sv *services) close() {
	sv.mu.Lock()
	sv.closed = true
	servers := make([]*svcServer, 0, len(sv.servers))
	for _, r := range sv.servers {
		servers = append(servers, r)
	}
	clients := make([]*svcClient, 0, len(sv.clients))
	for _, c := range sv.clients {
		clients = append(clients, c)
	}
	sv.mu.Unlock()
	for _, r := range servers {
		r.teardown("the gateway is closing")
	}
	for _, c := range clients {
		c.teardown()
	}
}

func (sv *services) wait() { sv.wg.Wait() }

func (sv *services) isClosed() bool {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	return sv.closed
}

// ServiceStatus is one bridged service in /routez.
type ServiceStatus struct {
	Name      string `json:"name"`
	Type      string `json:"type"` // request DDS type
	Key       string `json:"key"`
	Direction string `json:"direction"` // zenoh_to_dds: a DDS server serves Zenoh; dds_to_zenoh: Zenoh serves DDS clients
	Ready     bool   `json:"ready"`
	Vendor    string `json:"vendor,omitempty"` // "fastdds" for a Fast DDS server (one call at a time)
	Pending   int    `json:"pending"`
	Calls     uint64 `json:"calls"`
	OK        uint64 `json:"ok"`
}

func (sv *services) status() []ServiceStatus {
	sv.mu.Lock()
	servers := make([]*svcServer, 0, len(sv.servers))
	for _, r := range sv.servers {
		servers = append(servers, r)
	}
	clients := make([]*svcClient, 0, len(sv.clients))
	for _, c := range sv.clients {
		clients = append(clients, c)
	}
	sv.mu.Unlock()
	out := []ServiceStatus{}
	for _, r := range servers {
		out = append(out, r.status())
	}
	for _, c := range clients {
		out = append(out, c.status())
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		return out[i].Direction < out[j].Direction
	})
	return out
}

// ---- DDS server → Zenoh queryable ---------------------------------------------------
