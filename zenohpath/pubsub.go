package zenohpath

import (
	"sync"

	"github.com/picobridge/picobridge/zenohpath/wire"
)

// PublisherOptions configures DeclarePublisher. The zero value publishes
// reliably at priority Data with congestion control Drop, not express.
type PublisherOptions struct {
	// Express sends each sample at once, in its own batch.
	Express bool
	// Priority; 0 = PriorityData.
	Priority Priority
	// CongestionControl: Drop (default) or Block.
	CongestionControl CongestionControl
	// Reliability: Reliable (default) or BestEffort.
	Reliability Reliability
	// Encoding of the payloads (nil = none, zenoh/bytes).
	Encoding *Encoding
}

// PutOptions are per-put options; Session.Put also uses the QoS fields.
type PutOptions struct {
	// Encoding overrides the publisher's encoding.
	Encoding *Encoding
	// Attachment is user data sent alongside the payload.
	Attachment []byte
	// Timestamp, when set, is sent with the sample.
	Timestamp *Timestamp
	// Express, Priority, CongestionControl, Reliability: as PublisherOptions
	// (Session.Put and Session.Delete only).
	Express           bool
	Priority          Priority
	CongestionControl CongestionControl
	Reliability       Reliability
}

// Publisher publishes on one key expression.
type Publisher struct {
	s    *Session
	key  string
	opts PublisherOptions
	mi   matchInterest
}

// DeclarePublisher declares a publisher on key (canonized if needed). Like
// a Rust or pico publisher it sends one interest in the subscribers of its
// key (INTEREST CurrentFuture K|S|R|A, §12.4), which the session's router
// passes upstream: that is what HasMatchingSubscribers reads, and what lets
// an upstream router tell the session about the subscribers it needs and
// no others. Nothing else is declared on the wire.
func (s *Session) DeclarePublisher(key string, opts PublisherOptions) (*Publisher, error) {
	k, err := canonKey(key)
	if err != nil {
		return nil, err
	}
	p := &Publisher{s: s, key: k, opts: opts}
	if err := p.mi.declare(s, kindSub, k); err != nil {
		return nil, err
	}
	return p, nil
}

// matchInterest is the matching interest of a publisher or querier: an
// aggregated CurrentFuture interest restricted to its key.
type matchInterest struct {
	s    *Session
	id   uint32
	once sync.Once
}

func (mi *matchInterest) declare(s *Session, k kind, key string) error {
	mi.s, mi.id = s, s.newID()
	return s.send(matchingInterest(mi.id, k, key), true)
}

// matchingInterest is the INTEREST a publisher (k = subscribers) or querier
// (queryables) sends: CurrentFuture, K|S|R|A or K|Q|R|A on its key.
func matchingInterest(id uint32, k kind, key string) *wire.Interest {
	return &wire.Interest{Mode: wire.InterestCurrentFuture, ID: id,
		Options:  wire.InterestKeyExprs | k.option() | wire.InterestRestricted | wire.InterestAggregate,
		WireExpr: wireKey(key)}
}

// undeclare sends the interest's Final, once.
func (mi *matchInterest) undeclare() error {
	var err error
	mi.once.Do(func() { err = mi.s.send(&wire.Interest{Mode: wire.InterestFinal, ID: mi.id}, true) })
	return err
}

// KeyExpr is the publisher's key.
func (p *Publisher) KeyExpr() string { return p.key }

// Put publishes payload.
func (p *Publisher) Put(payload []byte, opts *PutOptions) error {
	o := PutOptions{Express: p.opts.Express, Priority: p.opts.Priority,
		CongestionControl: p.opts.CongestionControl, Reliability: p.opts.Reliability, Encoding: p.opts.Encoding}
	if opts != nil {
		o.Attachment, o.Timestamp = opts.Attachment, opts.Timestamp
		if opts.Encoding != nil {
			o.Encoding = opts.Encoding
		}
	}
	return p.s.put(p.key, payload, &o, false)
}

// Delete publishes a delete on the publisher's key.
func (p *Publisher) Delete(opts *PutOptions) error {
	o := PutOptions{Express: p.opts.Express, Priority: p.opts.Priority,
		CongestionControl: p.opts.CongestionControl, Reliability: p.opts.Reliability}
	if opts != nil {
		o.Attachment, o.Timestamp = opts.Attachment, opts.Timestamp
	}
	return p.s.put(p.key, nil, &o, true)
}

// Undeclare drops the publisher: its matching interest ends (INTEREST
// Final). Safe to call more than once.
func (p *Publisher) Undeclare() error { return p.mi.undeclare() }

// Put publishes payload on key without declaring a publisher.
func (s *Session) Put(key string, payload []byte, opts *PutOptions) error {
	k, err := canonKey(key)
	if err != nil {
		return err
	}
	if opts == nil {
		opts = &PutOptions{}
	}
	return s.put(k, payload, opts, false)
}

// Delete publishes a delete on key.
func (s *Session) Delete(key string, opts *PutOptions) error {
	k, err := canonKey(key)
	if err != nil {
		return err
	}
	if opts == nil {
		opts = &PutOptions{}
	}
	return s.put(k, nil, opts, true)
}

// newPut builds a PUT body: a nil payload is sent empty, encoding and
// timestamp only when given.
func newPut(payload, attachment []byte, enc *Encoding, ts *Timestamp) *wire.Put {
	p := &wire.Put{Payload: payload, Attachment: attachment}
	if p.Payload == nil {
		p.Payload = []byte{}
	}
	if enc != nil {
		p.HasEncoding, p.Encoding = true, *enc
	}
	if ts != nil {
		p.HasTimestamp, p.Timestamp = true, *ts
	}
	return p
}

func (s *Session) put(key string, payload []byte, o *PutOptions, del bool) error {
	m := &wire.Push{WireExpr: wireKey(key)}
	m.QoS, m.HasQoS = qosOf(o.Priority, o.CongestionControl, o.Express)
	if del {
		d := &wire.Del{Attachment: o.Attachment}
		if o.Timestamp != nil {
			d.HasTimestamp, d.Timestamp = true, *o.Timestamp
		}
		m.Body = d
	} else {
		m.Body = newPut(payload, o.Attachment, o.Encoding, o.Timestamp)
	}
	if err := s.send(m, o.Reliability == ReliabilityReliable); err != nil {
		return err
	}
	// The router never echoes to the sending face: deliver to this session's
	// own subscribers through its dispatcher (Zenoh's local delivery).
	if len(s.matchingSubs(key)) > 0 {
		o := dataOptions(m.EffectiveQoS())
		_ = s.link.send(m, o)
	}
	return nil
}

// Subscriber receives the samples published on keys intersecting its key.
type Subscriber struct {
	s        *Session
	key      string
	id       uint32 // entity id (subscriber) or interest id (liveliness)
	liveness bool
	handler  func(Sample)
	ch       chan Sample
	once     sync.Once
}

// KeyExpr is the subscriber's key expression.
func (sub *Subscriber) KeyExpr() string { return sub.key }

// Samples is the channel of a subscriber declared with a channel
// (DeclareSubscriberChan); nil otherwise. It is never closed.
func (sub *Subscriber) Samples() <-chan Sample { return sub.ch }

func (sub *Subscriber) deliver(s Sample) {
	if sub.handler != nil {
		sub.handler(s)
		return
	}
	select { // FIFO: blocks the session's dispatcher while full, until Close
	case sub.ch <- s:
	case <-sub.s.closing:
	}
}

// DeclareSubscriber subscribes to key; handler runs on the session's
// dispatcher goroutine for each sample.
func (s *Session) DeclareSubscriber(key string, handler func(Sample)) (*Subscriber, error) {
	return s.declareSubscriber(key, handler, nil)
}

// DeclareSubscriberChan subscribes to key and delivers samples on a FIFO
// channel of the given capacity (Subscriber.Samples); a full channel holds
// back the session's deliveries.
func (s *Session) DeclareSubscriberChan(key string, capacity int) (*Subscriber, error) {
	return s.declareSubscriber(key, nil, make(chan Sample, capacity))
}

func (s *Session) declareSubscriber(key string, h func(Sample), ch chan Sample) (*Subscriber, error) {
	k, err := canonKey(key)
	if err != nil {
		return nil, err
	}
	sub := &Subscriber{s: s, key: k, id: s.newID(), handler: h, ch: ch}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, ErrClosed
	}
	s.subs[sub.id] = sub
	s.mu.Unlock()
	return sub, s.send(&wire.Declare{Body: &wire.DeclareSubscriber{ID: sub.id, WireExpr: wireKey(k)}}, true)
}

// Undeclare removes the subscriber.
func (sub *Subscriber) Undeclare() error {
	s := sub.s
	s.mu.Lock()
	if sub.liveness {
		delete(s.lsubs, sub.id)
	} else {
		delete(s.subs, sub.id)
	}
	s.mu.Unlock()
	var err error
	sub.once.Do(func() {
		if sub.liveness {
			err = s.send(&wire.Interest{Mode: wire.InterestFinal, ID: sub.id}, true)
		} else {
			err = s.send(&wire.Declare{Body: &wire.UndeclareSubscriber{ID: sub.id}}, true)
		}
	})
	return err
}

// HasMatchingSubscribers reports whether a subscriber of another session or
// device (as far as this session's router knows: through an upstream
// router, once it answered the publisher's interest) intersects the
// publisher's key: the Zenoh "matching status".
func (p *Publisher) HasMatchingSubscribers() bool {
	return p.s.r.hasMatching(kindSub, p.key, p.s.face)
}

// maxMatchKeys bounds the keys Session.HasMatchingQueryables tracks.
const maxMatchKeys = 64

// HasMatchingQueryables reports whether a queryable elsewhere intersects key.
// Behind an upstream router the session learns about queryables only for
// keys it asks for: the first call for a key sends a matching interest for
// it (as DeclareQuerier does, kept until Close, for at most maxMatchKeys
// keys), so it may report false until the router answered; poll it, or
// use a Querier.
func (s *Session) HasMatchingQueryables(key string) bool {
	k, err := canonKey(key)
	if err != nil {
		return false
	}
	s.mu.Lock()
	_, known := s.qmatch[k]
	track := !known && !s.closed && len(s.qmatch) < maxMatchKeys
	var id uint32
	if track {
		s.nextID++
		id = s.nextID
		s.qmatch[k] = id
	}
	s.mu.Unlock()
	if track {
		_ = s.send(matchingInterest(id, kindQbl, k), true)
	}
	return s.r.hasMatching(kindQbl, k, s.face)
}

func (r *Router) hasMatching(k kind, key string, from *face) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	found, _ := r.anyMatch(k, key, from)
	return found
}
