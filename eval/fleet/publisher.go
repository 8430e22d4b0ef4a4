package fleet

import (
	"context"
	"sync/atomic"
	"time"
)

// critPub is the critical stream of the fault runs: one raw Zenoh client session to the
// upstream router pushing a stamped sample (encodeFan) on the fan-out key at a fixed
// rate. Every tick takes a sequence number, sent or not: a tick whose session is down
// (the upstream router restarting) is a sample lost at the source, and the session is
// redialled at the next tick.
type critPub struct {
	addr  string
	size  int
	batch uint16
	// timeout bounds each write of a sample (0: 1 s); the partition test allows more, so
	// that a host stalling the process does not lose samples at the source.
	timeout time.Duration
	seq     atomic.Uint32 // next sequence number
	fails   atomic.Int64  // ticks whose sample could not be written
	done    chan struct{}
}

func startCritPub(ctx context.Context, addr string, size, batch int, hz float64) *critPub {
	p := &critPub{addr: addr, size: size, batch: uint16(max(batch, size+64)), done: make(chan struct{})}
	go p.run(ctx, hz)
	return p
}

func (p *critPub) run(ctx context.Context, hz float64) {
	defer close(p.done)
	payload := make([]byte, max(p.size, fanHeader))
	period := time.Duration(float64(time.Second) / hz)
	var s *rawSession
	defer func() {
		if s != nil {
			_ = s.close()
		}
	}()
	drain := func(s *rawSession) { // what the router sends the publisher (keep-alives)
		var b []byte
		for {
			var err error
			if b, err = readStreamBatch(s.br, b); err != nil {
				return
			}
		}
	}
	for next := time.Now(); ; next = next.Add(period) {
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Until(next)):
		}
		seq := p.seq.Add(1) - 1
		if s == nil {
			var err error
			if s, err = dialRaw(nil, p.addr, p.batch, 10*time.Second, period); err != nil {
				s = nil
				p.fails.Add(1)
				continue
			}
			go drain(s)
		}
		encodeFan(payload, seq, time.Now())
		timeout := p.timeout
		if timeout <= 0 {
			timeout = time.Second
		}
		if err := s.put(fanKey, payload, time.Now().Add(timeout)); err != nil {
			_ = s.close()
			s = nil
			p.fails.Add(1)
		}
	}
}

// next is the sequence number the next tick takes.
func (p *critPub) next() uint32 { return p.seq.Load() }

func (p *critPub) stop() { <-p.done }
