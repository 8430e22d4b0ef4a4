package linkemu

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"sync"
	"time"
)

// TCPProxy relays TCP connections between devices (clients of the listen
// address) and an upstream, through the emulated link. TCP cannot lose
// bytes, so the proxy emulates what TCP does about a lost segment: the
// packet (a Zenoh batch, see Framing) whose transmission the
// Gilbert–Elliott chain loses is held until the sender would notice and
// resend it (RTOConfig.Repair: by default Linux's RACK-TLP, about one
// round trip when packets follow it; a retransmission timeout, doubling,
// when none do), and everything behind it on that connection waits too
// (head-of-line blocking). Delay and jitter never reorder a connection's
// bytes: a packet is released no earlier than the one before it.
// Bandwidth is shared by all connections of a direction, as on one link.
//
// Half-close propagates: when one side shuts down writing, the other side
// gets the FIN after the bytes before it. An error on either side aborts
// both connections of the pair.
//
// Goroutines: the accept loop, and per connection pair one reader and one
// writer per direction plus one waiter; all counted in wg and ended by
// Close.
type TCPProxy struct {
	*core
	ln       *net.TCPListener
	upstream string

	mu     sync.Mutex
	pairs  map[*tcpPair]struct{}
	closed bool

	done      chan struct{}
	ctx       context.Context // cancelled by Close: aborts dials
	cancel    context.CancelFunc
	closeOnce sync.Once
	wg        sync.WaitGroup
}

// NewTCPProxy listens on listen (a 127.0.0.0/8 host:port; port 0 picks
// one) and relays each accepted connection to a new connection to
// upstream (also loopback).
func NewTCPProxy(listen, upstream string, cfg Config) (*TCPProxy, error) {
	if err := CheckLoopback(listen); err != nil {
		return nil, err
	}
	if err := CheckLoopback(upstream); err != nil {
		return nil, err
	}
	la, err := net.ResolveTCPAddr("tcp4", listen)
	if err != nil {
		return nil, err
	}
	c, err := newCore("tcp", cfg)
	if err != nil {
		return nil, err
	}
	ln, err := net.ListenTCP("tcp4", la)
	if err != nil {
		return nil, err
	}
	p := &TCPProxy{core: c, ln: ln, upstream: upstream, pairs: map[*tcpPair]struct{}{}, done: make(chan struct{})}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	p.goroutine(p.accept)
	return p, nil
}

func (p *TCPProxy) goroutine(f func()) {
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		f()
	}()
}

// Addr is the listen address, host:port.
func (p *TCPProxy) Addr() string { return p.ln.Addr().String() }

// SetProfile switches the impairment at run time; packets already
// scheduled keep their release times.
func (p *TCPProxy) SetProfile(pr Profile) error { return p.setProfile(pr) }

// Profile is the profile applied now.
func (p *TCPProxy) Profile() Profile { return p.currentProfile() }

// Stats is a snapshot of the counters.
func (p *TCPProxy) Stats() Stats { return p.stats() }

// Close stops accepting, aborts every connection pair and waits for all
// goroutines.
func (p *TCPProxy) Close() error {
	p.closeOnce.Do(func() {
		close(p.done)
		p.cancel()
		p.ln.Close()
		p.mu.Lock()
		p.closed = true
		for tp := range p.pairs {
			tp.abort()
		}
		p.mu.Unlock()
	})
	p.wg.Wait()
	return nil
}

func (p *TCPProxy) accept() {
	for {
		dev, err := p.ln.AcceptTCP()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			select {
			case <-p.done:
				return
			case <-time.After(10 * time.Millisecond): // e.g. EMFILE: back off
			}
			continue
		}
		p.goroutine(func() { p.relay(dev) })
	}
}

// tcpPair is one device connection and its upstream connection.
type tcpPair struct {
	dev, gw *net.TCPConn
	done    chan struct{} // closed by abort
	once    sync.Once
}

// abort ends the pair at once: both sockets are reset (an RST, as the
// failing side's peer would see through a real path), queued packets are
// discarded.
func (tp *tcpPair) abort() { tp.end(true) }

// finish closes both sockets once both directions have delivered their
// FIN; nothing is left to send.
func (tp *tcpPair) finish() { tp.end(false) }

func (tp *tcpPair) end(reset bool) {
	tp.once.Do(func() {
		close(tp.done)
		if reset {
			tp.dev.SetLinger(0)
			tp.gw.SetLinger(0)
		}
		tp.dev.Close()
		tp.gw.Close()
	})
}

// relay dials the upstream for one device connection and runs the pair
// until both directions are finished or one fails.
func (p *TCPProxy) relay(dev *net.TCPConn) {
	d := net.Dialer{Timeout: p.cfg.DialTimeout}
	c, err := d.DialContext(p.ctx, "tcp4", p.upstream)
	if err != nil {
		dev.SetLinger(0) // refused upstream: refuse the device too
		dev.Close()
		return
	}
	gw := c.(*net.TCPConn)
	dev.SetNoDelay(true)
	gw.SetNoDelay(true)
	tp := &tcpPair{dev: dev, gw: gw, done: make(chan struct{})}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		tp.abort()
		return
	}
	p.pairs[tp] = struct{}{}
	p.active.Add(1)
	p.opened.Add(1)
	p.mu.Unlock()

	var wg sync.WaitGroup
	for _, dir := range []Direction{ToGateway, ToDevice} {
		src, dst := dev, gw
		if dir == ToDevice {
			src, dst = gw, dev
		}
		line := newDelayLine(p.cfg.QueueBytes)
		wg.Add(2)
		p.goroutine(func() {
			defer wg.Done()
			p.readStream(tp, dir, src, line)
		})
		p.goroutine(func() {
			defer wg.Done()
			p.writeStream(tp, dir, dst, line)
		})
	}
	wg.Wait()
	tp.finish() // both directions done (or aborted already)
	p.mu.Lock()
	delete(p.pairs, tp)
	p.active.Add(-1)
	p.mu.Unlock()
}

// readStream cuts what src sends into packets, schedules each on the link
// keeping the connection's order, and queues it (waiting for room).
func (p *TCPProxy) readStream(tp *tcpPair, dir Direction, src *net.TCPConn, line *delayLine) {
	lk := p.links[dir]
	var last time.Time // release time of the previous packet
	emit := func(b []byte, now time.Time, eof bool) bool {
		at := now
		if !eof {
			at = lk.segment(now, len(b))
		}
		if at.Before(last) {
			at = last
		}
		last = at
		return line.push(&packet{at: at, arrived: now, b: b, eof: eof}, tp.done)
	}
	buf := make([]byte, 64<<10)
	var pending []byte // Zenoh framing: bytes of an incomplete batch
	for {
		n, err := src.Read(buf)
		now := time.Now()
		if n > 0 {
			var units [][]byte
			units, pending = p.cut(pending, buf[:n])
			for _, u := range units {
				if !emit(u, now, false) {
					return
				}
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				tp.abort()
				return
			}
			if len(pending) > 0 && !emit(pending, now, false) { // a truncated batch: pass it on
				return
			}
			emit(nil, now, true)
			return
		}
	}
}

// cut splits newly read bytes into packets according to the framing; with
// FramingZenoh it returns the bytes of an unfinished batch to keep.
func (p *TCPProxy) cut(pending, b []byte) (units [][]byte, rest []byte) {
	if p.cfg.Framing == FramingChunk {
		for len(b) > 0 {
			k := min(len(b), p.cfg.ChunkSize)
			units = append(units, append([]byte(nil), b[:k]...))
			b = b[k:]
		}
		return units, nil
	}
	pending = append(pending, b...)
	for len(pending) >= 2 {
		size := 2 + int(binary.LittleEndian.Uint16(pending))
		if len(pending) < size {
			break
		}
		units = append(units, pending[:size:size])
		pending = pending[size:]
	}
	if len(pending) == 0 {
		return units, nil
	}
	// Keep the tail in its own buffer so that emitted units do not alias it.
	return units, append([]byte(nil), pending...)
}

// writeStream writes queued packets to dst at their release times and
// propagates the half-close.
func (p *TCPProxy) writeStream(tp *tcpPair, dir Direction, dst *net.TCPConn, line *delayLine) {
	lk := p.links[dir]
	line.run(tp.done, func(pk *packet) bool {
		if pk.eof {
			if err := dst.CloseWrite(); err != nil {
				tp.abort()
			}
			return false
		}
		if _, err := dst.Write(pk.b); err != nil {
			tp.abort()
			return false
		}
		lk.delivered(len(pk.b), pk.at.Sub(pk.arrived))
		return true
	})
}
