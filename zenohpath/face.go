package zenohpath

import (
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/picobridge/picobridge/zenohpath/keyexpr"
	"github.com/picobridge/picobridge/zenohpath/transport"
	"github.com/picobridge/picobridge/zenohpath/wire"
)

// link is what a face sends through: a transport session, or the in-process
// link of a Session. send must not call back into the Router; close may (it
// ends with Router.removeFace) and is never called with Router.mu held.
//
// sendShared is the fan-out path: one message bound for many faces. A
// transport link queues its encoding (shared.encoded, made once and shared
// by every face; transport.Session.SendShared takes its own reference on it,
// so the link keeps nothing of s); a link that needs the message itself (the
// in-process link, a diverted face) uses shared.m. Both are valid only
// during the call.
type link interface {
	send(m wire.NetworkMessage, o sendOptions) error
	sendShared(s *shared, o sendOptions) error
	close()
}

// shared is a message fanned out to several faces, with its encoding made
// on first use (so a fan-out that reaches only in-process or diverted faces
// never encodes). Used by one goroutine at a time. The router takes it from
// sharedPool (sharedPush) and gives it back with release once every face
// had it, so the steady PUSH path allocates neither the wrapper nor the
// encoding (TestForwardAllocs).
type shared struct {
	m   wire.NetworkMessage
	enc *transport.Encoded // nil until encoded
	// push holds m when the router built the PUSH itself (sharedPush).
	push wire.Push
}

var sharedPool = sync.Pool{New: func() any { return new(shared) }}

// sharedPush wraps a routed PUSH for fan-out; the caller releases it after
// the fan-out (p.Body may alias a receive buffer: release forgets it).
func sharedPush(p wire.Push) *shared {
	s := sharedPool.Get().(*shared)
	s.push = p
	s.m = &s.push
	return s
}

// encoded is the encoding of s.m (wire bytes of one network message) in a
// pooled, reference-counted buffer; valid until release. Never modify it.
func (s *shared) encoded() *transport.Encoded {
	if s.enc == nil {
		s.enc = transport.Encode(s.m)
	}
	return s.enc
}

// bytes is encoded().Bytes(): valid until release.
func (s *shared) bytes() []byte { return s.encoded().Bytes() }

// release drops the router's reference on the encoding (the transport
// sessions that queued it hold their own until they wrote it) and, for a
// sharedPush, gives s back to sharedPool.
func (s *shared) release() {
	if s.enc != nil {
		s.enc.Release()
		s.enc = nil
	}
	if s.m == &s.push {
		*s = shared{}
		sharedPool.Put(s)
	}
}

// sendOptions mirrors transport.SendOptions.
type sendOptions struct {
	Reliable bool
	Express  bool
	Block    bool
	Priority wire.Priority
	// Inline: the fan-out has this one face as its only target, so an
	// idle transport session may write it from the caller's goroutine
	// (transport.SendOptions.Inline; fanout sets it).
	Inline bool
}

// dataOptions maps a routed message's QoS (ext 0x21, §8.1) onto the send:
// express stays express, congestion control BLOCK waits for room (bounded by
// the transport's block timeout), DROP drops when the face is congested.
func dataOptions(q wire.QoS) sendOptions {
	return sendOptions{
		Reliable: true,
		Express:  q.Express(),
		Block:    q.CongestionControl() == wire.CongestionBlock,
		Priority: q.Priority(),
	}
}

// controlOptions is used for declarations, interests and their replies
// (Rust sends them as Control + Block, §8.1).
var controlOptions = sendOptions{Reliable: true, Block: true, Priority: wire.PriorityControl}

// face is one peer of the router. Fields after the first group are guarded by
// Router.mu.
type face struct {
	r        *Router
	id       uint64
	link     link
	zid      wire.ZID
	whatami  wire.WhatAmI
	upstream bool // we are the client of this face: declare our entities to it
	log      *slog.Logger
	// ident is what the transport's authentication established about the
	// peer (TLS certificate names, usrpwd user); zero for in-process faces.
	ident transport.Identity
	// acl is the access control that applies to the face (acl.go); nil:
	// everything allowed.
	acl *faceACL

	// congested is set when a BLOCK send timed out (the face is not
	// draining); until a send succeeds again, BLOCK sends to it are made as
	// DROP so that one stuck face costs the router one block timeout per
	// episode, not one per message (architecture invariant 1).
	congested atomic.Bool
	// declsSent counts the DECLARE messages queued to the face (FaceInfo).
	declsSent atomic.Int64
	// pushesSent counts the PUSH messages queued to the face (FaceInfo).
	pushesSent atomic.Int64
	// pushesRecv and putBytesRecv count the PUSH messages the face sent
	// the router on keys not starting with @ (probes and admin are verbatim
	// keys) and their PUT payload bytes (Face.Published).
	pushesRecv, putBytesRecv atomic.Int64

	closed     bool
	remoteKeys map[uint16]string            // key ids the peer declared (resolve M=1 from it)
	localKeys  map[uint16]string            // key ids we declared to the peer (resolve M=0 from it)
	ents       [numKinds]map[uint32]*entity // by the peer's entity id
	interests  map[uint32]*interest         // interests the peer sent us (Future part)
	sent       [numKinds]map[uint32]bool    // gids declared to this face
	pending    map[uint32]*query            // request ids we used towards this face
	originated map[*query]struct{}          // queries this face sent us, still open
	nextRid    uint32
	warned     map[string]bool // declaration refusals already logged at WARN, by "what/cause"

	// mesh: a router↔router session (mesh.go): link-state, sourced
	// declarations, NodeId routing.
	mesh bool
	// hidden: an internal session (the admin space's), left out of Faces.
	hidden bool

	// local: an in-process Session's face. Sessions read subscribers and
	// queryables from the router's tables (matching status), so only tokens
	// and DeclareFinal are sent to them in answer to their interests.
	local bool

	// upstream only: the interests we forwarded to it (upstream.go), by our
	// id; ready closes when it answered the ones replayed at connect.
	fwd          map[uint32]*fwdInterest
	nextFwd      uint32
	readyPending int
	ready        chan struct{}
	readyDone    bool
}

func newFace(r *Router, l link, zid wire.ZID, w wire.WhatAmI, upstream bool) *face {
	f := &face{
		r: r, link: l, zid: zid, whatami: w, upstream: upstream,
		remoteKeys: map[uint16]string{},
		localKeys:  map[uint16]string{},
		interests:  map[uint32]*interest{},
		pending:    map[uint32]*query{},
		originated: map[*query]struct{}{},
		warned:     map[string]bool{},
		fwd:        map[uint32]*fwdInterest{},
		ready:      make(chan struct{}),
	}
	_, f.local = l.(*localLink)
	f.ident = identityOf(l)
	for k := range f.ents {
		f.ents[k] = map[uint32]*entity{}
		f.sent[k] = map[uint32]bool{}
	}
	return f
}

// resolveCause turns a WireExpr received from this face into a canonical key
// (§9.1): scope 0 is no prefix; M=1 (MappingSender) means the peer declared the
// scope id, M=0 that we did.
// The second result is "" on success, else why it failed: dropUnresolved
// (the scope id is unknown) or dropInvalidKey (empty or malformed key).
func (f *face) resolveCause(w wire.WireExpr) (string, string) {
	key := w.Suffix
	if w.Scope != 0 {
		tbl := f.localKeys
		if w.Mapping == wire.MappingSender {
			tbl = f.remoteKeys
		}
		prefix, ok := tbl[w.Scope]
		if !ok {
			return "", dropUnresolved
		}
		key = prefix + w.Suffix
	}
	if key == "" {
		return "", dropInvalidKey
	}
	if !keyexpr.IsCanonical(key) {
		c, err := keyexpr.Canonize(key)
		if err != nil {
			return "", dropInvalidKey
		}
		key = c
	}
	return key, ""
}

// refuseDecl counts a declaration (what: subscriber, queryable, token,
// keyexpr, interest) refused for its key and logs it: at WARN the first time
// per face, declaration kind and cause, at DEBUG afterwards. Caller holds
// Router.mu.
func (f *face) refuseDecl(what string, id uint32, we wire.WireExpr, cause string) {
	f.r.metrics.droppedInc(cause)
	msg := "declaration refused: invalid key expression"
	if cause == dropUnresolved {
		msg = "declaration refused: unknown key id (scope) in key expression"
	}
	args := []any{"declaration", what, "id", id, "key", we.Suffix, "wire_expr", we.String(), "reason", cause}
	if k := what + "/" + cause; !f.warned[k] {
		f.warned[k] = true
		f.log.Warn(msg+" (further ones from this session are logged at debug)", args...)
		return
	}
	f.log.Debug(msg, args...)
}

// send sends m to the face and counts it; kind is the metrics label.
func (f *face) send(m wire.NetworkMessage, o sendOptions, kind string) {
	if o.Block && f.congested.Load() {
		o.Block = false
	}
	if f.sent1(f.link.send(m, o), kind) {
		f.r.metrics.routedInc(kind)
		switch kind {
		case kindDeclareLabel:
			f.declsSent.Add(1)
		case "push":
			f.pushesSent.Add(1)
		}
	}
}

// sendShared sends a fanned-out message (see link) and reports whether it
// was queued; the caller counts the routed messages (once per fan-out),
// failures are counted here.
func (f *face) sendShared(s *shared, o sendOptions, kind string) bool {
	if o.Block && f.congested.Load() {
		o.Block = false
	}
	ok := f.sent1(f.link.sendShared(s, o), kind)
	if ok && kind == "push" {
		f.pushesSent.Add(1)
	}
	return ok
}

// sent1 accounts for the result of one send: true when it was queued; a
// failure is counted with its reason (the congestion episode starts or
// continues on a block timeout).
func (f *face) sent1(err error, kind string) bool {
	switch {
	case err == nil:
		if f.congested.Load() {
			f.congested.Store(false)
			f.log.Info("face drains again")
		}
		return true
	case errors.Is(err, transport.ErrBlockTimeout):
		if !f.congested.Swap(true) {
			f.log.Warn("face congested: blocking sends to it become drops until it drains", "kind", kind)
		}
		f.r.metrics.droppedInc(dropCongestion)
	case errors.Is(err, transport.ErrTooLarge):
		f.r.metrics.droppedInc(dropTooLarge)
	case errors.Is(err, transport.ErrQueueFull), errors.Is(err, errLocalFull):
		f.r.metrics.droppedInc(dropQueueFull)
	case errors.Is(err, transport.ErrClosed), errors.Is(err, ErrClosed):
		f.r.metrics.droppedInc(dropClosed)
	default:
		f.r.metrics.droppedInc(dropSendFailed)
	}
	f.log.Debug("send failed", "kind", kind, "err", err)
	return false
}

func (f *face) String() string {
	return "face " + itoa(f.id) + " " + f.whatami.String() + " " + f.zid.String()
}

func itoa(v uint64) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + v%10)
		v /= 10
		if v == 0 {
			return string(b[i:])
		}
	}
}

// wireKey is the WireExpr the router sends: scope 0 and the full key, which
// every peer accepts (§12.3).
func wireKey(key string) wire.WireExpr { return wire.WireExpr{Suffix: key} }

// identityOf is the authenticated identity of a face's link (zero for the
// in-process link).
func identityOf(l link) transport.Identity {
	switch l := l.(type) {
	case sessionLink:
		return l.s.Identity()
	case *observedLink:
		return identityOf(l.inner)
	}
	return transport.Identity{}
}

// authID is the first of id.Names(), or "".
func authID(id transport.Identity) string {
	if n := id.Names(); len(n) > 0 {
		return n[0]
	}
	return ""
}
