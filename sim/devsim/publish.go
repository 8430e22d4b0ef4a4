package devsim

import (
	"context"
	"time"

	"github.com/picobridge/picobridge/knobs"
	"github.com/picobridge/picobridge/zenohpath/transport"
	"github.com/picobridge/picobridge/zenohpath/wire"
)

// The publishers of a simulated device: one loop per publication, and the
// write of a send through the TX path (txpath.go).

// publishLoop publishes one publication at its rate.
func (d *Device) publishLoop(ctx context.Context, p *publisher) {
	t := time.NewTicker(p.cfg.Interval())
	defer t.Stop()
	for n := 0; p.cfg.Count == 0 || n < p.cfg.Count; n++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		d.publishOne(ctx, p)
	}
}

func (d *Device) publishOne(ctx context.Context, p *publisher) {
	now := time.Now()
	d.mu.Lock()
	p.st.Attempts++
	c := d.conn
	if c == nil || !c.matched(p.idx) {
		p.st.Filtered++ // write filter closed: pico sends nothing
		d.mu.Unlock()
		return
	}
	p.seq++
	put := &wire.Put{
		Payload:    buildSample(nil, now, d.cfg.Name, p.cfg.Size),
		Attachment: buildAttachment(nil, p.seq, now, p.gid),
	}
	push := wire.Push{WireExpr: wire.WireExpr{Scope: c.pubKeyID[p.idx], Mapping: wire.MappingSender}, Body: put}
	if p.cfg.Express {
		push.HasQoS = true
		push.QoS = wire.NewQoS(wire.PriorityData, wire.CongestionDrop, true)
	}
	d.mu.Unlock()
	// z_put returns when the sample is appended to the batch or, unbatched
	// and express, when its own send is written (txPath).
	d.tx.publish(ctx, c.stop, pendingMsg{push: push, size: push.Len(), reliable: !p.cfg.BestEffort, pub: p, c: c}, p.cfg.Express)
}

// write is the device's socket write of one send (txPath.write): the
// messages go to the session that was current when they were published.
func (d *Device) write(msgs []pendingMsg, ok, single bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for i := range msgs {
		m := &msgs[i]
		err := errNotSent
		if ok && m.c == d.conn {
			err = m.c.s.Send(&m.push, transport.SendOptions{Reliable: m.reliable, Express: single})
		}
		switch {
		case m.pub == nil && err == nil:
			d.pongs.Add(1)
		case m.pub == nil:
			d.pingDrops.Add(1)
		case err == nil:
			m.pub.st.Sent++
		default:
			m.pub.st.TxDrops++
		}
	}
}

// batchContent is what one batch of the device carries, bytes.
func (d *Device) batchContent() int {
	return d.model.BatchSize - knobs.StreamPrefixBytes - knobs.FrameHeaderBytes
}
