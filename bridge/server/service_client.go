package server

// A bridged service whose client is on DDS: each DDS request becomes a Zenoh
// get, its reply a DDS reply.

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/picobridge/picobridge/bridge"
	"github.com/picobridge/picobridge/ddspath"
	"github.com/picobridge/picobridge/ddspath/ros2"
	"github.com/picobridge/picobridge/zenohpath"
)

// svcClient serves the DDS clients of one service from a Zenoh queryable.
type svcClient struct {
	sv      *services
	name    string
	reqType string
	writers endpointSet // the DDS clients' request writers (guarded by sv.mu)
	readers endpointSet // their reply readers (guarded by sv.mu)

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
	clients := c.writers.len() > 0 && c.readers.len() > 0
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
		if c.writers.len() == 0 && c.readers.len() == 0 && sv.clients[c.name] == c {
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
		tok = c.sv.b.s.graph.announce(ros2.EntityServiceClient, c.name, key, t, "", svcQoS(nil))
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
