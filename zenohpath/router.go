package zenohpath

import (
	"context"
	"crypto/rand"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/picobridge/picobridge/zenohpath/keyexpr"
	"github.com/picobridge/picobridge/zenohpath/transport"
	"github.com/picobridge/picobridge/zenohpath/wire"
)

// maxRouteCache bounds the PUSH route cache (entries, one per distinct key).
const maxRouteCache = 4096

// DefaultQueryTimeout bounds a routed query whose REQUEST carries no Timeout
// ext (zenoh-pico Z_GET_TIMEOUT_DEFAULT and Rust's default: 10 s, §14.2).
const DefaultQueryTimeout = 10 * time.Second

// RouterConfig configures a Router. The zero value is usable.
type RouterConfig struct {
	// ZID is the router's Zenoh ID; zero = 16 random bytes.
	ZID wire.ZID
	// Logger receives router logs; nil = discard.
	Logger *slog.Logger
	// Metrics is optional (see NewMetrics).
	Metrics *Metrics
	// QueryTimeout applies to REQUESTs without a Timeout ext; 0 = DefaultQueryTimeout.
	QueryTimeout time.Duration
	// WhatAmI is the role announced to the sessions we accept: router (the
	// zero value) or peer.
	WhatAmI wire.WhatAmI
	// DialAs is the role announced when we connect to an upstream router:
	// client (the zero value means client) or peer.
	DialAs wire.WhatAmI
	// ACL is the access control of the transport faces (NewACL; acl.go);
	// nil: everything allowed.
	ACL *ACL
	// DialAsRouter makes Connect dial as a router (zenohd's way, overriding
	// DialAs) on a router that announces WhatAmI router: a router dialled
	// so becomes a mesh face (link-state, mesh.go), any other remote an
	// ordinary face that we serve as its router.
	DialAsRouter bool
	// Transport configures every session (lease, batch size, queues...);
	// ZID and WhatAmI are set by the router. Transport.MaxMessageSize
	// (0 = transport.DefaultMaxMessageSize, 8 MiB) also bounds what the
	// in-process sessions may send and receive (ErrTooLarge).
	Transport transport.Config
	// TransportWeights are our link weights towards neighbour routers, by
	// zid: zenohd's routing.router.linkstate.transport_weights
	// ([{dst_zid, weight}], weight 1..65535; 0 = unset, the entry is
	// ignored). They go to the other routers in our link-state (the H
	// block, zenoh-mesh-auth.md §1.2) and the cost of an edge is the
	// larger of its two ends' weights, 100 when neither sets one (§1.6).
	// Only used when WhatAmI is router; nil = none.
	TransportWeights map[wire.ZID]uint16
}

// Router routes Zenoh network messages between faces. Create it with
// NewRouter; attach transport sessions with Serve/Listen/Connect (server.go) or
// in-process sessions with Open.
type Router struct {
	zid          wire.ZID
	log          *slog.Logger
	metrics      *Metrics
	queryTimeout time.Duration
	whatami      wire.WhatAmI
	dialWhatAmI  wire.WhatAmI
	tcfg         transport.Config
	maxMsg       int             // max encoded network message, bytes (Transport.MessageSizeLimit)
	acl          *ACL            // nil: no access control
	ctx          context.Context // cancelled by Close
	cancel       context.CancelFunc

	// mu guards the tables below. The PUSH path takes it shared (RLock) for a
	// route-cache hit; everything that changes a table takes it exclusively.
	mu       sync.RWMutex
	closed   bool
	faces    map[uint64]*face
	nextFace uint64
	// ups are the upstream faces; ints indexes every face's Future
	// interests by key (entindex.go).
	ups     map[uint64]*face
	ints    intIndex
	ents    [numKinds]map[uint32]*entity // by gid
	idx     [numKinds]entIndex           // the same, by key (entindex.go)
	nextGID uint32
	// subRoutes caches, per PUSH key, the route (subRoute): the faces with an intersecting
	// subscriber (all faces; the sender is skipped when routing). Cleared on
	// every subscriber change; bounded by maxRouteCache entries.
	subRoutes map[string]*subRoute
	// mesh runs the router↔router protocol (mesh.go); nil unless we
	// announce ourselves as a router.
	mesh *meshState

	wg        sync.WaitGroup // goroutines owned by the router (listeners, dialers)
	closers   []func()       // run by Close (listeners, upstream sessions)
	listeners []string       // endpoints listened on
	done      chan struct{}
}

// NewRouter creates a router with no faces.
func NewRouter(cfg RouterConfig) *Router {
	if cfg.ZID.IsZero() {
		cfg.ZID = RandomZID()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.QueryTimeout <= 0 {
		cfg.QueryTimeout = DefaultQueryTimeout
	}
	r := &Router{
		zid:          cfg.ZID,
		log:          cfg.Logger,
		metrics:      cfg.Metrics,
		queryTimeout: cfg.QueryTimeout,
		whatami:      cfg.WhatAmI,
		dialWhatAmI:  cfg.DialAs,
		tcfg:         cfg.Transport,
		maxMsg:       cfg.Transport.MessageSizeLimit(),
		acl:          cfg.ACL,
		faces:        map[uint64]*face{},
		ups:          map[uint64]*face{},
		ints:         newIntIndex(),
		subRoutes:    map[string]*subRoute{},
		done:         make(chan struct{}),
	}
	if r.dialWhatAmI == wire.WhatAmIRouter {
		r.dialWhatAmI = wire.WhatAmIClient
	}
	if r.whatami == wire.WhatAmIRouter {
		r.mesh = newMesh(r)
		r.mesh.net.SetLinkWeights(cfg.TransportWeights) // no link yet: nothing to send
		if cfg.DialAsRouter {
			r.dialWhatAmI = wire.WhatAmIRouter
		}
	}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	for k := range r.ents {
		r.ents[k] = map[uint32]*entity{}
		r.idx[k] = newEntIndex()
	}
	return r
}

// RandomZID returns a random 16-byte Zenoh ID.
func RandomZID() wire.ZID {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[15] |= 1 // non-zero, full length
	return wire.MustZID(b[:])
}

// MaxMessageSize is the largest network message the router's sessions
// send or accept, in bytes (encoded; RouterConfig.Transport.MaxMessageSize).
func (r *Router) MaxMessageSize() int { return r.maxMsg }

// ZID returns the router's Zenoh ID.
func (r *Router) ZID() wire.ZID { return r.zid }

// Close closes every listener and face and waits for the router's goroutines.
func (r *Router) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		r.wg.Wait()
		return nil
	}
	r.closed = true
	close(r.done)
	r.cancel()
	closers := r.closers
	r.closers = nil
	faces := make([]*face, 0, len(r.faces))
	for _, f := range r.faces {
		faces = append(faces, f)
	}
	r.mu.Unlock()
	for _, c := range closers {
		c()
	}
	for _, f := range faces {
		f.link.close()
		r.removeFace(f)
	}
	r.wg.Wait()
	return nil
}

// FaceInfo describes one face, for status and tests.
type FaceInfo struct {
	ID          uint64 `json:"id"`
	ZID         string `json:"zid"`
	WhatAmI     string `json:"whatami"`
	Upstream    bool   `json:"upstream"`
	Subscribers int    `json:"subscribers"`
	Queryables  int    `json:"queryables"`
	Tokens      int    `json:"tokens"`
	Interests   int    `json:"interests"`
	Pending     int    `json:"pending_queries"`
	// DeclarationsSent counts the DECLARE messages (declarations,
	// undeclarations, DeclareFinal) the router queued to the face.
	DeclarationsSent int64 `json:"declarations_sent"`
	// PushesSent counts the PUSH messages (publications) queued to the
	// face: on a router face, what the mesh routed through it.
	PushesSent int64 `json:"pushes_sent"`
	// AuthID is the first name authentication gave the peer (usrpwd user,
	// else TLS certificate CN or SAN; transport.Identity.Names); "" when none.
	AuthID string `json:"auth_id,omitempty"`
}

// Faces lists the open faces.
func (r *Router) Faces() []FaceInfo {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]FaceInfo, 0, len(r.faces))
	for _, f := range r.faces {
		if f.hidden {
			continue
		}
		out = append(out, FaceInfo{
			ID: f.id, ZID: f.zid.String(), WhatAmI: f.whatami.String(), Upstream: f.upstream,
			Subscribers: len(f.ents[kindSub]), Queryables: len(f.ents[kindQbl]), Tokens: len(f.ents[kindTok]),
			Interests: len(f.interests), Pending: len(f.pending), DeclarationsSent: f.declsSent.Load(),
			PushesSent: f.pushesSent.Load(),
			AuthID:     authID(f.ident),
		})
	}
	return out
}

// faceLogLevel is the level of a face's "face opened" and "face closed"
// lines: Debug for the router's own in-process sessions (their zid is the
// router's: the admin space, a gateway's bridge), which an operator did not
// configure and cannot act on; Info for every other face.
func (r *Router) faceLogLevel(f *face) slog.Level {
	if f.zid == r.zid {
		return slog.LevelDebug
	}
	return slog.LevelInfo
}

// addFace registers a face for link l. For an upstream face it declares every
// entity of the other (non-upstream) faces and forwards their interests
// (upstream.go); f.ready closes when it answered them.
func (r *Router) addFace(l link, zid wire.ZID, w wire.WhatAmI, upstream bool) (*face, bool) {
	f := newFace(r, l, zid, w, upstream)
	f.acl = r.acl.forFace(f)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, false
	}
	r.nextFace++
	f.id = r.nextFace
	f.log = r.log.With("face", f.id, "zid", zid.String(), "whatami", w.String())
	r.faces[f.id] = f
	if upstream {
		r.ups[f.id] = f
	}
	r.metrics.faceAdded(1)
	f.log.Log(context.Background(), r.faceLogLevel(f), "face opened", "upstream", upstream)
	if upstream {
		for k := range r.ents {
			for _, e := range sortedEntities(r.ents[k]) {
				if !e.face.upstream && e.face.zid != zid {
					r.declareTo(f, e, nil)
				}
			}
		}
		r.replayTo(f)
		clear(r.subRoutes) // PUSHes go to an upstream face until its interests filter them
	}
	return f, true
}

// removeFace forgets a face: undeclares everything it declared towards the
// faces that were told, finishes the queries it was a target of, and cancels
// the ones it originated. Safe to call more than once.
func (r *Router) removeFace(f *face) {
	r.mu.Lock()
	if f.closed {
		r.mu.Unlock()
		return
	}
	f.closed = true
	delete(r.faces, f.id)
	delete(r.ups, f.id)
	r.metrics.faceAdded(-1)
	for k := range f.ents {
		for _, e := range sortedEntities(f.ents[k]) {
			r.removeEntity(e)
		}
	}
	for k := range f.sent {
		for gid := range f.sent[k] {
			if e := r.ents[k][gid]; e != nil {
				e.told = slices.DeleteFunc(e.told, func(g *face) bool { return g == f })
			}
		}
	}
	for _, in := range f.sortedInterests() {
		r.unforward(in)
		r.ints.remove(in)
	}
	f.interests = map[uint32]*interest{}
	if f.upstream {
		r.upstreamGone(f)
	}
	if f.mesh {
		r.meshFaceGone(f)
	}
	var finals []*query
	for rid, q := range f.pending {
		delete(f.pending, rid)
		delete(q.targets, f)
		if len(q.targets) == 0 && q.finish() {
			finals = append(finals, q)
		}
	}
	for q := range f.originated {
		q.cancel()
	}
	if !f.readyDone {
		f.readyDone = true
		close(f.ready)
	}
	r.mu.Unlock()
	f.log.Log(context.Background(), r.faceLogLevel(f), "face closed")
	for _, q := range finals {
		q.sendFinal()
	}
}

// handle routes one network message received from f. m is only valid during
// the call.
func (r *Router) handle(f *face, m wire.NetworkMessage) { r.route(f, m, true) }

// route is handle with the reliability of the message: transport sessions
// do not report the FRAME's R flag, so their messages count as reliable;
// in-process sessions pass their publisher's choice.
func (r *Router) route(f *face, m wire.NetworkMessage, reliable bool) {
	switch m := m.(type) {
	case *wire.Push:
		r.handlePush(f, m, reliable)
	case *wire.Request:
		r.handleRequest(f, m)
	case *wire.Response:
		r.handleResponse(f, m)
	case *wire.ResponseFinal:
		r.handleResponseFinal(f, m)
	case *wire.Declare:
		if f.mesh {
			r.meshHandleDeclare(f, m)
		} else {
			r.handleDeclare(f, m)
		}
	case *wire.Interest:
		if !f.mesh { // routers ignore interests from routers (zenoh-mesh-auth.md §2.5)
			r.handleInterest(f, m)
		}
	case *wire.NetworkOAM:
		if f.mesh {
			r.meshHandleOAM(f, m)
		} // from clients, peers and devices: not used (§9.8)
	}
}

// handlePush sends a PUSH to every other face with an intersecting
// subscriber, each once, with the sender's QoS (§12.3). The routed PUSH
// (scope 0, full key) is encoded once and its bytes shared by every
// transport face (issue 11 item 2). zenohd caches the route per resource
// and drops its tables lock before sending, then hands each face a Push
// with that face's wire expression and a reference-counted clone of the
// payload, which each face's pipeline serializes into its own batch; since
// we send every face the same scope-0 key and no NodeId, we can share the
// encoded bytes themselves.
func (r *Router) handlePush(f *face, m *wire.Push, reliable bool) {
	r.mu.RLock()
	if f.closed {
		r.mu.RUnlock()
		return
	}
	key, rt, cause := r.resolvePush(f, m.WireExpr)
	if cause != "" {
		r.mu.RUnlock()
		r.metrics.droppedInc(cause)
		f.log.Debug("push: dropped, bad key", "reason", cause, "wire_expr", m.WireExpr.String())
		return
	}
	if !strings.HasPrefix(key, "@") { // verbatim keys (probes, admin) are not the peer's data
		f.pushesRecv.Add(1)
		if put, ok := m.Body.(*wire.Put); ok {
			f.putBytesRecv.Add(int64(len(put.Payload)))
		}
	}
	if r.meshLooped(f, m.NetExt) {
		r.mu.RUnlock()
		r.metrics.droppedInc(dropLoop)
		f.log.Debug("push: dropped, our own came back (routers disagree on a tree)", "key", key)
		return
	}
	r.mu.RUnlock()
	act := pushAction(m)
	if !r.permit(f, aclIngress, act, key) {
		return
	}
	if rt == nil {
		rt = r.subTargets(key)
	}
	targets := r.permitTargets(rt.targets(f), f, act, key)
	local := len(targets) > 1 || len(targets) == 1 && targets[0] != f
	if !local && !rt.mesh {
		r.metrics.droppedInc(dropNoRoute)
		return
	}
	o := dataOptions(m.EffectiveQoS())
	o.Reliable = reliable
	if local {
		sm := sharedPush(wire.Push{WireExpr: wireKey(key), NetExt: routedExt(m.NetExt), Body: m.Body})
		r.fanout(sm, targets, o, f, nil)
		sm.release()
	}
	if rt.mesh {
		r.meshPush(f, key, m, o) // to the routers that subscribe (mesh.go)
	}
}

// maxStackKey bounds the keys resolvePush assembles on the stack, bytes.
const maxStackKey = 256

// resolvePush resolves a PUSH's wire expression as resolveCause does and
// returns the key's cached route, nil when there is none. A cache hit
// allocates nothing, even for a key id plus a suffix (zenoh-pico
// publishers declare a key id): the key is assembled on the stack and
// looked up as bytes (the compiler does not allocate m[string(b)]), and the
// key string is the cache entry's. A key found in the cache is canonical
// (only canonical keys are cached), so a hit skips the canonical check. Caller holds
// r.mu (shared).
func (r *Router) resolvePush(f *face, w wire.WireExpr) (string, *subRoute, string) {
	switch {
	case w.Scope == 0:
		if rt := r.subRoutes[w.Suffix]; rt != nil {
			return rt.key, rt, ""
		}
	default:
		tbl := f.localKeys
		if w.Mapping == wire.MappingSender {
			tbl = f.remoteKeys
		}
		prefix, ok := tbl[w.Scope]
		if !ok {
			break // resolveCause says why
		}
		if w.Suffix == "" {
			if rt := r.subRoutes[prefix]; rt != nil {
				return rt.key, rt, ""
			}
		} else if len(prefix)+len(w.Suffix) <= maxStackKey {
			var buf [maxStackKey]byte
			b := append(append(buf[:0], prefix...), w.Suffix...)
			if rt := r.subRoutes[string(b)]; rt != nil {
				return rt.key, rt, ""
			}
		}
	}
	key, cause := f.resolveCause(w)
	if cause != "" {
		return "", nil, cause
	}
	return key, r.subRoutes[key], ""
}

// fanout sends m to every target except from and those skip (if set)
// excludes, sharing one encoding; the caller releases sm afterwards. It returns how many faces it was handed
// to (tried) and how many queued it.
//
// A fan-out to a single face may be written inline by an idle transport
// session (sendOptions.Inline: no writer goroutine woken, the latency path
// of a ping through the router); one to several faces leaves the writes to
// their writer goroutines.
func (r *Router) fanout(sm *shared, targets []*face, o sendOptions, from *face, skip func(faceID uint64) bool) (tried, queued int) {
	o.Inline = len(targets) == 1 || len(targets) == 2 && (targets[0] == from || targets[1] == from)
	for _, t := range targets {
		if t == from || skip != nil && skip(t.id) {
			continue
		}
		tried++
		if t.sendShared(sm, o, "push") {
			queued++
		}
	}
	r.metrics.pushesRouted(queued)
	return tried, queued
}

// subRoute is the cached route of a PUSH key. Its slices are shared by
// every PUSH on the key until the next change of subscribers or upstream
// interests: read only.
type subRoute struct {
	// key is the canonical key the route was computed for (the cache key).
	key string
	// matched: the faces with an intersecting subscriber (sender included:
	// callers skip it).
	matched []*face
	// all: matched plus the upstream faces that do not filter the key
	// (upstream.go), where a PUSH from one of our own faces also goes.
	all []*face
	// mesh: a router of the mesh subscribes (meshPush routes to it).
	mesh bool
}

// targets is where a PUSH from f goes: one that came from an upstream face
// goes to another upstream face only if that one declared a subscriber, so
// that routers reachable through two upstreams do not get each other's
// traffic back through us.
func (rt *subRoute) targets(from *face) []*face {
	if from.upstream {
		return rt.matched
	}
	return rt.all
}

// subTargets returns the route of a PUSH on key from the route cache,
// filling it on a miss.
func (r *Router) subTargets(key string) *subRoute {
	r.mu.Lock()
	defer r.mu.Unlock()
	if rt := r.subRoutes[key]; rt != nil {
		return rt
	}
	m, mesh := r.meshStrip(r.matchingFaces(kindSub, key, nil, nil))
	rt := &subRoute{key: key, matched: m, all: r.withUpstream(slices.Clip(m), kindSub, key, nil), mesh: mesh}
	if len(r.subRoutes) >= maxRouteCache {
		clear(r.subRoutes)
	}
	r.subRoutes[key] = rt
	return rt
}

// routedExt keeps QoS and timestamp; the NodeId ext is router↔router only
// and never goes to clients (§8.2, §12.8).
func routedExt(x wire.NetExt) wire.NetExt {
	x.HasNodeID, x.NodeID = false, 0
	return x
}

// matchingFaces returns the faces other than from that hold an entity of kind
// k whose key intersects key (each once). pred, if set, filters entities.
// It visits the candidates of the key index, not every face. Caller holds
// r.mu.
func (r *Router) matchingFaces(k kind, key string, from *face, pred func(*entity) bool) []*face {
	out := []*face{} // non-nil: an empty result is cached too
	var seen map[*face]struct{}
	r.eachCandidate(k, key, func(e *entity) bool {
		g := e.face
		if g == from || g.closed || pred != nil && !pred(e) || !keyexpr.Intersects(e.key, key) {
			return true
		}
		if seen == nil {
			seen = map[*face]struct{}{}
		}
		if _, ok := seen[g]; !ok {
			seen[g] = struct{}{}
			out = append(out, g)
		}
		return true
	})
	return out
}
