package server

import (
	"errors"
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
	"github.com/picobridge/picobridge/zenohpath"
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
	if !sv.b.allowed(name) {
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
			r = &svcServer{sv: sv, name: name, reqType: reqType, readers: map[ddspath.GUID]bool{}, writers: map[ddspath.GUID]bool{}}
			sv.servers[name] = r
		}
		set := r.writers
		if kind == ros2.KindServiceRequest {
			set = r.readers
		}
		track(set, e)
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
		c = &svcClient{sv: sv, name: name, reqType: reqType, writers: map[ddspath.GUID]bool{}, readers: map[ddspath.GUID]bool{}}
		sv.clients[name] = c
	}
	set := c.readers
	if kind == ros2.KindServiceRequest {
		set = c.writers
	}
	track(set, e)
	sv.mu.Unlock()
	sv.reconcile()
}

// track adds a discovered endpoint to set, or removes it when it is gone.
func track(set map[ddspath.GUID]bool, e ddspath.Endpoint) {
	if e.Alive {
		set[e.GUID] = true
	} else {
		delete(set, e.GUID)
	}
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
	return r != nil && realEndpoints(r.readers) > 0 // not an rmw_zenoh client's virtual one (graphin.go)
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

// svcServer bridges one DDS service server to a Zenoh queryable.
type svcServer struct {
	sv      *services
	name    string
	reqType string

	mu      sync.Mutex
	readers map[ddspath.GUID]bool // the DDS servers' request readers (guarded by sv.mu)
	writers map[ddspath.GUID]bool // their reply writers (guarded by sv.mu)
	fastDDS bool                  // guarded by sv.mu

	key     string
	reqW    *ddspath.Writer
	repR    *ddspath.Reader
	handle  uint64 // reqW's instance handle: the header's guid
	qbl     *zenohpath.Queryable
	tok     *zenohpath.LivelinessToken // rmw_zenoh SS token while the DDS server is there
	seq     int64
	pending map[int64]*svcCall
	fast    bool       // copied from fastDDS when the endpoints were made
	queue   []*svcCall // fast: calls waiting for the one in flight
	flight  *svcCall   // fast: the call in flight
	calls   atomic.Uint64
	ok      atomic.Uint64
}

// svcCall is one Zenoh query waiting for its DDS reply.
type svcCall struct {
	seq   int64
	q     *zenohpath.Query
	att   []byte // rmw_zenoh reply attachment base (request's), or nil
	cdr   []byte // what to write (fast: written when its turn comes)
	start time.Time
	timer *time.Timer
}

func (r *svcServer) wanted() (want, fast bool) {
	r.sv.mu.Lock()
	defer r.sv.mu.Unlock()
	return len(r.readers) > 0 && len(r.writers) > 0, r.fastDDS
}

func (r *svcServer) reconcile() {
	want, fast := r.wanted()
	r.mu.Lock()
	if !want {
		open := r.reqW != nil
		r.mu.Unlock()
		if open {
			r.teardown("the DDS service server went away")
		}
		r.forgetIfEmpty()
		return
	}
	if r.reqW == nil {
		if err := r.open(fast); err != nil {
			r.mu.Unlock()
			r.sv.warnOnce("svc-open"+r.name, "service route not created", "service", r.name, "err", err)
			return
		}
	}
	matched := r.reqW.Matched() > 0 && r.repR.Matched() > 0
	declare := r.qbl == nil && matched
	announce := matched && r.tok == nil && r.sv.b.s.graph != nil
	r.mu.Unlock()
	if announce {
		r.announce()
	}
	if !declare {
		return
	}
	qbl, err := r.sv.b.s.data.DeclareQueryable(r.key, r.onQuery, &zenohpath.QueryableOptions{Complete: true})
	if err != nil {
		r.sv.log.Warn("service queryable not declared", "service", r.name, "key", r.key, "err", err)
		return
	}
	r.mu.Lock()
	if r.qbl != nil { // declared meanwhile
		r.mu.Unlock()
		_ = qbl.Undeclare()
		return
	}
	r.qbl = qbl
	r.mu.Unlock()
	r.sv.m.routes.WithLabelValues(dirToDDS).Inc()
	vendor := "cyclone"
	if fast {
		vendor = "fastdds (one call at a time)"
	}
	r.sv.log.Info("service DDS server → Zenoh queryable", "service", r.name, "key", r.key, "type", r.reqType,
		"server", vendor, "timeout", r.sv.cfg.QueriesTimeout.TimeoutFor(r.name))
}

// announce declares the SS token of the bridged server (rmw_zenoh graph).
func (r *svcServer) announce() {
	t, err := ros2.ServiceTypeFromDDS(r.reqType)
	if err != nil {
		return
	}
	tok := r.sv.b.s.graph.announce(ros2.EntityServiceServer, r.name, t, "", svcQoS(nil))
	r.mu.Lock()
	if r.tok != nil || r.reqW == nil {
		r.mu.Unlock()
		undeclareToken(tok)
		return
	}
	r.tok = tok
	r.mu.Unlock()
}

// open creates the gateway's DDS client endpoints. Caller holds r.mu.
func (r *svcServer) open(fast bool) error {
	ud := r.sv.userData("clientid")
	w, err := r.sv.b.p.NewWriter(ros2DDS(r.name, ros2.KindServiceRequest), r.reqType, svcQoS(ud))
	if err != nil {
		return err
	}
	h, err := w.InstanceHandle()
	if err != nil {
		_ = w.Close()
		return err
	}
	rd, err := r.sv.b.p.NewReader(ros2DDS(r.name, ros2.KindServiceReply), otherType(r.reqType), svcQoS(ud), ddspath.WithQueue(1024, ddspath.DropOldest))
	if err != nil {
		_ = w.Close()
		return err
	}
	r.key = r.sv.keyOf(r.name, r.reqType)
	r.reqW, r.repR, r.handle, r.fast = w, rd, h, fast
	r.pending = map[int64]*svcCall{}
	r.sv.wg.Add(1)
	go func() {
		defer r.sv.wg.Done()
		for smp := range rd.C() {
			r.onReply(smp)
		}
	}()
	return nil
}

func ros2DDS(name string, kind ros2.TopicKind) string {
	rq, rr, err := ros2.ServiceToDDS(name)
	if err != nil { // names come from DDS topics that parsed: cannot happen
		rq, rr = "rq"+name+"Request", "rr"+name+"Reply"
	}
	if kind == ros2.KindServiceRequest {
		return rq
	}
	return rr
}

// forgetIfEmpty drops the route entry once no DDS endpoint is left.
func (r *svcServer) forgetIfEmpty() {
	sv := r.sv
	sv.mu.Lock()
	defer sv.mu.Unlock()
	if len(r.readers) == 0 && len(r.writers) == 0 && sv.servers[r.name] == r {
		r.mu.Lock()
		idle := r.reqW == nil && r.qbl == nil
		r.mu.Unlock()
		if idle {
			delete(sv.servers, r.name)
		}
	}
}

// teardown answers every pending call with an error and closes the DDS
// endpoints. The queryable stays declared while the gateway runs, so that a
// query to a server that went away gets an error reply (no_server) rather
// than silence; it is undeclared when the gateway closes.
func (r *svcServer) teardown(why string) {
	r.mu.Lock()
	qbl, w, rd, tok := r.qbl, r.reqW, r.repR, r.tok
	r.tok = nil
	calls := make([]*svcCall, 0, len(r.pending))
	for _, c := range r.pending {
		calls = append(calls, c)
	}
	closing := r.sv.isClosed()
	if closing {
		r.qbl = nil
	} else {
		qbl = nil
	}
	r.reqW, r.repR, r.pending, r.queue, r.flight = nil, nil, nil, nil, nil
	r.mu.Unlock()
	undeclareToken(tok)
	if qbl != nil {
		_ = qbl.Undeclare()
		r.sv.m.routes.WithLabelValues(dirToDDS).Dec()
		r.sv.log.Info("service queryable removed", "service", r.name, "key", r.key, "why", why)
	}
	for _, c := range calls {
		c.timer.Stop()
		r.fail(c, callNoServer, "picobridge: service "+r.name+": "+why)
	}
	if w != nil {
		_ = w.Close()
	}
	if rd != nil {
		_ = rd.Close()
	}
}

func (r *svcServer) fail(c *svcCall, result, msg string) {
	_ = c.q.ReplyErr([]byte(msg), nil)
	c.q.Finish()
	r.sv.m.calls.WithLabelValues(dirToDDS, result).Inc()
}

// refuse answers a query that was not detached.
func (r *svcServer) refuse(q *zenohpath.Query, result, msg string) {
	_ = q.ReplyErr([]byte("picobridge: service "+r.name+": "+msg), nil)
	r.calls.Add(1)
	r.sv.m.calls.WithLabelValues(dirToDDS, result).Inc()
}

// onQuery runs on the data session's dispatcher: it writes the request and
// detaches the query; the reply reader or the timer finishes it.
func (r *svcServer) onQuery(q *zenohpath.Query) {
	start := time.Now()
	payload := q.Payload()
	if len(payload) == 0 {
		payload = []byte{0, 1, 0, 0} // a request without fields
	}
	if err := ros2.CheckEncapsulation(payload); err != nil {
		r.refuse(q, callBadPayload, "request payload: "+err.Error())
		return
	}
	var att []byte
	if r.sv.rmwZenoh() {
		if a, err := ros2.ParseZenohAttachment(q.Attachment()); err == nil {
			att = a.Marshal()
		}
	}
	r.mu.Lock()
	if r.reqW == nil {
		r.mu.Unlock()
		r.refuse(q, callNoServer, "no DDS service server (it went away)")
		return
	}
	if len(r.pending) >= r.sv.cfg.MaxPending {
		r.mu.Unlock()
		r.refuse(q, callTooManyPending, fmt.Sprintf("%d calls in flight (services.max_pending)", r.sv.cfg.MaxPending))
		return
	}
	r.seq++
	c := &svcCall{seq: r.seq, q: q, att: att, start: start}
	if r.fast {
		c.cdr = payload // Fast DDS: no header, the order correlates
	} else {
		cdr, err := ros2.JoinServiceHeader(payload, ros2.ServiceHeader{GUID: r.handle, Seq: c.seq})
		if err != nil {
			r.mu.Unlock()
			r.refuse(q, callBadPayload, "request payload: "+err.Error())
			return
		}
		c.cdr = cdr
	}
	q.Detach()
	r.calls.Add(1)
	r.pending[c.seq] = c
	timeout := r.sv.cfg.QueriesTimeout.TimeoutFor(r.name)
	c.timer = time.AfterFunc(timeout, func() { r.expire(c, timeout) })
	w := r.reqW
	send := !r.fast || r.flight == nil
	if r.fast {
		if send {
			r.flight = c
		} else {
			r.queue = append(r.queue, c)
		}
	}
	r.mu.Unlock()
	if send {
		r.write(w, c)
	}
}

func (r *svcServer) write(w *ddspath.Writer, c *svcCall) {
	if err := w.Write(c.cdr, time.Time{}); err != nil {
		if r.take(c) {
			c.timer.Stop()
			r.fail(c, callWriteError, "picobridge: service "+r.name+": DDS write: "+err.Error())
			r.next()
		}
	}
}

// take removes c from the pending calls; false if it was finished already.
func (r *svcServer) take(c *svcCall) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pending == nil || r.pending[c.seq] != c {
		return false
	}
	delete(r.pending, c.seq)
	if r.flight == c {
		r.flight = nil
	}
	return true
}

// next writes the next queued call toward a Fast DDS server.
func (r *svcServer) next() {
	r.mu.Lock()
	if !r.fast || r.flight != nil || len(r.queue) == 0 || r.reqW == nil {
		r.mu.Unlock()
		return
	}
	c := r.queue[0]
	r.queue = r.queue[1:]
	r.flight = c
	w := r.reqW
	r.mu.Unlock()
	r.write(w, c)
}

func (r *svcServer) expire(c *svcCall, timeout time.Duration) {
	r.mu.Lock()
	for i, qc := range r.queue {
		if qc == c {
			r.queue = append(r.queue[:i], r.queue[i+1:]...)
			break
		}
	}
	r.mu.Unlock()
	if !r.take(c) {
		return
	}
	r.fail(c, callTimeout, fmt.Sprintf("picobridge: service %s: no reply from the DDS server within %v (services.queries_timeout)", r.name, timeout))
	r.next()
}

func (r *svcServer) onReply(smp *ddspath.Sample) {
	var c *svcCall
	body := smp.CDR
	r.mu.Lock()
	fast := r.fast
	if fast {
		c = r.flight
	}
	r.mu.Unlock()
	if !fast {
		h, b, err := ros2.SplitServiceHeader(smp.CDR)
		if err != nil {
			r.sv.m.dropped.WithLabelValues(replyMalformed).Inc()
			return
		}
		if h.GUID != r.handle {
			return // a reply to another client of the service: not ours
		}
		body = b
		r.mu.Lock()
		c = r.pending[h.Seq]
		r.mu.Unlock()
		if c == nil {
			r.sv.m.dropped.WithLabelValues(replyLate).Inc()
			return
		}
	} else if ros2.CheckEncapsulation(body) != nil {
		r.sv.m.dropped.WithLabelValues(replyMalformed).Inc()
		return
	}
	if c == nil {
		r.sv.m.dropped.WithLabelValues(replyNoCall).Inc()
		return
	}
	if !r.take(c) {
		r.sv.m.dropped.WithLabelValues(replyLate).Inc()
		return
	}
	c.timer.Stop()
	var opts *zenohpath.ReplyOptions
	if c.att != nil {
		a, _ := ros2.ParseZenohAttachment(c.att)
		a.Timestamp = time.Now()
		opts = &zenohpath.ReplyOptions{Attachment: a.Marshal()}
	}
	if err := c.q.Reply(r.key, body, opts); err != nil {
		r.sv.log.Debug("service reply not sent", "service", r.name, "err", err)
	}
	c.q.Finish()
	r.ok.Add(1)
	r.sv.m.calls.WithLabelValues(dirToDDS, callOK).Inc()
	r.sv.m.seconds.WithLabelValues(dirToDDS).Observe(time.Since(c.start).Seconds())
	if fast {
		r.next()
	}
}

func (r *svcServer) status() ServiceStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := ServiceStatus{Name: r.name, Type: r.reqType, Key: r.key, Direction: dirToDDS, Ready: r.qbl != nil,
		Pending: len(r.pending), Calls: r.calls.Load(), OK: r.ok.Load()}
	if r.fast {
		st.Vendor = "fastdds"
	}
	return st
}

// ---- Zenoh queryable → DDS server (for DDS clients) ----------------------------------

// svcClient serves the DDS clients of one service from a Zenoh queryable.
type svcClient struct {
	sv      *services
	name    string
	reqType string
	writers map[ddspath.GUID]bool // the DDS clients' request writers (guarded by sv.mu)
	readers map[ddspath.GUID]bool // their reply readers (guarded by sv.mu)

	mu       sync.Mutex
	key      string
	reqR     *ddspath.Reader
	repW     *ddspath.Writer
	inflight atomic.Int32
	seq      atomic.Int64
	gid      [16]byte // rmw_zenoh attachment GID of the gateway's client
	tok      *zenohpath.LivelinessToken
	calls    atomic.Uint64
	ok       atomic.Uint64
	vendors  sync.Map // publication handle → ddspath.GUID
}

func (c *svcClient) reconcile() {
	sv := c.sv
	sv.mu.Lock()
	clients := len(c.writers) > 0 && len(c.readers) > 0
	reqType := c.reqType
	sv.mu.Unlock()
	key := sv.keyOf(c.name, reqType)
	want := clients && !sv.localServer(c.name) && sv.b.s.data.HasMatchingQueryables(key)
	c.mu.Lock()
	open := c.reqR != nil
	c.mu.Unlock()
	switch {
	case want && !open:
		if err := c.open(key); err != nil {
			sv.warnOnce("svc-client-open"+c.name, "service route not created", "service", c.name, "err", err)
			return
		}
		sv.m.routes.WithLabelValues(dirToZenoh).Inc()
		sv.log.Info("service Zenoh queryable → DDS server", "service", c.name, "key", key, "type", reqType,
			"timeout", sv.cfg.QueriesTimeout.TimeoutFor(c.name))
	case !want && open:
		c.teardown()
	}
	if !clients && !open {
		sv.mu.Lock()
		if len(c.writers) == 0 && len(c.readers) == 0 && sv.clients[c.name] == c {
			delete(sv.clients, c.name)
		}
		sv.mu.Unlock()
	}
}

func (c *svcClient) open(key string) error {
	ud := c.sv.userData("serviceid")
	rd, err := c.sv.b.p.NewReader(ros2DDS(c.name, ros2.KindServiceRequest), c.reqType, svcQoS(ud), ddspath.WithQueue(1024, ddspath.DropNewest))
	if err != nil {
		return err
	}
	w, err := c.sv.b.p.NewWriter(ros2DDS(c.name, ros2.KindServiceReply), otherType(c.reqType), svcQoS(ud))
	if err != nil {
		_ = rd.Close()
		return err
	}
	g := c.sv.b.p.GUID()
	var tok *zenohpath.LivelinessToken
	if t, err := ros2.ServiceTypeFromDDS(c.reqType); err == nil {
		tok = c.sv.b.s.graph.announce(ros2.EntityServiceClient, c.name, t, "", svcQoS(nil))
	}
	c.mu.Lock()
	c.key, c.reqR, c.repW, c.tok = key, rd, w, tok
	copy(c.gid[:], g[:12])
	n := c.sv.csid.Load()
	c.gid[12], c.gid[13], c.gid[14], c.gid[15] = byte(n>>24), byte(n>>16), byte(n>>8), byte(n)
	c.mu.Unlock()
	c.sv.wg.Add(1)
	go func() {
		defer c.sv.wg.Done()
		for smp := range rd.C() {
			c.onRequest(rd, w, key, smp)
		}
	}()
	return nil
}

func (c *svcClient) teardown() {
	c.mu.Lock()
	rd, w, tok := c.reqR, c.repW, c.tok
	c.reqR, c.repW, c.tok = nil, nil, nil
	c.mu.Unlock()
	undeclareToken(tok)
	if rd == nil {
		return
	}
	_ = rd.Close()
	_ = w.Close()
	c.sv.m.routes.WithLabelValues(dirToZenoh).Dec()
	c.sv.log.Info("service DDS server for Zenoh removed", "service", c.name)
}

func (c *svcClient) count(result string) {
	c.sv.m.calls.WithLabelValues(dirToZenoh, result).Inc()
}

func (c *svcClient) writerGUID(rd *ddspath.Reader, handle uint64) ddspath.GUID {
	if g, ok := c.vendors.Load(handle); ok {
		return g.(ddspath.GUID)
	}
	g, err := rd.WriterGUID(handle)
	if err == nil {
		c.vendors.Store(handle, g)
	}
	return g
}

// onRequest turns one DDS request into a Zenoh get (on its own goroutine,
// at most services.max_pending at once).
func (c *svcClient) onRequest(rd *ddspath.Reader, w *ddspath.Writer, key string, smp *ddspath.Sample) {
	c.calls.Add(1)
	if c.writerGUID(rd, smp.PublicationHandle).Vendor() == ddspath.VendorFastDDS {
		c.count(callVendorUnsupported)
		c.sv.warnOnce("svc-fast-client"+c.name, "Fast DDS service client not served: its replies need the RTPS related sample identity, which Cyclone's C API cannot write (docs/services.md)",
			"service", c.name)
		return
	}
	h, body, err := ros2.SplitServiceHeader(smp.CDR)
	if err != nil {
		c.count(callBadPayload)
		return
	}
	if int(c.inflight.Add(1)) > c.sv.cfg.MaxPending {
		c.inflight.Add(-1)
		c.count(callTooManyPending)
		c.sv.warnOnce("svc-pending"+c.name, "DDS service calls refused: services.max_pending in flight", "service", c.name)
		return
	}
	start := smp.ReceivedAt
	timeout := c.sv.cfg.QueriesTimeout.TimeoutFor(c.name)
	opts := &zenohpath.GetOptions{Payload: body, Timeout: timeout, Priority: zenohpath.PriorityData}
	if c.sv.rmwZenoh() {
		opts.Target = zenohpath.QueryTargetAllComplete
		opts.Consolidation = zenohpath.ConsolidationModeNone
		opts.Attachment = ros2.ZenohAttachment{Seq: c.seq.Add(1), Timestamp: time.Now(), GID: c.gid}.Marshal()
	}
	if result := c.admit(key, opts); result != "" {
		c.inflight.Add(-1)
		c.count(result)
		return
	}
	replies, err := c.sv.b.s.data.Get(key, opts)
	if err != nil {
		c.inflight.Add(-1)
		c.count(callNoReply)
		return
	}
	c.sv.wg.Add(1)
	go func() {
		defer c.sv.wg.Done()
		defer c.inflight.Add(-1)
		result := callNoReply
		for {
			var rep zenohpath.Reply
			var more bool
			select {
			case rep, more = <-replies:
			case <-c.sv.done:
				return
			}
			if !more {
				break
			}
			if result == callOK {
				continue // the first OK reply answers the call (as zenoh-bridge-ros2dds)
			}
			s, ok := rep.Ok()
			if !ok {
				result = callErrorReply
				continue
			}
			cdr, err := ros2.JoinServiceHeader(s.Payload(), h)
			if err != nil {
				result = callBadReply
				continue
			}
			if err := w.Write(cdr, time.Time{}); err != nil {
				result = callWriteError
				continue
			}
			result = callOK
			c.ok.Add(1)
			c.sv.m.seconds.WithLabelValues(dirToZenoh).Observe(time.Since(start).Seconds())
		}
		if result == callNoReply && time.Since(start) >= timeout {
			result = callTimeout
		}
		c.count(result)
	}()
}

// admit applies the lanes' rules of the devices whose queryables the get
// on key reaches (bridge.Device.AdmitRequest): the route's criticality picks
// the lane and so the query's priority (express: real time, batched: data),
// and a request a device cannot take is refused. It returns "" when the
// request may go (to at least one device, or to no device at all), else the
// result to count; the refusal is logged once per service and result.
func (c *svcClient) admit(key string, opts *zenohpath.GetOptions) string {
	s := c.sv.b.s
	devs := s.devs.queryableDevices(key)
	if len(devs) == 0 {
		return ""
	}
	crit := s.gw.Routes().CriticalityOf(c.name)
	size := len(opts.Payload) + len(opts.Attachment)
	result, express := callTooLarge, false
	var refusal error
	admitted := 0
	for _, d := range devs {
		lane, err := d.AdmitRequest(key, size, crit)
		switch {
		case err == nil:
			admitted++
			express = express || lane == bridge.LaneExpress
		case errors.Is(err, bridge.ErrRequestSuspended):
			result, refusal = callSuspended, err
		default:
			refusal = err
		}
	}
	if admitted == 0 {
		c.sv.warnOnce("svc-admit"+result+c.name, "DDS service request not sent to the device (counted; a ROS client gets no error, it times out)",
			"service", c.name, "key", key, "result", result, "err", refusal)
		return result
	}
	if express {
		opts.Priority, opts.Express = zenohpath.PriorityRealTime, true
	}
	return ""
}

func (c *svcClient) status() ServiceStatus {
	c.mu.Lock()
	defer c.mu.Unlock()
	return ServiceStatus{Name: c.name, Type: c.reqType, Key: c.key, Direction: dirToZenoh, Ready: c.reqR != nil,
		Pending: int(c.inflight.Load()), Calls: c.calls.Load(), OK: c.ok.Load()}
}
