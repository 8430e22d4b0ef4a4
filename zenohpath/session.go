package zenohpath

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/picobridge/picobridge/zenohpath/keyexpr"
	"github.com/picobridge/picobridge/zenohpath/transport"
	"github.com/picobridge/picobridge/zenohpath/wire"
)

// Mode is the role of a Session.
type Mode uint8

// Session modes.
const (
	// ModeClient (the default) connects to one router (the first of
	// Config.Connect that answers) and sends everything through it.
	ModeClient Mode = iota
	// ModePeer connects to every Config.Connect endpoint and listens on
	// Config.Listen, routing between the sessions that connect to it (as a
	// small router; no gossip, no multicast scouting).
	ModePeer
)

func (m Mode) String() string {
	if m == ModePeer {
		return "peer"
	}
	return "client"
}

// Config configures Open.
type Config struct {
	// Mode is ModeClient (default) or ModePeer.
	Mode Mode
	// Connect lists endpoints to connect to ("tcp/127.0.0.1:7447").
	Connect []string
	// Listen lists endpoints to listen on (peer mode only).
	Listen []string
	// ZID is the session's Zenoh ID; zero = random.
	ZID wire.ZID
	// Lease announced to the peers; 0 = 10 s (transport.DefaultLease).
	Lease time.Duration
	// QueryTimeout is the default Get timeout; 0 = 10 s (DefaultQueryTimeout).
	QueryTimeout time.Duration
	// Logger; nil = discard.
	Logger *slog.Logger
	// Router, when set, attaches the session in-process to that router
	// (no transport; Connect and Listen must be empty).
	Router *Router
	// TLS configures tls/ endpoints (root CA, mutual TLS client
	// certificate, name check; transport.TLSConfig); nil: system roots.
	TLS *transport.TLSConfig
	// UsrPwd sets the user and password presented to routers that ask for
	// them (and, in peer mode, the dictionary checked on accepted
	// sessions); nil: none.
	UsrPwd *transport.UsrPwdConfig
}

// Session is a Zenoh session (zenoh-wire.md §15.2): declare publishers,
// subscribers, queryables and liveliness tokens, put and get. Callbacks
// (subscriber handlers, queryable handlers, liveliness handlers) run one at
// a time on the session's dispatcher goroutine; a slow callback delays the
// session's deliveries, not the router.
type Session struct {
	r         *Router
	ownRouter bool
	face      *face
	link      *localLink
	timeout   time.Duration
	wg        sync.WaitGroup
	closing   chan struct{} // closed when Close starts

	mu           sync.Mutex
	closed       bool
	nextID       uint32
	subs         map[uint32]*Subscriber // by entity id
	qbls         map[uint32]*Queryable  // by entity id
	gets         map[uint32]*getState   // by request id
	lsubs        map[uint32]*Subscriber // liveliness subscribers, by interest id
	lgets        map[uint32]*getState   // liveliness gets, by interest id
	remoteTokens map[uint32]string      // router token id → key
	tokens       map[uint32]string      // this session's own tokens, by id
	qmatch       map[string]uint32      // keys HasMatchingQueryables tracks → interest id
}

// Open opens a session. In client mode it connects to the first endpoint of
// cfg.Connect that answers; in peer mode it listens on cfg.Listen and
// connects to all of cfg.Connect. It returns once the connection is up and
// the router answered our interest (so Get and liveliness queries see what
// already exists).
func Open(ctx context.Context, cfg Config) (*Session, error) {
	if cfg.Router != nil {
		if len(cfg.Connect) > 0 || len(cfg.Listen) > 0 {
			return nil, errors.New("zenohpath: Config.Router excludes Connect and Listen")
		}
		return newSession(cfg.Router, false, cfg.QueryTimeout)
	}
	if cfg.Mode == ModeClient && len(cfg.Listen) > 0 {
		return nil, errors.New("zenohpath: a client session does not listen (use ModePeer)")
	}
	if cfg.Mode == ModeClient && len(cfg.Connect) == 0 {
		return nil, errors.New("zenohpath: a client session needs Config.Connect")
	}
	rc := RouterConfig{ZID: cfg.ZID, Logger: cfg.Logger, QueryTimeout: cfg.QueryTimeout,
		Transport: transport.Config{Lease: cfg.Lease, TLS: cfg.TLS, UsrPwd: cfg.UsrPwd}}
	if cfg.Mode == ModePeer {
		rc.WhatAmI, rc.DialAs = wire.WhatAmIPeer, wire.WhatAmIPeer
	}
	r := NewRouter(rc)
	s, err := newSession(r, true, cfg.QueryTimeout)
	if err != nil {
		_ = r.Close()
		return nil, err
	}
	fail := func(err error) (*Session, error) {
		_ = s.Close()
		return nil, err
	}
	for _, ep := range cfg.Listen {
		if _, err := r.Listen(ctx, ep); err != nil {
			return fail(err)
		}
	}
	var errs []error
	for _, ep := range cfg.Connect {
		err := r.Connect(ctx, ep, true)
		if err == nil && cfg.Mode == ModeClient {
			errs = nil
			break
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 && (cfg.Mode == ModeClient || len(errs) == len(cfg.Connect)) {
		return fail(errors.Join(errs...))
	}
	return s, nil
}

func newSession(r *Router, own bool, timeout time.Duration) (*Session, error) {
	if timeout <= 0 {
		timeout = r.queryTimeout
	}
	s := &Session{
		r: r, ownRouter: own, link: newLocalLink(r.maxMsg), timeout: timeout, closing: make(chan struct{}),
		subs: map[uint32]*Subscriber{}, qbls: map[uint32]*Queryable{}, gets: map[uint32]*getState{},
		lsubs: map[uint32]*Subscriber{}, lgets: map[uint32]*getState{}, remoteTokens: map[uint32]string{}, tokens: map[uint32]string{},
		qmatch: map[string]uint32{},
	}
	f, ok := r.addFace(s.link, r.zid, wire.WhatAmIClient, false)
	if !ok {
		return nil, ErrClosed
	}
	s.face = f
	s.wg.Add(1)
	go s.dispatch()
	return s, nil
}

// ZID is the session's Zenoh ID.
func (s *Session) ZID() wire.ZID { return s.r.zid }

// Router is the router the session runs on (its own, or Config.Router).
func (s *Session) Router() *Router { return s.r }

// Close undeclares everything the session declared, ends pending gets and
// closes the connections (and the session's own router). Callbacks are not
// called after Close returns. Do not call it from a callback (it waits for
// the dispatcher that runs them); a full subscriber or Get channel does not
// hold it up.
func (s *Session) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.closing)
	gets := make([]*getState, 0, len(s.gets)+len(s.lgets))
	for _, g := range s.gets {
		gets = append(gets, g)
	}
	for _, g := range s.lgets {
		gets = append(gets, g)
	}
	s.gets, s.lgets = map[uint32]*getState{}, map[uint32]*getState{}
	s.mu.Unlock()
	s.r.removeFace(s.face)
	s.link.close()
	s.wg.Wait()
	for _, g := range gets {
		g.finish()
	}
	if s.ownRouter {
		return s.r.Close()
	}
	return nil
}

// send hands a message from the session to the router.
func (s *Session) send(m wire.NetworkMessage, reliable bool) error {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return ErrClosed
	}
	if m.Len() > s.r.maxMsg {
		s.r.metrics.droppedInc(dropTooLarge)
		return ErrTooLarge
	}
	s.r.route(s.face, m, reliable)
	return nil
}

func (s *Session) newID() uint32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextID++
	return s.nextID
}

// dispatch delivers what the router sends to the session.
func (s *Session) dispatch() {
	defer s.wg.Done()
	for {
		msgs, ok := s.link.drain()
		if !ok {
			return
		}
		for _, it := range msgs {
			if it.fn != nil {
				it.fn()
			} else {
				s.deliver(it.m)
			}
		}
	}
}

func (s *Session) deliver(m wire.NetworkMessage) {
	switch m := m.(type) {
	case *wire.Push:
		key := m.WireExpr.Suffix
		sample := sampleFromBody(key, m.Body, m.EffectiveQoS())
		for _, sub := range s.matchingSubs(key) {
			sub.deliver(sample)
		}
	case *wire.Request:
		s.deliverQuery(m)
	case *wire.Response:
		s.mu.Lock()
		g := s.gets[m.ID]
		s.mu.Unlock()
		if g != nil {
			g.add(replyFromResponse(m))
		}
	case *wire.ResponseFinal:
		s.endGetPart(m.ID)
	case *wire.Declare:
		s.deliverDeclare(m)
	}
}

func (s *Session) matchingSubs(key string) []*Subscriber {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*Subscriber
	for _, sub := range s.subs {
		if keyexpr.Intersects(sub.key, key) {
			out = append(out, sub)
		}
	}
	return out
}

// deliverDeclare handles liveliness tokens the router declares to the
// session (answers to the interests of liveliness subscribers and gets).
func (s *Session) deliverDeclare(d *wire.Declare) {
	switch b := d.Body.(type) {
	case *wire.DeclareToken:
		key := b.WireExpr.Suffix
		s.mu.Lock()
		s.remoteTokens[b.ID] = key
		var subs []*Subscriber
		var get *getState
		if d.HasInterestID {
			if g := s.lgets[d.InterestID]; g != nil {
				get = g
			} else if ls := s.lsubs[d.InterestID]; ls != nil {
				subs = append(subs, ls)
			}
		} else {
			subs = s.matchingLivelinessSubs(key)
		}
		s.mu.Unlock()
		sample := Sample{key: key, kind: SampleKindPut}
		if get != nil {
			get.add(Reply{sample: sample, ok: true})
		}
		for _, ls := range subs {
			ls.deliver(sample)
		}
	case *wire.UndeclareToken:
		s.mu.Lock()
		key, ok := s.remoteTokens[b.ID]
		delete(s.remoteTokens, b.ID)
		var subs []*Subscriber
		if ok {
			subs = s.matchingLivelinessSubs(key)
		}
		s.mu.Unlock()
		for _, ls := range subs {
			ls.deliver(Sample{key: key, kind: SampleKindDelete})
		}
	case *wire.DeclareFinal:
		if !d.HasInterestID {
			return
		}
		s.mu.Lock()
		g := s.lgets[d.InterestID]
		delete(s.lgets, d.InterestID)
		s.mu.Unlock()
		if g != nil {
			g.finish()
		}
	}
}

// endGetPart ends one part (the router's, or this session's queryables) of
// Get rid; the reply channel closes when the last part ended. Dispatcher only.
func (s *Session) endGetPart(rid uint32) {
	s.mu.Lock()
	g := s.gets[rid]
	if g != nil {
		g.parts--
		if g.parts > 0 {
			g = nil
		} else {
			delete(s.gets, rid)
		}
	}
	s.mu.Unlock()
	if g != nil {
		g.finish()
	}
}

// matchingLivelinessSubs: caller holds s.mu.
func (s *Session) matchingLivelinessSubs(key string) []*Subscriber {
	var out []*Subscriber
	for _, ls := range s.lsubs {
		if keyexpr.Intersects(ls.key, key) {
			out = append(out, ls)
		}
	}
	return out
}

// String names the session for logs.
func (s *Session) String() string { return fmt.Sprintf("session %s", s.r.zid) }
