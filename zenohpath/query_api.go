package zenohpath

import (
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/picobridge/picobridge/zenohpath/keyexpr"
	"github.com/picobridge/picobridge/zenohpath/wire"
)

// GetOptions configures Get. The zero value targets BestMatching queryables
// with the session's query timeout.
type GetOptions struct {
	Target        QueryTarget
	Consolidation ConsolidationMode
	// Payload and Encoding are the query's body (sent when Payload != nil).
	Payload  []byte
	Encoding Encoding
	// Attachment is user data sent with the query.
	Attachment []byte
	// Timeout; 0 = the session's query timeout (10 s by default).
	Timeout  time.Duration
	Priority Priority
	Express  bool
	// Capacity of the reply channel; 0 = 64.
	Capacity int
}

// Reply is one answer to a Get: a sample, or an error reply.
type Reply struct {
	sample  Sample
	err     ReplyError
	ok      bool
	replier wire.ZID
}

// IsOk reports whether the reply carries a sample.
func (r Reply) IsOk() bool { return r.ok }

// Ok returns the reply's sample.
func (r Reply) Ok() (Sample, bool) { return r.sample, r.ok }

// Err returns the error reply.
func (r Reply) Err() (ReplyError, bool) { return r.err, !r.ok }

// ReplierID is the Zenoh ID of the replier, when it said (zero otherwise).
func (r Reply) ReplierID() wire.ZID { return r.replier }

// ReplyError is an error answer to a query.
type ReplyError struct {
	payload  []byte
	encoding Encoding
}

// Payload of the error.
func (e ReplyError) Payload() []byte { return e.payload }

// Encoding of the error payload.
func (e ReplyError) Encoding() Encoding { return e.encoding }

func replyFromResponse(m *wire.Response) Reply {
	var rp Reply
	if m.HasResponderID {
		rp.replier = m.ResponderID.ZID
	}
	switch b := m.Body.(type) {
	case *wire.Reply:
		rp.ok = true
		rp.sample = sampleFromBody(m.WireExpr.Suffix, b.Body, m.EffectiveQoS())
	case *wire.Err:
		rp.err.payload = b.Payload
		if b.HasEncoding {
			rp.err.encoding = b.Encoding
		}
	}
	return rp
}

// getState collects the replies of one Get (or liveliness Get).
type getState struct {
	parts int             // parts still running: the router's, and the local queryables' (Get)
	done  <-chan struct{} // the session's closing channel: stop waiting on a full ch
	ch    chan Reply
	once  sync.Once
	timer *time.Timer
}

func (g *getState) add(r Reply) {
	select {
	case g.ch <- r:
	case <-g.done:
	}
}

func (g *getState) finish() {
	g.once.Do(func() {
		if g.timer != nil {
			g.timer.Stop()
		}
		close(g.ch)
	})
}

// Get queries the queryables matching selector ("key" or "key?params") and
// returns a channel of replies, closed after the last one (RESPONSE_FINAL,
// or the timeout). Read it promptly: a full channel holds back the
// session's deliveries.
func (s *Session) Get(selector string, opts *GetOptions) (<-chan Reply, error) {
	if opts == nil {
		opts = &GetOptions{}
	}
	key, params, _ := strings.Cut(selector, "?")
	k, err := canonKey(key)
	if err != nil {
		return nil, err
	}
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = s.timeout
	}
	capacity := opts.Capacity
	if capacity <= 0 {
		capacity = 64
	}
	g := &getState{ch: make(chan Reply, capacity), parts: 1, done: s.closing}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, ErrClosed
	}
	s.nextID++
	rid := s.nextID
	s.gets[rid] = g
	local := s.localQueryables(k, opts.Target)
	if len(local) > 0 {
		g.parts++
	}
	s.mu.Unlock()
	q := &wire.Query{Parameters: params, Attachment: opts.Attachment}
	if opts.Consolidation != ConsolidationModeAuto {
		q.HasConsolidation, q.Consolidation = true, opts.Consolidation
	}
	if opts.Payload != nil {
		q.HasBody, q.Body = true, wire.QueryBody{Encoding: opts.Encoding, Payload: opts.Payload}
	}
	m := &wire.Request{ID: rid, WireExpr: wireKey(k), HasTimeout: true, Timeout: timeout, Body: q}
	if opts.Target != QueryTargetBestMatching {
		m.HasTarget, m.Target = true, opts.Target
	}
	// Requests default to Data + Block (0x0d), as Rust and pico send them (§8.1).
	prio := opts.Priority
	if prio == 0 {
		prio = PriorityData
	}
	m.HasQoS, m.QoS = true, wire.NewQoS(prio, CongestionControlBlock, opts.Express)
	if len(local) > 0 {
		// This session's own queryables answer too (Zenoh's default locality),
		// on the dispatcher, replying straight into the channel.
		req := cloneNetwork(m).(*wire.Request)
		s.link.post(func() {
			s.runQueryables(local, req, g, func() { s.endGetPart(rid) })
		})
	}
	if err := s.send(m, true); err != nil {
		s.mu.Lock()
		delete(s.gets, rid)
		s.mu.Unlock()
		return nil, err
	}
	return g.ch, nil
}

// localQueryables are this session's queryables a query on key reaches.
// Caller holds s.mu.
func (s *Session) localQueryables(key string, target QueryTarget) []*Queryable {
	var out []*Queryable
	for _, q := range s.qbls {
		if keyexpr.Intersects(q.key, key) && (target != QueryTargetAllComplete || q.complete) {
			out = append(out, q)
		}
	}
	return out
}

// QueryableOptions configures DeclareQueryable.
type QueryableOptions struct {
	// Complete declares that the queryable answers for every key of its key
	// expression (what Target AllComplete looks for, §9.6).
	Complete bool
}

// Queryable answers queries on keys intersecting its key expression.
type Queryable struct {
	s        *Session
	key      string
	id       uint32
	complete bool
	handler  func(*Query)
}

// KeyExpr is the queryable's key expression.
func (q *Queryable) KeyExpr() string { return q.key }

// DeclareQueryable declares a queryable on key; handler runs on the
// session's dispatcher goroutine for each query. Reply from inside the
// handler: when it returns, the query is finished (RESPONSE_FINAL).
func (s *Session) DeclareQueryable(key string, handler func(*Query), opts *QueryableOptions) (*Queryable, error) {
	k, err := canonKey(key)
	if err != nil {
		return nil, err
	}
	q := &Queryable{s: s, key: k, id: s.newID(), handler: handler}
	if opts != nil {
		q.complete = opts.Complete
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, ErrClosed
	}
	s.qbls[q.id] = q
	s.mu.Unlock()
	d := &wire.DeclareQueryable{ID: q.id, WireExpr: wireKey(k)}
	if q.complete {
		d.HasInfo, d.Complete = true, true
	}
	return q, s.send(&wire.Declare{Body: d}, true)
}

// Undeclare removes the queryable.
func (q *Queryable) Undeclare() error {
	q.s.mu.Lock()
	_, ok := q.s.qbls[q.id]
	delete(q.s.qbls, q.id)
	q.s.mu.Unlock()
	if !ok {
		return nil
	}
	return q.s.send(&wire.Declare{Body: &wire.UndeclareQueryable{ID: q.id}}, true)
}

// Query is one query received by a queryable; valid during the handler.
type Query struct {
	s          *Session
	local      *getState // set for a query of this session's own Get
	rid        uint32
	qbl        uint32
	key        string
	params     string
	payload    []byte
	encoding   Encoding
	attachment []byte
	fin        *queryFinisher
	detached   atomic.Bool
	finished   atomic.Bool
}

// KeyExpr is the queried key expression.
func (q *Query) KeyExpr() string { return q.key }

// Parameters is the selector's part after '?'.
func (q *Query) Parameters() string { return q.params }

// Payload is the query's body (nil when none).
func (q *Query) Payload() []byte { return q.payload }

// Encoding of the query's body.
func (q *Query) Encoding() Encoding { return q.encoding }

// Attachment of the query.
func (q *Query) Attachment() []byte { return q.attachment }

// ReplyOptions configures a reply.
type ReplyOptions struct {
	Encoding   *Encoding
	Attachment []byte
	Timestamp  *Timestamp
}

// Reply answers with a sample on key (which should intersect the query's key).
func (q *Query) Reply(key string, payload []byte, opts *ReplyOptions) error {
	if opts == nil {
		opts = &ReplyOptions{}
	}
	return q.respond(key, &wire.Reply{Body: newPut(payload, opts.Attachment, opts.Encoding, opts.Timestamp)})
}

// ReplyDel answers with a delete on key.
func (q *Query) ReplyDel(key string, opts *ReplyOptions) error {
	d := &wire.Del{}
	if opts != nil {
		d.Attachment = opts.Attachment
	}
	return q.respond(key, &wire.Reply{Body: d})
}

// ReplyErr answers with an error.
func (q *Query) ReplyErr(payload []byte, enc *Encoding) error {
	e := &wire.Err{Payload: payload}
	if e.Payload == nil {
		e.Payload = []byte{}
	}
	if enc != nil {
		e.HasEncoding, e.Encoding = true, *enc
	}
	return q.respond(q.key, e)
}

func (q *Query) respond(key string, body wire.ResponseBody) error {
	if q.finished.Load() {
		return ErrQueryFinished
	}
	k, err := canonKey(key)
	if err != nil {
		return err
	}
	m := &wire.Response{ID: q.rid, WireExpr: wireKey(k), Body: body,
		HasResponderID: true, ResponderID: wire.EntityGlobalID{ZID: q.s.r.zid, EID: q.qbl}}
	if q.local != nil {
		q.local.add(replyFromResponse(cloneNetwork(m).(*wire.Response)))
		return nil
	}
	return q.s.send(m, true)
}

// deliverQuery runs the matching queryables' handlers, then finishes the
// query with RESPONSE_FINAL.
func (s *Session) deliverQuery(m *wire.Request) {
	s.mu.Lock()
	qbls := s.localQueryables(m.WireExpr.Suffix, m.Target)
	s.mu.Unlock()
	s.runQueryables(qbls, m, nil, func() { _ = s.send(&wire.ResponseFinal{ID: m.ID}, true) })
}

// runQueryables calls each queryable's handler with the query; local is the
// Get of this session when the query is its own. final runs once, when the
// last handler returned and every detached query (Query.Detach) finished.
func (s *Session) runQueryables(qbls []*Queryable, m *wire.Request, local *getState, final func()) {
	key := m.WireExpr.Suffix
	fin := newQueryFinisher(final)
	defer fin.done()
	for _, qbl := range qbls {
		q := &Query{s: s, local: local, rid: m.ID, qbl: qbl.id, key: key, fin: fin}
		if body, ok := m.Body.(*wire.Query); ok {
			q.params, q.attachment = body.Parameters, body.Attachment
			if body.HasBody {
				q.payload, q.encoding = body.Body.Payload, body.Body.Encoding
			}
		}
		qbl.handler(q)
		if !q.detached.Load() {
			q.finished.Store(true) // valid during the handler only
		}
	}
}
