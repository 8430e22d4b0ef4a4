package zenohpath

import "time"

// QuerierOptions configures DeclareQuerier: the options every Get of the
// querier uses.
type QuerierOptions struct {
	Target        QueryTarget
	Consolidation ConsolidationMode
	// Timeout; 0 = the session's query timeout.
	Timeout  time.Duration
	Priority Priority
	Express  bool
}

// Querier queries one key expression repeatedly (zenoh-go's Querier).
type Querier struct {
	s    *Session
	key  string
	opts QuerierOptions
	mi   matchInterest
}

// QuerierGetOptions are the per-query options of Querier.Get.
type QuerierGetOptions struct {
	Payload    []byte
	Encoding   Encoding
	Attachment []byte
}

// DeclareQuerier declares a querier on key (canonized if needed); like a
// publisher it sends one matching interest in the queryables of its key
// (INTEREST CurrentFuture K|Q|R|A, §12.4).
func (s *Session) DeclareQuerier(key string, opts *QuerierOptions) (*Querier, error) {
	k, err := canonKey(key)
	if err != nil {
		return nil, err
	}
	q := &Querier{s: s, key: k}
	if opts != nil {
		q.opts = *opts
	}
	if err := q.mi.declare(s, kindQbl, k); err != nil {
		return nil, err
	}
	return q, nil
}

// KeyExpr is the querier's key expression.
func (q *Querier) KeyExpr() string { return q.key }

// HasMatchingQueryables reports whether a queryable elsewhere intersects the
// querier's key (the matching status).
func (q *Querier) HasMatchingQueryables() bool { return q.s.r.hasMatching(kindQbl, q.key, q.s.face) }

// Get queries the querier's key with parameters (the selector's part after
// '?', may be empty); see Session.Get.
func (q *Querier) Get(parameters string, opts *QuerierGetOptions) (<-chan Reply, error) {
	g := GetOptions{Target: q.opts.Target, Consolidation: q.opts.Consolidation, Timeout: q.opts.Timeout,
		Priority: q.opts.Priority, Express: q.opts.Express}
	if opts != nil {
		g.Payload, g.Encoding, g.Attachment = opts.Payload, opts.Encoding, opts.Attachment
	}
	sel := q.key
	if parameters != "" {
		sel += "?" + parameters
	}
	return q.s.Get(sel, &g)
}

// Undeclare drops the querier: its matching interest ends (INTEREST Final).
// Safe to call more than once.
func (q *Querier) Undeclare() error { return q.mi.undeclare() }
