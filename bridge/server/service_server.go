package server

// A bridged service whose server is on DDS: a Zenoh queryable that writes
// each query as a DDS request and answers with the matching reply.

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/picobridge/picobridge/ddspath"
	"github.com/picobridge/picobridge/ddspath/ros2"
	"github.com/picobridge/picobridge/zenohpath"
)

// svcServer bridges one DDS service server to a Zenoh queryable.
type svcServer struct {
	sv      *services
	name    string
	reqType string

	mu      sync.Mutex
	readers endpointSet // the DDS servers' request readers (guarded by sv.mu)
	writers endpointSet // their reply writers (guarded by sv.mu)
	fastDDS bool        // guarded by sv.mu

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
	return r.readers.len() > 0 && r.writers.len() > 0, r.fastDDS
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
	tok := r.sv.b.s.graph.announce(ros2.EntityServiceServer, r.name, r.key, t, "", svcQoS(nil))
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
	if r.readers.len() == 0 && r.writers.len() == 0 && sv.servers[r.name] == r {
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

// fail answers a detached call with an error reply and finishes it. The call
// is counted before the reply goes (here, in refuse and on the ok path), so a
// caller holding the reply finds it in picobridge_service_calls_total.
func (r *svcServer) fail(c *svcCall, result, msg string) {
	r.sv.m.calls.WithLabelValues(dirToDDS, result).Inc()
	_ = c.q.ReplyErr([]byte(msg), nil)
	c.q.Finish()
}

// refuse answers a query that was not detached.
func (r *svcServer) refuse(q *zenohpath.Query, result, msg string) {
	r.calls.Add(1)
	r.sv.m.calls.WithLabelValues(dirToDDS, result).Inc()
	_ = q.ReplyErr([]byte("picobridge: service "+r.name+": "+msg), nil)
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
	r.ok.Add(1)
	r.sv.m.calls.WithLabelValues(dirToDDS, callOK).Inc()
	r.sv.m.seconds.WithLabelValues(dirToDDS).Observe(time.Since(c.start).Seconds())
	if err := c.q.Reply(r.key, body, opts); err != nil {
		r.sv.log.Debug("service reply not sent", "service", r.name, "err", err)
	}
	c.q.Finish()
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
