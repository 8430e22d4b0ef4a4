package transport

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/picobridge/picobridge/zenohpath/wire"
)

// Listener accepts sessions on one endpoint in the accepting (router) role.
type Listener struct {
	ep     Endpoint
	cfg    Config
	accept func(*Session) Handler
	key    cookieKey

	tcp     net.Listener
	udp     *net.UDPConn
	tlsConf *tls.Config // tls/ endpoints: the server configuration

	wg       sync.WaitGroup // accept/read loop + handshakes
	mu       sync.Mutex
	closed   bool
	links    map[link]struct{}     // links in handshake
	sessions map[*Session]struct{} // open sessions
	peers    map[netip.AddrPort]*udpPeerLink
	stop     func() bool
	hsFail   *hsFailures
	admit    *admission // Config.AdmitRate; nil = not paced
}

// Listen starts accepting sessions on endpoint ("tcp/host:port",
// "udp/host:port"; port 0 picks a free one, see Addr). For each link that
// completes INIT/OPEN, accept is called (on that session's read
// goroutine, before anything is delivered) and returns the session's
// Handler; returning nil refuses the session with CLOSE(MAX_SESSIONS).
// Cancelling ctx closes the Listener.
func Listen(ctx context.Context, endpoint string, cfg Config, accept func(*Session) Handler) (*Listener, error) {
	ep, err := ParseEndpoint(endpoint)
	if err != nil {
		return nil, err
	}
	if cfg.ZID.IsZero() {
		return nil, errors.New("transport: Config.ZID is required")
	}
	if accept == nil {
		return nil, errors.New("transport: nil accept function")
	}
	ln := &Listener{
		ep: ep, cfg: cfg.withDefaults(), accept: accept, key: newCookieKey(),
		links: map[link]struct{}{}, sessions: map[*Session]struct{}{}, peers: map[netip.AddrPort]*udpPeerLink{},
	}
	ln.hsFail = newHSFailures(ln.cfg.Logger, ln.cfg.Metrics)
	ln.admit = newAdmission(ln.cfg.AdmitRate, ln.cfg.AdmitBurst)
	if err := ln.cfg.UsrPwd.Validate(); err != nil {
		return nil, fmt.Errorf("transport: listen %s: %w", endpoint, err)
	}
	var lc net.ListenConfig
	switch ep.Proto {
	case "tls":
		// Fail closed: no listener without a readable certificate and key.
		tc, err := ln.cfg.TLS.withParams(ep.Params)
		if err == nil {
			ln.tlsConf, err = tc.ServerConfig()
		}
		if err != nil {
			return nil, fmt.Errorf("transport: listen %s: %w", endpoint, err)
		}
		fallthrough
	case "tcp":
		ln.tcp, err = lc.Listen(ctx, "tcp", ep.Addr)
		if err != nil {
			return nil, err
		}
		ln.wg.Add(1)
		go ln.acceptTCP()
	case "udp":
		pc, err := lc.ListenPacket(ctx, "udp", ep.Addr)
		if err != nil {
			return nil, err
		}
		ln.udp = pc.(*net.UDPConn)
		ln.wg.Add(1)
		go ln.readUDP()
	}
	// Close reads ln.stop under ln.mu, and the AfterFunc may already run
	// Close when ctx is done: assign it under the lock too.
	stop := context.AfterFunc(ctx, func() { _ = ln.Close() })
	ln.mu.Lock()
	ln.stop = stop
	ln.mu.Unlock()
	return ln, nil
}

// Addr is the local address (with the chosen port).
func (ln *Listener) Addr() net.Addr {
	if ln.tcp != nil {
		return ln.tcp.Addr()
	}
	return ln.udp.LocalAddr()
}

// Endpoint is the local address as a Zenoh locator ("tcp/127.0.0.1:7447").
func (ln *Listener) Endpoint() string { return ln.ep.Proto + "/" + ln.Addr().String() }

// Sessions returns the currently open sessions.
func (ln *Listener) Sessions() []*Session {
	ln.mu.Lock()
	defer ln.mu.Unlock()
	out := make([]*Session, 0, len(ln.sessions))
	for s := range ln.sessions {
		out = append(out, s)
	}
	return out
}

// Close stops accepting, closes every session of this Listener with
// ReasonShutdown (each peer gets CLOSE(GENERIC)) and waits until all their
// goroutines have exited and their HandleClose calls returned. Do not call
// it from a Handler of one of its sessions.
func (ln *Listener) Close() error {
	ln.mu.Lock()
	if ln.closed {
		ln.mu.Unlock()
		ln.wg.Wait()
		return nil
	}
	ln.closed = true
	if ln.stop != nil {
		ln.stop()
	}
	var err error
	if ln.tcp != nil {
		err = ln.tcp.Close()
	}
	// Links are closed after unlocking: closing a UDP peer link runs its
	// onEnd, which takes ln.mu (closing it here deadlocked Close, and with
	// it every handshake goroutine waiting for ln.mu).
	links := make([]link, 0, len(ln.links))
	for l := range ln.links {
		links = append(links, l)
	}
	sessions := make([]*Session, 0, len(ln.sessions))
	for s := range ln.sessions {
		sessions = append(sessions, s)
	}
	ln.mu.Unlock()
	for _, l := range links {
		_ = l.close()
	}
	for _, s := range sessions {
		_ = s.Close(ReasonShutdown)
	}
	// The UDP socket carries the sessions' CLOSE: close it after them.
	for _, s := range sessions {
		<-s.Done()
	}
	if ln.udp != nil {
		err = ln.udp.Close()
	}
	ln.wg.Wait()
	ln.hsFail.close()
	return err
}

func (ln *Listener) acceptTCP() {
	defer ln.wg.Done()
	var delay time.Duration
	for {
		c, err := ln.tcp.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Temporary failure (EMFILE, ...): back off.
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			ln.cfg.Logger.Warn("transport: accept failed", "err", err, "retry_in", delay)
			time.Sleep(delay)
			continue
		}
		delay = 0
		if d := ln.admit.delay(time.Now()); d > 0 {
			// Paced (admission.go): the links behind this one wait in
			// the listen backlog meanwhile.
			ln.cfg.Metrics.admissionDeferred(deferRate, d)
			time.Sleep(d)
		}
		ln.waitHandshakeSlot()
		if ln.tlsConf != nil {
			c = tls.Server(c, ln.tlsConf) // handshake on the link's own goroutine (run)
		}
		if !ln.serve(newStreamLink(c)) {
			// Closed, or refused: no goroutine, no buffer for it.
			_ = c.Close()
		}
	}
}

// waitHandshakeSlot waits, up to Config.HandshakeWait, while
// Config.MaxHandshakes links are in handshake (admission.go), polling every
// 2 ms; a wait is counted. It returns at once when the Listener closes.
func (ln *Listener) waitHandshakeSlot() {
	w := ln.cfg.HandshakeWait
	if w <= 0 {
		return
	}
	full := func() bool {
		ln.mu.Lock()
		defer ln.mu.Unlock()
		return !ln.closed && len(ln.links) >= ln.cfg.MaxHandshakes
	}
	if !full() {
		return
	}
	t0 := time.Now()
	for full() && time.Since(t0) < w {
		time.Sleep(2 * time.Millisecond)
	}
	ln.cfg.Metrics.admissionDeferred(deferHandshakes, time.Since(t0))
}

// serve registers l and runs handshake + session on a new goroutine. It
// returns false when the Listener is closed, or refuses l (counted) when
// Config.MaxHandshakes links are in handshake already; the caller closes l.
func (ln *Listener) serve(l link) bool {
	ln.mu.Lock()
	defer ln.mu.Unlock()
	if ln.closed {
		return false
	}
	if len(ln.links) >= ln.cfg.MaxHandshakes {
		ln.hsFail.add(hsRefused, l.remoteAddr().String(), fmt.Errorf("%d handshakes in progress (Config.MaxHandshakes)", len(ln.links)))
		return false
	}
	ln.links[l] = struct{}{}
	ln.wg.Add(1)
	go ln.run(l)
	return true
}

func (ln *Listener) run(l link) {
	defer ln.wg.Done()
	cfg := &ln.cfg
	deadline := time.Now().Add(cfg.OpenTimeout)
	limitRead(l, maxHandshakeBatch)
	var err error
	var tc *tls.Conn
	if sl, ok := l.(*tcpLink); ok {
		if tc, ok = sl.c.(*tls.Conn); ok {
			err = serverHandshake(tc, deadline)
		}
	}
	var p params
	if err == nil {
		p, err = acceptHandshake(l, cfg, &ln.key, deadline)
	}
	limitRead(l, 0)
	p.ident.LinkProtocol = ln.ep.Proto
	if tc != nil && err == nil {
		certIdentity(&p.ident, tc.ConnectionState())
	}
	ln.mu.Lock()
	delete(ln.links, l)
	closed := ln.closed
	ln.mu.Unlock()
	if err != nil {
		releaseRead(l)
		ln.hsFail.add(handshakeFailReason(err), l.remoteAddr().String(), err)
		cfg.Metrics.closedHandshake()
		_ = l.close()
		return
	}
	s := newSession(cfg, l, p, nopHandler{})
	s.onEnd = ln.forget
	ln.mu.Lock()
	if closed || ln.closed {
		ln.mu.Unlock()
		// Opened while the Listener was closing: tell the peer.
		h := &hs{l: l, deadline: time.Now().Add(closeGrace)}
		_ = h.write(&wire.Close{Session: true, Reason: ReasonShutdown.Wire()})
		releaseRead(l)
		_ = l.close()
		return
	}
	ln.sessions[s] = struct{}{}
	ln.mu.Unlock()
	s.start()
	h := ln.accept(s)
	if h == nil {
		s.shutdown(ReasonRejected, nil, true)
	} else {
		s.h = h
	}
	s.readLoop()
}

func (ln *Listener) forget(s *Session) {
	ln.mu.Lock()
	delete(ln.sessions, s)
	ln.mu.Unlock()
}

// readUDP demultiplexes datagrams by source address: a new address gets a
// udpPeerLink and a handshake; known addresses get their datagram queued.
func (ln *Listener) readUDP() {
	defer ln.wg.Done()
	buf := make([]byte, 0xffff)
	var lastGarbageLog time.Time // rate-limits the garbage log line to 1/s at INFO
	for {
		n, addr, err := ln.udp.ReadFromUDPAddrPort(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				ln.mu.Lock()
				for _, p := range ln.peers {
					defer p.close()
				}
				ln.mu.Unlock()
				return
			}
			ln.cfg.Logger.Warn("transport: UDP read failed", "err", err)
			time.Sleep(10 * time.Millisecond)
			continue
		}
		ln.mu.Lock()
		p, ok := ln.peers[addr]
		if !ok && !isInitSyn(buf[:n]) {
			// Not the start of a session: no peer link for it, so that it
			// cannot fail a handshake and take the next (valid) datagram
			// from that address down with it.
			ln.mu.Unlock()
			ln.cfg.Metrics.drop(dropUDPGarbage)
			level := slog.LevelDebug
			if now := time.Now(); now.Sub(lastGarbageLog) >= time.Second {
				lastGarbageLog, level = now, slog.LevelInfo
			}
			ln.cfg.Logger.Log(context.Background(), level, "transport: UDP datagram from an unknown source is not an InitSyn, dropped",
				"remote", addr.String(), "bytes", n)
			continue
		}
		if !ok && !ln.closed {
			p = &udpPeerLink{conn: ln.udp, addr: addr, in: make(chan []byte, udpPeerQueue), closed: make(chan struct{})}
			p.onEnd = func() {
				ln.mu.Lock()
				if ln.peers[addr] == p {
					delete(ln.peers, addr)
				}
				ln.mu.Unlock()
			}
			ln.peers[addr] = p
		}
		ln.mu.Unlock()
		if p == nil {
			continue
		}
		d := getRx(n)
		copy(d, buf[:n])
		select {
		case p.in <- d:
		default:
			putRx(d)
			ln.cfg.Metrics.drop(dropUDPQueueFull)
		}
		if !ok && !ln.serve(p) {
			_ = p.close()
		}
	}
}

// isInitSyn reports whether datagram d is a batch that starts with an
// InitSyn, the only thing that may open a UDP session.
func isInitSyn(d []byte) bool {
	var p wire.Parser
	t, _, err := p.Transport(d)
	_, ok := t.(*wire.InitSyn)
	return err == nil && ok
}

type nopHandler struct{}

func (nopHandler) HandleNetwork(*Session, wire.NetworkMessage) {}
func (nopHandler) HandleClose(*Session, error)                 {}

// Dial opens a session to endpoint in the opening role (Config.WhatAmI:
// set WhatAmIClient or WhatAmIPeer), runs INIT/OPEN within
// Config.OpenTimeout (and ctx), and starts the session with h. ctx only
// bounds the dial and handshake.
func Dial(ctx context.Context, endpoint string, cfg Config, h Handler) (*Session, error) {
	ep, err := ParseEndpoint(endpoint)
	if err != nil {
		return nil, err
	}
	if cfg.ZID.IsZero() {
		return nil, errors.New("transport: Config.ZID is required")
	}
	if h == nil {
		return nil, errors.New("transport: nil Handler")
	}
	cfg = cfg.withDefaults()
	if err := cfg.UsrPwd.Validate(); err != nil {
		return nil, fmt.Errorf("transport: dial %s: %w", endpoint, err)
	}
	var tlsConf *tls.Config
	if ep.Proto == "tls" {
		host, _, _ := net.SplitHostPort(ep.Addr)
		tcfg, err := cfg.TLS.withParams(ep.Params)
		if err == nil {
			tlsConf, err = tcfg.ClientConfig(host)
		}
		if err != nil {
			return nil, fmt.Errorf("transport: dial %s: %w", endpoint, err)
		}
	}
	deadline := time.Now().Add(cfg.OpenTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	var d net.Dialer
	dctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	netw := ep.Proto
	if netw == "tls" {
		netw = "tcp"
	}
	c, err := d.DialContext(dctx, netw, ep.Addr)
	if err != nil {
		return nil, err
	}
	var ident Identity
	ident.LinkProtocol = ep.Proto
	if tlsConf != nil {
		tc, err := dialTLS(dctx, c, tlsConf)
		if err != nil {
			_ = c.Close()
			return nil, fmt.Errorf("transport: dial %s: %w", endpoint, err)
		}
		certIdentity(&ident, tc.ConnectionState())
		c = tc
	}
	var l link
	if ep.Proto != "udp" {
		l = newStreamLink(c)
	} else {
		l = newUDPConnLink(c.(*net.UDPConn))
	}
	// Closing the link aborts the handshake when ctx is cancelled.
	stop := context.AfterFunc(dctx, func() { _ = l.close() })
	p, err := openHandshake(l, &cfg, deadline)
	if !stop() {
		if err == nil {
			err = fmt.Errorf("transport: dial %s: %w", endpoint, dctx.Err())
		}
	}
	if err != nil {
		releaseRead(l)
		_ = l.close()
		return nil, err
	}
	p.ident = ident
	s := newSession(&cfg, l, p, h)
	s.start()
	go s.readLoop()
	return s, nil
}
