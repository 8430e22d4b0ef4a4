package zenohpath

import (
	"sort"
	"time"

	"github.com/picobridge/picobridge/zenohpath/keyexpr"
	"github.com/picobridge/picobridge/zenohpath/wire"
)

// Liveliness is the liveliness API of a session (§12.6): tokens that exist
// while their session lives, subscribers to their appearance and
// disappearance, and queries of the current ones.
type Liveliness struct{ s *Session }

// Liveliness returns the session's liveliness API.
func (s *Session) Liveliness() *Liveliness { return &Liveliness{s: s} }

// LivelinessToken is a declared token.
type LivelinessToken struct {
	s   *Session
	key string
	id  uint32
}

// KeyExpr is the token's key.
func (t *LivelinessToken) KeyExpr() string { return t.key }

// DeclareToken declares a token on key; it disappears on Undeclare or when
// the session ends (for remote observers also when the link dies).
func (l *Liveliness) DeclareToken(key string) (*LivelinessToken, error) {
	k, err := canonKey(key)
	if err != nil {
		return nil, err
	}
	s := l.s
	t := &LivelinessToken{s: s, key: k, id: s.newID()}
	s.mu.Lock()
	s.tokens[t.id] = k
	s.mu.Unlock()
	s.postLocalToken(k, SampleKindPut)
	return t, s.send(&wire.Declare{Body: &wire.DeclareToken{ID: t.id, WireExpr: wireKey(k)}}, true)
}

// Undeclare drops the token.
func (t *LivelinessToken) Undeclare() error {
	s := t.s
	s.mu.Lock()
	_, ok := s.tokens[t.id]
	delete(s.tokens, t.id)
	s.mu.Unlock()
	if !ok {
		return nil
	}
	s.postLocalToken(t.key, SampleKindDelete)
	return s.send(&wire.Declare{Body: &wire.UndeclareToken{ID: t.id}}, true)
}

// postLocalToken reports a change of this session's own token to its own
// liveliness subscribers (the router never echoes a face's declarations).
func (s *Session) postLocalToken(key string, kind SampleKind) {
	s.mu.Lock()
	subs := s.matchingLivelinessSubs(key) // the subscribers at the time of the change
	s.mu.Unlock()
	if len(subs) == 0 {
		return
	}
	s.link.post(func() {
		for _, ls := range subs {
			ls.deliver(Sample{key: key, kind: kind})
		}
	})
}

// ownTokens lists this session's tokens intersecting key.
func (s *Session) ownTokens(key string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, k := range s.tokens {
		if keyexpr.Intersects(k, key) {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// LivelinessSubscriberOptions configures a liveliness subscriber.
type LivelinessSubscriberOptions struct {
	// History also reports the tokens alive when the subscriber is declared.
	History bool
}

// DeclareSubscriber reports tokens on keys intersecting key: a Put sample
// when one appears, a Delete sample when it disappears. It is an INTEREST
// for tokens (Future, or CurrentFuture with History).
func (l *Liveliness) DeclareSubscriber(key string, handler func(Sample), opts *LivelinessSubscriberOptions) (*Subscriber, error) {
	k, err := canonKey(key)
	if err != nil {
		return nil, err
	}
	s := l.s
	sub := &Subscriber{s: s, key: k, id: s.newID(), liveness: true, handler: handler}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, ErrClosed
	}
	s.lsubs[sub.id] = sub
	s.mu.Unlock()
	mode := wire.InterestFuture
	if opts != nil && opts.History {
		mode = wire.InterestCurrentFuture
		own := s.ownTokens(sub.key)
		s.link.post(func() {
			for _, k := range own {
				sub.deliver(Sample{key: k, kind: SampleKindPut})
			}
		})
	}
	return sub, s.send(&wire.Interest{Mode: mode, ID: sub.id,
		Options: wire.InterestKeyExprs | wire.InterestTokens | wire.InterestRestricted, WireExpr: wireKey(k)}, true)
}

// LivelinessGetOptions configures a liveliness Get.
type LivelinessGetOptions struct {
	// Timeout; 0 = the session's query timeout.
	Timeout time.Duration
}

// Get returns the tokens alive on keys intersecting key, as Put samples in
// Ok replies; the channel is closed when the router said it has no more
// (DeclareFinal) or at the timeout.
func (l *Liveliness) Get(key string, opts *LivelinessGetOptions) (<-chan Reply, error) {
	k, err := canonKey(key)
	if err != nil {
		return nil, err
	}
	s := l.s
	timeout := s.timeout
	if opts != nil && opts.Timeout > 0 {
		timeout = opts.Timeout
	}
	g := &getState{ch: make(chan Reply, 256), done: s.closing}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, ErrClosed
	}
	s.nextID++
	iid := s.nextID
	s.lgets[iid] = g
	s.mu.Unlock()
	// The timeout ends the get through the dispatcher, like a DeclareFinal,
	// so that only the dispatcher ever closes the channel.
	g.timer = time.AfterFunc(timeout, func() {
		_ = s.link.send(&wire.Declare{HasInterestID: true, InterestID: iid, Body: &wire.DeclareFinal{}}, controlOptions)
	})
	own := s.ownTokens(k)
	s.link.post(func() {
		for _, k := range own {
			g.add(Reply{sample: Sample{key: k, kind: SampleKindPut}, ok: true})
		}
	})
	err = s.send(&wire.Interest{Mode: wire.InterestCurrent, ID: iid,
		Options: wire.InterestKeyExprs | wire.InterestTokens | wire.InterestRestricted, WireExpr: wireKey(k)}, true)
	return g.ch, err
}
