package zenohpath

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/picobridge/picobridge/zenohpath/transport"
	"github.com/picobridge/picobridge/zenohpath/wire"
)

// sessionLink is a face's link over a transport session.
type sessionLink struct{ s *transport.Session }

func (l sessionLink) send(m wire.NetworkMessage, o sendOptions) error {
	return l.s.Send(m, transport.SendOptions{Reliable: o.Reliable, Express: o.Express, Block: o.Block, Priority: o.Priority})
}

func (l sessionLink) sendShared(m *shared, o sendOptions) error {
	return l.s.SendShared(m.encoded(), transport.SendOptions{Reliable: o.Reliable, Express: o.Express, Block: o.Block, Priority: o.Priority, Inline: o.Inline})
}

func (l sessionLink) close() { _ = l.s.Close(transport.ReasonShutdown) }

// faceHandler delivers a session's messages to its face. For dialled
// sessions the face is attached after Dial returns; messages that arrive
// earlier wait for it (set).
type faceHandler struct {
	r    *Router
	once sync.Once
	set  chan struct{}
	f    *face
}

func newFaceHandler(r *Router) *faceHandler { return &faceHandler{r: r, set: make(chan struct{})} }

func (h *faceHandler) attach(f *face) {
	h.f = f
	h.once.Do(func() { close(h.set) })
}

func (h *faceHandler) HandleNetwork(_ *transport.Session, m wire.NetworkMessage) {
	<-h.set
	if h.f != nil {
		h.r.handle(h.f, m)
	}
}

func (h *faceHandler) HandleClose(s *transport.Session, err error) {
	<-h.set
	if h.f != nil {
		h.f.log.Info("session closed", "reason", closeReason(err))
		h.r.removeFace(h.f)
	}
}

func closeReason(err error) string {
	var ce *transport.CloseError
	if errors.As(err, &ce) {
		return ce.Reason.String()
	}
	if err == nil {
		return ""
	}
	return err.Error()
}

// transportConfig is the transport configuration for our sessions.
func (r *Router) transportConfig(w wire.WhatAmI) transport.Config {
	c := r.tcfg
	c.ZID = r.zid
	c.WhatAmI = w
	if c.Logger == nil {
		c.Logger = r.log
	}
	return c
}

// Listen accepts Zenoh sessions on endpoint ("tcp/0.0.0.0:7447",
// "udp/127.0.0.1:7447"; port 0 picks one, see the Listener's Endpoint) and
// routes for them. The listener closes with the router. A UDP multicast
// endpoint is refused (CheckEndpoint, ErrMulticastEndpoint).
func (r *Router) Listen(ctx context.Context, endpoint string) (*transport.Listener, error) {
	return r.listen(ctx, endpoint, r.accept)
}

// listen accepts sessions on endpoint with accept and registers the listener
// with the router (closed with it; ErrClosed if the router already is).
func (r *Router) listen(ctx context.Context, endpoint string, accept func(*transport.Session) transport.Handler) (*transport.Listener, error) {
	if err := CheckEndpoint(endpoint); errors.Is(err, ErrMulticastEndpoint) { // syntax errors: the transport's, as before
		return nil, fmt.Errorf("zenohpath: listen: %w", err)
	}
	ln, err := transport.Listen(ctx, endpoint, r.transportConfig(r.whatami), accept)
	if err != nil {
		return nil, fmt.Errorf("zenohpath: listen %s: %w", endpoint, err)
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		_ = ln.Close()
		return nil, ErrClosed
	}
	r.closers = append(r.closers, func() { _ = ln.Close() })
	r.listeners = append(r.listeners, ln.Endpoint())
	r.mu.Unlock()
	r.log.Info("listening", "endpoint", ln.Endpoint())
	return ln, nil
}

// Endpoints lists the endpoints the router listens on (ports resolved).
func (r *Router) Endpoints() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.listeners...)
}

func (r *Router) accept(s *transport.Session) transport.Handler {
	if r.refuseUnsupported(s, false) {
		return nil
	}
	h := newFaceHandler(r)
	var f *face
	var ok bool
	if s.PeerWhatAmI() == wire.WhatAmIRouter && r.meshOn() {
		f, ok = r.addMeshFace(sessionLink{s}, s.PeerZID())
	} else {
		f, ok = r.addFace(sessionLink{s}, s.PeerZID(), s.PeerWhatAmI(), false)
	}
	if !ok {
		return nil
	}
	f.log.Info("session accepted", "remote", addrString(s), "batch", s.BatchSize(), "lease", s.PeerLease())
	h.attach(f)
	return h
}

func addrString(s *transport.Session) string {
	if a := s.RemoteAddr(); a != nil {
		return a.String()
	}
	return ""
}

// ErrClosed is returned by operations on a closed Router or Session.
var ErrClosed = errors.New("zenohpath: closed")

// ErrTooLarge is returned by Put, Delete and the other sends of a Session
// (and by the in-process link) for a message whose encoding is larger than
// the router's max message size (RouterConfig.Transport.MaxMessageSize,
// default transport.DefaultMaxMessageSize); counted in
// picobridge_router_dropped_total{reason="too_large"}. It matches
// transport.ErrTooLarge with errors.Is.
var ErrTooLarge = fmt.Errorf("zenohpath: message larger than the max message size: %w", transport.ErrTooLarge)

// upstreamReadyTimeout bounds how long a new upstream face waits for the
// DeclareFinals answering the interests replayed to it before it is used
// anyway.
const upstreamReadyTimeout = 3 * time.Second

// Connect dials endpoint as a client (an "upstream" router: we declare our
// entities to it and forward it our faces' interests, upstream.go) and keeps
// the connection: when it drops, it is dialled again (every retry, from
// 100 ms doubling to 5 s) until the router closes. With wait, Connect returns
// once the first session is up and the interests replayed to it are answered
// (at once when there are none), or the first dial error; without, it
// returns at once.
func (r *Router) Connect(ctx context.Context, endpoint string, wait bool) error {
	if err := CheckEndpoint(endpoint); errors.Is(err, ErrMulticastEndpoint) {
		return fmt.Errorf("zenohpath: connect: %w", err)
	}
	first := make(chan error, 1)
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return ErrClosed
	}
	r.wg.Add(1)
	r.mu.Unlock()
	go r.connectLoop(endpoint, first, wait)
	if !wait {
		return nil
	}
	select {
	case err := <-first:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (r *Router) connectLoop(endpoint string, first chan<- error, stopOnFirstError bool) {
	defer r.wg.Done()
	backoff := 100 * time.Millisecond
	reported := false
	report := func(err error) {
		if !reported {
			reported = true
			first <- err
		}
	}
	for {
		h := newFaceHandler(r)
		s, err := transport.Dial(r.ctx, endpoint, r.transportConfig(r.dialWhatAmI), h)
		if err != nil {
			h.attach(nil)
			if stopOnFirstError && !reported {
				report(fmt.Errorf("zenohpath: connect %s: %w", endpoint, err))
				return
			}
			r.log.Warn("connect failed", "endpoint", endpoint, "err", err, "retry_in", backoff)
			select {
			case <-r.done:
				report(ErrClosed)
				return
			case <-time.After(backoff):
			}
			backoff = min(backoff*2, 5*time.Second)
			continue
		}
		backoff = 100 * time.Millisecond
		f, ok := r.addDialledFace(s)
		if !ok {
			h.attach(nil)
			_ = s.Close(transport.ReasonShutdown)
			<-s.Done()
			report(ErrClosed)
			return
		}
		f.log.Info("connected upstream", "endpoint", endpoint, "batch", s.BatchSize())
		h.attach(f)
		select {
		case <-f.ready:
		case <-time.After(upstreamReadyTimeout):
			f.log.Warn("upstream did not answer our interest in time", "timeout", upstreamReadyTimeout)
		case <-s.Done():
		}
		report(nil)
		select {
		case <-s.Done():
		case <-r.done:
			_ = s.Close(transport.ReasonShutdown)
			<-s.Done()
			return
		}
		select {
		case <-r.done:
			return
		case <-time.After(backoff):
		}
	}
}

// addDialledFace registers a session we dialled: as an upstream face
// (we are its client or peer), or, when we dialled as a router, as a mesh
// face if the remote is a router too, else as an ordinary face we serve.
func (r *Router) addDialledFace(s *transport.Session) (*face, bool) {
	if r.dialWhatAmI != wire.WhatAmIRouter {
		return r.addFace(sessionLink{s}, s.PeerZID(), s.PeerWhatAmI(), true)
	}
	if s.PeerWhatAmI() == wire.WhatAmIRouter {
		return r.addMeshFace(sessionLink{s}, s.PeerZID())
	}
	f, ok := r.addFace(sessionLink{s}, s.PeerZID(), s.PeerWhatAmI(), false)
	if ok {
		r.mu.Lock()
		f.markReady()
		r.mu.Unlock()
	}
	return f, ok
}
