package devsim

import (
	"context"
	"time"

	"github.com/picobridge/picobridge/knobs"
	"github.com/picobridge/picobridge/zenohpath/keyexpr"
	"github.com/picobridge/picobridge/zenohpath/transport"
	"github.com/picobridge/picobridge/zenohpath/wire"
)

// The receive side of a simulated device: what arrives on its session
// (PUSH, DECLARE), its subscribers' rings, the application task that takes
// from them, and the probe responder's pongs (docs/devsim.md, "Receive: event-driven", "Probe pong").

// resolve turns a wire expression into a key (zenoh-wire.md §9.1): M=1
// (sender mapping) uses the router's ids, M=0 ours. Called with d.mu held.
func (c *conn) resolve(w wire.WireExpr) (string, bool) {
	if w.Scope == 0 {
		return w.Suffix, w.Suffix != ""
	}
	tbl := c.ownKeys
	if w.Mapping == wire.MappingSender {
		tbl = c.routerKeys
	}
	p, ok := tbl[w.Scope]
	return p + w.Suffix, ok
}

// handle is the device's read task for one network message.
func (d *Device) handle(ctx context.Context, c *conn, s *transport.Session, m wire.NetworkMessage) {
	if ctx.Err() != nil {
		return // stopping: the application is gone
	}
	if !c.inBatch {
		// The first message of a batch: the read task's recv has returned
		// (data ends it at once; receive is never paced).
		c.inBatch = true
		d.lock.arrived()
	}
	switch m := m.(type) {
	case *wire.Push:
		d.handlePush(c, s, m)
	case *wire.Declare:
		d.handleDeclare(c, m)
	case *wire.Request:
		// No queryables: every REQUEST gets its RESPONSE_FINAL (§9.3).
		_ = s.Send(&wire.ResponseFinal{ID: m.ID}, transport.SendOptions{Reliable: true, Express: true})
	}
}

// batchEnd: the read task has run the callbacks of one batch and goes back
// to recv; the application, woken by those callbacks, takes its samples.
func (d *Device) batchEnd(c *conn) {
	if !c.inBatch {
		d.lock.arrived() // a batch without network messages (KEEP_ALIVE)
	}
	c.inBatch = false
	if c.newSamples {
		c.newSamples = false
		if d.model.SpinPeriod == 0 {
			select {
			case d.appWake <- struct{}{}:
			default:
			}
		}
	}
}

func (d *Device) handlePush(c *conn, s *transport.Session, m *wire.Push) {
	now := time.Now()
	put, ok := m.Body.(*wire.Put)
	var events []SampleEvent
	var pong func()
	d.mu.Lock()
	defer func() {
		d.mu.Unlock()
		for _, e := range events {
			d.onSample(e)
		}
		if pong != nil {
			pong()
		}
	}()
	key, known := c.resolve(m.WireExpr)
	if !ok || !known {
		return
	}
	size := m.Len()
	// A message that did not fit one FRAME of the device's batch arrived
	// as fragments: zenoh-pico drops it when the reassembled size exceeds
	// Z_FRAG_MAX_SIZE (anchors.md §2.6; zenoh-wire.md §4.7).
	fragmented := size > d.model.BatchSize-knobs.StreamPrefixBytes-knobs.FrameHeaderBytes
	oversize := fragmented && size > d.model.FragMaxSize
	if key == d.pingKey && !d.cfg.NoProbeResponder {
		if oversize {
			return
		}
		d.pings.Add(1)
		ping := append([]byte(nil), put.Payload...)
		devRecv := uint64(now.Sub(d.started))
		if d.cfg.PongFrom == PongFromApp {
			// A responder in the application: the ping waits for the
			// application like any sample (ring: the pending pings).
			if len(d.pingQ) >= pingQueueDepth {
				d.pingDrops.Add(1)
				return
			}
			d.pingQ = append(d.pingQ, pingJob{ping: ping, devRecv: devRecv, c: c})
			c.newSamples = true
			return
		}
		// The pong goes out from the read task, inside the subscriber
		// callback, as the C responder does (docs/devsim.md "Probe pong"):
		// the read task is not in recv, so it does not wait for the window.
		pong = func() { d.sendPong(c, s, ping, devRecv) }
		return
	}
	var ev SampleEvent
	evReady := false
	event := func(sub *subscriber, outcome string) SampleEvent {
		if !evReady {
			ev = SampleEvent{Device: d.cfg.Name, SampleKey: key, Size: len(put.Payload), Received: now}
			ev.Stamp = sampleStamp(put.Payload)
			_, ev.Seq, ev.HasSeq = sampleSeq(put.Payload, put.Attachment)
			evReady = true
		}
		e := ev
		e.Key, e.Outcome = sub.cfg.Key, outcome
		return e
	}
	for _, sub := range d.subs {
		if !keyexpr.Intersects(sub.cfg.Key, key) {
			continue
		}
		switch {
		case oversize:
			sub.st.OversizeDrops++
			if d.onSample != nil {
				events = append(events, event(sub, OutcomeOversize))
			}
			continue
		case len(put.Payload) > sub.slot:
			sub.st.SlotDrops++
			if d.onSample != nil {
				events = append(events, event(sub, OutcomeSlot))
			}
			continue
		}
		sub.st.Received++
		if src, seq, ok := sampleSeq(put.Payload, put.Attachment); ok {
			if last, seen := sub.lastSeq[src]; seen {
				switch {
				case seq <= last:
					sub.st.OutOfOrder++
				default:
					sub.st.Gaps += seq - last - 1
					sub.lastSeq[src] = seq
				}
			} else {
				sub.lastSeq[src] = seq
			}
		}
		if len(sub.ring) >= d.model.RingDepth {
			sub.st.RingFullDrops++ // drop-newest, as zpico's SPSC ring
			if d.onSample != nil {
				events = append(events, event(sub, OutcomeRingFull))
			}
			continue
		}
		sub.ring = append(sub.ring, event(sub, OutcomeDelivered))
		c.newSamples = true
	}
}

func (d *Device) handleDeclare(c *conn, m *wire.Declare) {
	d.mu.Lock()
	defer d.mu.Unlock()
	switch b := m.Body.(type) {
	case *wire.DeclareKeyExpr:
		// pico resolves the body with sender mapping (zenoh-wire.md §9.1).
		w := b.WireExpr
		w.Mapping = wire.MappingSender
		if key, ok := c.resolve(w); ok {
			c.routerKeys[b.ID] = key
		}
	case *wire.UndeclareKeyExpr:
		delete(c.routerKeys, b.ID)
	case *wire.DeclareSubscriber:
		key, ok := c.resolve(b.WireExpr)
		if !ok {
			return
		}
		c.routerSubs[b.ID] = key
		// The write filter (zenoh-wire.md §12.4): aggregated replies carry
		// exactly the interest's key, others intersect it.
		for i, p := range d.pubs {
			if keyexpr.Intersects(p.cfg.Key, key) {
				c.match[i][b.ID] = true
			}
		}
	case *wire.UndeclareSubscriber:
		delete(c.routerSubs, b.ID)
		for i := range c.match {
			delete(c.match[i], b.ID)
		}
	case *wire.DeclareFinal:
		if m.HasInterestID {
			c.finals[m.InterestID] = true
		}
	}
}

func (c *conn) matched(i int) bool { return len(c.match[i]) > 0 }

// appLoop is the application's executor: woken by the subscriber callbacks
// of each batch (SpinPeriod 0), or every SpinPeriod, it takes every sample
// out of every subscriber ring. Without a flush thread it also flushes the
// TX batch when it spins (every SpinPeriod, or every FlushInterval when
// woken on arrival: spin_once's timeout).
func (d *Device) appLoop(ctx context.Context) {
	var tick <-chan time.Time
	if d.model.SpinPeriod > 0 {
		t := time.NewTicker(d.model.SpinPeriod)
		defer t.Stop()
		tick = t.C
	}
	spinFlush := d.model.TxBatch && !d.model.FlushThread
	var flushTick <-chan time.Time
	if spinFlush && d.model.SpinPeriod == 0 {
		t := time.NewTicker(d.model.FlushInterval)
		defer t.Stop()
		flushTick = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-d.appWake:
		case <-tick:
		case <-flushTick:
		}
		d.take()
		d.answerPings(ctx)
		if spinFlush {
			d.tx.flush(ctx, nil)
		}
	}
}

// take delivers every sample waiting in the rings to the application.
func (d *Device) take() {
	now := time.Now()
	var events []SampleEvent
	d.mu.Lock()
	for _, s := range d.subs {
		for _, e := range s.ring {
			s.st.Delivered++
			e.Delivered = now
			if !e.Stamp.IsZero() {
				s.hist.add(now.Sub(e.Stamp))
			}
			s.recv.add(now.Sub(e.Received))
			if d.onSample != nil {
				events = append(events, e)
			}
		}
		clear(s.ring)
		s.ring = s.ring[:0]
	}
	d.mu.Unlock()
	for _, e := range events {
		d.onSample(e)
	}
}

// answerPings is an application-level responder (PongFromApp): each pong
// is stamped (dev_send) and then put express, waiting for the socket like
// any send of the application.
func (d *Device) answerPings(ctx context.Context) {
	d.mu.Lock()
	jobs := d.pingQ
	d.pingQ = nil
	d.mu.Unlock()
	for _, j := range jobs {
		push, err := d.pongPush(j.c, j.ping, j.devRecv)
		if err != nil {
			continue
		}
		d.tx.publish(ctx, j.c.stop, pendingMsg{push: *push, size: push.Len(), c: j.c}, true)
	}
}

// pongPush builds the pong of one ping.
func (d *Device) pongPush(c *conn, ping []byte, devRecv uint64) (*wire.Push, error) {
	pong, err := d.resp.Respond(ping, devRecv, uint64(time.Since(d.started)))
	if err != nil {
		d.log.Debug("probe: bad ping", "err", err)
		return nil, err
	}
	return &wire.Push{
		WireExpr: wire.WireExpr{Scope: c.pongKeyID, Mapping: wire.MappingSender},
		NetExt:   wire.NetExt{HasQoS: true, QoS: wire.NewQoS(wire.PriorityRealTime, wire.CongestionDrop, true)},
		Body:     &wire.Put{Payload: pong},
	}, nil
}

// sendPong answers one probe ping from the read task: one express send,
// outside the TX path's locks and without waiting for the socket window
// (the read task is not in recv while its callback runs, so the socket is
// free; docs/devsim.md "Probe pong").
func (d *Device) sendPong(c *conn, s *transport.Session, ping []byte, devRecv uint64) {
	push, err := d.pongPush(c, ping, devRecv)
	if err != nil {
		return
	}
	if s.Send(push, transport.SendOptions{Express: true}) == nil {
		d.pongs.Add(1)
	} else {
		d.pingDrops.Add(1)
	}
}
