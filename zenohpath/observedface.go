package zenohpath

// Observed faces: a listener whose accepted faces are reported to a
// FaceObserver (open, subscriber changes, close), a Face handle to send a
// message to one face or divert the PUTs routed to it, and
// Session.PublishRemote, which routes a locally originated PUSH to every
// subscribed face except the ones the caller skips. Nothing here changes how
// the router routes messages between faces.

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync/atomic"

	"github.com/picobridge/picobridge/zenohpath/transport"
	"github.com/picobridge/picobridge/zenohpath/wire"
)

// FaceObserver receives the life of every face accepted by ListenObserved.
// Calls for one face come in order (FaceOpened, then SubscriptionsChanged
// any number of times, then FaceClosed) from that session's receive
// goroutine: they must be quick and must not close the face.
type FaceObserver interface {
	FaceOpened(f Face)
	SubscriptionsChanged(f Face)
	FaceClosed(f Face)
}

// Face is a handle on one router face, for the gateway.
type Face struct {
	f  *face
	s  *transport.Session
	ol *observedLink
}

// DivertFunc takes a sample the router routes to a face (a PUT, with its
// full key; payload is only valid during the call) instead of the face's
// transport; it returns false to let the sample go to the transport.
type DivertFunc func(key string, payload []byte) bool

// SetDivert makes the router hand the PUTs it routes to this face to fn
// (the gateway's lanes) instead of sending them; nil restores plain
// routing. Messages sent with Face.Send are never diverted.
func (h Face) SetDivert(fn DivertFunc) {
	if h.ol == nil {
		return
	}
	if fn == nil {
		h.ol.divert.Store(nil)
		return
	}
	h.ol.divert.Store(&fn)
}

// observedLink is the link of a face accepted by ListenObserved.
type observedLink struct {
	inner  link
	divert atomic.Pointer[DivertFunc]
}

func (l *observedLink) send(m wire.NetworkMessage, o sendOptions) error {
	if l.diverted(m) {
		return nil
	}
	return l.inner.send(m, o)
}

// sendShared: a diverted PUT goes to the gateway decoded; anything else
// goes to the transport as the shared bytes.
func (l *observedLink) sendShared(s *shared, o sendOptions) error {
	if l.diverted(s.m) {
		return nil
	}
	return l.inner.sendShared(s, o)
}

// diverted hands m to the divert function if one is set and m is a PUT with
// a full key; true when the function took it.
func (l *observedLink) diverted(m wire.NetworkMessage) bool {
	d := l.divert.Load()
	if d == nil {
		return false
	}
	p, ok := m.(*wire.Push)
	if !ok || p.WireExpr.Scope != 0 {
		return false
	}
	put, ok := p.Body.(*wire.Put)
	return ok && (*d)(p.WireExpr.Suffix, put.Payload)
}

func (l *observedLink) close() { l.inner.close() }

// ID is the face's router-wide id.
func (h Face) ID() uint64 { return h.f.id }

// ZID is the peer's Zenoh id.
func (h Face) ZID() wire.ZID { return h.f.zid }

// WhatAmI is the peer's role.
func (h Face) WhatAmI() wire.WhatAmI { return h.f.whatami }

// Identity is what authentication established about the peer: TLS
// certificate names (mutual TLS), usrpwd user. A device's name in
// devices.list may be any of Identity().Names().
func (h Face) Identity() transport.Identity { return h.f.ident }

// Published is what the peer has published through the face since it
// opened, on keys not starting with @ (probe pongs, knob announcements and
// admin are not the application's data): PUSH messages and the bytes of
// their PUT payloads. The gateway
// meters a device's own sends from it (its TX, which the device's socket
// window caps).
func (h Face) Published() (pushes, bytes int64) {
	return h.f.pushesRecv.Load(), h.f.putBytesRecv.Load()
}

// Session is the transport session of the face (nil for in-process faces).
func (h Face) Session() *transport.Session { return h.s }

// Subscriptions lists the key expressions the face subscribed to, sorted.
func (h Face) Subscriptions() []string {
	r := h.f.r
	r.mu.Lock()
	out := make([]string, 0, len(h.f.ents[kindSub]))
	for _, e := range h.f.ents[kindSub] {
		out = append(out, e.key)
	}
	r.mu.Unlock()
	sort.Strings(out)
	return out
}

// Queryables lists the key expressions of the face's queryables, sorted.
func (h Face) Queryables() []string {
	r := h.f.r
	r.mu.Lock()
	out := make([]string, 0, len(h.f.ents[kindQbl]))
	for _, e := range h.f.ents[kindQbl] {
		out = append(out, e.key)
	}
	r.mu.Unlock()
	sort.Strings(out)
	return out
}

// SendOptions are the transport options of Face.Send.
type SendOptions = transport.SendOptions

// ErrFaceQueueFull is returned by Face.Send when the face's queue is full
// (or did not drain within the block timeout).
var ErrFaceQueueFull = errors.New("zenohpath: face queue full")

// Send sends one message to the face alone (counted as routed/dropped like
// any routed message). A full queue gives ErrFaceQueueFull.
func (h Face) Send(m wire.NetworkMessage, o SendOptions) error {
	l := h.f.link
	if h.ol != nil {
		l = h.ol.inner
	}
	err := l.send(m, sendOptions{Reliable: o.Reliable, Express: o.Express, Block: o.Block, Priority: o.Priority})
	switch {
	case err == nil:
		h.f.r.metrics.routedInc("push")
		return nil
	case errors.Is(err, transport.ErrQueueFull), errors.Is(err, transport.ErrBlockTimeout), errors.Is(err, errLocalFull):
		h.f.r.metrics.droppedInc(dropQueueFull)
		return fmt.Errorf("%w: %v", ErrFaceQueueFull, err)
	case errors.Is(err, transport.ErrClosed), errors.Is(err, ErrClosed):
		h.f.r.metrics.droppedInc(dropClosed)
	default:
		h.f.r.metrics.droppedInc(dropSendFailed)
	}
	return err
}

// ListenObserved is Listen with a FaceObserver told about every session
// accepted on the endpoint, except routers: a session whose remote is a
// router becomes a mesh face (or is refused) as with Listen.
func (r *Router) ListenObserved(ctx context.Context, endpoint string, obs FaceObserver) (*transport.Listener, error) {
	accept := func(s *transport.Session) transport.Handler {
		if s.PeerWhatAmI() == wire.WhatAmIRouter {
			// A router is no device: a mesh face (or refused), as
			// Router.accept does; unobserved.
			return r.accept(s)
		}
		// As Router.accept, with the face's link wrapped so that the
		// gateway may divert what is routed to it.
		fh := newFaceHandler(r)
		ol := &observedLink{inner: sessionLink{s}}
		f, ok := r.addFace(ol, s.PeerZID(), s.PeerWhatAmI(), false)
		if !ok {
			return nil
		}
		f.log.Info("session accepted", "remote", addrString(s), "batch", s.BatchSize(), "lease", s.PeerLease())
		fh.attach(f)
		face := Face{f: f, s: s, ol: ol}
		obs.FaceOpened(face)
		return &observedHandler{fh: fh, face: face, obs: obs}
	}
	return r.listen(ctx, endpoint, accept)
}

type observedHandler struct {
	fh   *faceHandler
	face Face
	obs  FaceObserver
}

func (h *observedHandler) HandleNetwork(s *transport.Session, m wire.NetworkMessage) {
	h.fh.HandleNetwork(s, m)
	if d, ok := m.(*wire.Declare); ok {
		switch d.Body.(type) {
		case *wire.DeclareSubscriber, *wire.UndeclareSubscriber:
			h.obs.SubscriptionsChanged(h.face)
		}
	}
}

func (h *observedHandler) HandleClose(s *transport.Session, err error) {
	h.fh.HandleClose(s, err)
	h.obs.FaceClosed(h.face)
}

// PublishRemote publishes a sample from the session's face to every other
// face with an intersecting subscriber for which skip(faceID) is false,
// without delivering it to the session's own subscribers (Zenoh's
// Locality::Remote), and to the routers of the mesh that subscribe. It
// returns how many faces other than mesh routers it went to.
func (s *Session) PublishRemote(key string, payload []byte, opts *PutOptions, skip func(faceID uint64) bool) (int, error) {
	k, err := canonKey(key)
	if err != nil {
		return 0, err
	}
	if opts == nil {
		opts = &PutOptions{}
	}
	sm := sharedPush(wire.Push{WireExpr: wireKey(k), Body: newPut(payload, opts.Attachment, opts.Encoding, opts.Timestamp)})
	m := &sm.push
	m.QoS, m.HasQoS = qosOf(opts.Priority, opts.CongestionControl, opts.Express)
	r, from := s.r, s.face
	r.mu.RLock()
	closed := r.closed || from.closed
	r.mu.RUnlock()
	if closed {
		sm.release()
		return 0, ErrClosed
	}
	rt := r.subTargets(k)
	o := dataOptions(m.EffectiveQoS())
	o.Reliable = opts.Reliability == ReliabilityReliable
	n, _ := r.fanout(sm, rt.targets(from), o, from, skip)
	if rt.mesh {
		// To the routers of the mesh that subscribe (mesh.go): a gateway
		// in a zenohd mesh published DDS samples to its own faces only.
		r.meshPush(from, k, m, o)
	}
	sm.release()
	return n, nil
}
