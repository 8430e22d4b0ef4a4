package linkemu

import (
	"errors"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// maxDatagram is the largest UDP payload read, in bytes (IPv4 limit).
const maxDatagram = 65535

// UDPProxy relays UDP datagrams between devices (clients of the listen
// address) and an upstream, through the emulated link. Each client
// address gets its own upstream socket (a mapping), so the upstream sees
// one peer per device session, as a NAT would. Every datagram is
// independently queued (bandwidth), lost (Gilbert–Elliott) or delayed.
// A Zenoh UDP link carries one batch per datagram, so a loss is the loss
// of one batch.
//
// Goroutines: one reader on the listen socket, one reader per mapping,
// one delay line per direction; all counted in wg and ended by Close.
type UDPProxy struct {
	*core
	ln       *net.UDPConn
	upstream *net.UDPAddr
	lines    [2]*delayLine

	mu       sync.Mutex
	sessions map[netip.AddrPort]*udpSession
	closed   bool

	done      chan struct{}
	closeOnce sync.Once
	wg        sync.WaitGroup
}

// udpSession is one client mapping.
type udpSession struct {
	client netip.AddrPort
	conn   *net.UDPConn // connected to the upstream
	last   atomic.Int64 // unix nanoseconds of the last datagram either way
}

// NewUDPProxy listens on listen (a 127.0.0.0/8 host:port; port 0 picks
// one) and relays to upstream (also loopback).
func NewUDPProxy(listen, upstream string, cfg Config) (*UDPProxy, error) {
	if err := CheckLoopback(listen); err != nil {
		return nil, err
	}
	if err := CheckLoopback(upstream); err != nil {
		return nil, err
	}
	up, err := net.ResolveUDPAddr("udp4", upstream)
	if err != nil {
		return nil, err
	}
	la, err := net.ResolveUDPAddr("udp4", listen)
	if err != nil {
		return nil, err
	}
	c, err := newCore("udp", cfg)
	if err != nil {
		return nil, err
	}
	ln, err := net.ListenUDP("udp4", la)
	if err != nil {
		return nil, err
	}
	p := &UDPProxy{
		core:     c,
		ln:       ln,
		upstream: up,
		sessions: map[netip.AddrPort]*udpSession{},
		done:     make(chan struct{}),
	}
	for _, d := range []Direction{ToDevice, ToGateway} {
		p.lines[d] = newDelayLine(0) // the link's queue bounds it
	}
	p.goroutine(func() { p.lines[ToGateway].run(p.done, p.toGateway) })
	p.goroutine(func() { p.lines[ToDevice].run(p.done, p.toDevice) })
	p.goroutine(p.readClients)
	return p, nil
}

func (p *UDPProxy) goroutine(f func()) {
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		f()
	}()
}

// Addr is the listen address, host:port.
func (p *UDPProxy) Addr() string { return p.ln.LocalAddr().String() }

// SetProfile switches the impairment at run time.
func (p *UDPProxy) SetProfile(pr Profile) error { return p.setProfile(pr) }

// Profile is the profile applied now.
func (p *UDPProxy) Profile() Profile { return p.currentProfile() }

// Stats is a snapshot of the counters.
func (p *UDPProxy) Stats() Stats { return p.stats() }

// Close stops the proxy and waits for its goroutines; datagrams still in
// the delay lines are discarded.
func (p *UDPProxy) Close() error {
	p.closeOnce.Do(func() {
		close(p.done)
		p.ln.Close()
		p.mu.Lock()
		p.closed = true
		for _, s := range p.sessions {
			s.conn.Close()
		}
		p.mu.Unlock()
	})
	p.wg.Wait()
	return nil
}

func (p *UDPProxy) readClients() {
	buf := make([]byte, maxDatagram)
	for {
		n, from, err := p.ln.ReadFromUDPAddrPort(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue // e.g. ICMP-induced errors; keep serving
		}
		now := time.Now()
		s := p.session(from)
		if s == nil {
			continue
		}
		s.last.Store(now.UnixNano())
		p.offer(ToGateway, s, buf[:n], now)
	}
}

// offer runs one datagram through the link and, unless it is dropped,
// into the delay line.
func (p *UDPProxy) offer(d Direction, s *udpSession, b []byte, now time.Time) {
	at, v := p.links[d].datagram(now, len(b), !p.cfg.UDPReorder)
	if v != deliver {
		return
	}
	pk := &packet{at: at, arrived: now, b: append([]byte(nil), b...), sess: s}
	p.lines[d].tryPush(pk) // unbounded line: never refuses
}

// session finds or creates the mapping of a client address.
func (p *UDPProxy) session(from netip.AddrPort) *udpSession {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	if s, ok := p.sessions[from]; ok {
		return s
	}
	conn, err := net.DialUDP("udp4", nil, p.upstream)
	if err != nil {
		return nil
	}
	s := &udpSession{client: from, conn: conn}
	s.last.Store(time.Now().UnixNano())
	p.sessions[from] = s
	p.active.Add(1)
	p.opened.Add(1)
	p.goroutine(func() { p.readUpstream(s) })
	return s
}

// readUpstream relays what the upstream sends to one mapping, and ends the
// mapping after UDPIdle without traffic.
func (p *UDPProxy) readUpstream(s *udpSession) {
	defer p.endSession(s)
	buf := make([]byte, maxDatagram)
	idle := p.cfg.UDPIdle
	var deadline time.Time
	for {
		if now := time.Now(); deadline.Sub(now) < idle*3/4 { // not one timer reset per datagram
			deadline = now.Add(idle)
			s.conn.SetReadDeadline(deadline)
		}
		n, err := s.conn.Read(buf)
		now := time.Now()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				if now.Sub(time.Unix(0, s.last.Load())) >= idle {
					return
				}
				continue
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue // ECONNREFUSED while the upstream is down: keep the mapping
		}
		s.last.Store(now.UnixNano())
		p.offer(ToDevice, s, buf[:n], now)
	}
}

func (p *UDPProxy) endSession(s *udpSession) {
	p.mu.Lock()
	if p.sessions[s.client] == s {
		delete(p.sessions, s.client)
		p.active.Add(-1)
	}
	p.mu.Unlock()
	s.conn.Close()
}

func (p *UDPProxy) toGateway(pk *packet) bool {
	if _, err := pk.sess.conn.Write(pk.b); err == nil {
		p.links[ToGateway].delivered(len(pk.b), pk.at.Sub(pk.arrived))
	}
	return true
}

func (p *UDPProxy) toDevice(pk *packet) bool {
	if _, err := p.ln.WriteToUDPAddrPort(pk.b, pk.sess.client); err == nil {
		p.links[ToDevice].delivered(len(pk.b), pk.at.Sub(pk.arrived))
	} else if errors.Is(err, net.ErrClosed) {
		return false
	}
	return true
}
