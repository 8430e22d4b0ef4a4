package wire

import "time"

// QueryTarget is the REQUEST ext 0x34 (zenoh-wire.md §8.2, §10.6).
type QueryTarget uint8

// Query targets.
const (
	TargetBestMatching QueryTarget = 0 // default, omitted
	TargetAll          QueryTarget = 1
	TargetAllComplete  QueryTarget = 2
)

// Request carries a query (or a remote put/del) (zenoh-wire.md §9.3):
//
//	 7 6 5 4 3 2 1 0
//	+-+-+-+---------+
//	|Z|M|N| REQUEST |
//	+-+-+-+---------+
//	%  request_id   %  z32
//	~   WireExpr    ~
//	~    [exts]     ~  0x21 QoS, 0x42 Timestamp, 0x33 NodeId (M), 0x34 Target (M),
//	+---------------+  0x25 Budget, 0x26 Timeout (ms), 0x47 TsStack
//	~     body      ~  QUERY (pico also accepts PUT/DEL)
//
// Every REQUEST ends with exactly one RESPONSE_FINAL with the same id.
type Request struct {
	ID       uint32
	WireExpr WireExpr
	NetExt
	HasTarget  bool
	Target     QueryTarget
	HasBudget  bool
	Budget     uint32 // max number of replies
	HasTimeout bool
	Timeout    time.Duration // sent in ms
	Exts       []Ext
	Body       RequestBody // *Query, *Put or *Del
}

// NetworkID implements NetworkMessage.
func (*Request) NetworkID() NetworkID { return IDRequest }

// Len implements NetworkMessage.
func (m Request) Len() int {
	n := 1 + VLELen(uint64(m.ID)) + m.WireExpr.Len() + m.NetExt.extLen() + extsLen(m.Exts)
	if m.HasTarget {
		n += z64Len(uint64(m.Target))
	}
	if m.HasBudget {
		n += z64Len(uint64(m.Budget))
	}
	if m.HasTimeout {
		n += z64Len(uint64(m.Timeout / time.Millisecond))
	}
	if m.Body != nil {
		n += m.Body.Len()
	}
	return n
}

// Append implements NetworkMessage.
func (m Request) Append(b []byte) []byte {
	p := len(b)
	b = append(b, byte(IDRequest)|m.WireExpr.flags())
	b = AppendVLE(b, uint64(m.ID))
	b = m.WireExpr.Append(b)
	w := newExtWriter(b)
	m.NetExt.write(&w)
	if m.HasTarget {
		w.z64(ExtTarget, uint64(m.Target))
	}
	if m.HasBudget {
		w.z64(ExtBudget, uint64(m.Budget))
	}
	if m.HasTimeout {
		w.z64(ExtTimeout, uint64(m.Timeout/time.Millisecond))
	}
	w.raw(m.Exts)
	b = finishHeader(&w, p)
	if m.Body != nil {
		b = m.Body.Append(b)
	}
	return b
}

func (x *Request) decode(r *reader, h byte, p *Parser) error {
	*x = Request{Exts: x.Exts[:0]}
	var err error
	if x.ID, x.WireExpr, err = r.requestHead(h, p); err != nil {
		return err
	}
	if err = r.extChain(&x.Exts, h&FlagZ != 0, x.ext); err != nil {
		return err
	}
	hb, err := r.u8("body")
	if err != nil {
		return err
	}
	if ZenohID(hb&MaskID) == IDQuery {
		q := p.newQuery()
		x.Body = q
		return q.decode(r, hb)
	}
	body, ok, err := r.sampleBody(p, false, hb)
	if !ok {
		return r.errUnknownBody()
	}
	x.Body = body
	return err
}

// ext takes REQUEST's extensions: the network ones (NetExt), Target,
// Budget, Timeout.
func (x *Request) ext(r reader, e Ext, start int) (ok bool, err error) {
	if ok, err := x.NetExt.take(r, e, start); ok || err != nil {
		return true, err
	}
	switch e.Header {
	case ExtTarget:
		if e.Value > 0xff {
			return true, newErr(r.msg, "target", start, ErrTooLarge)
		}
		x.HasTarget, x.Target = true, QueryTarget(e.Value)
	case ExtBudget:
		if e.Value > 0xffff_ffff {
			return true, newErr(r.msg, "budget", start, ErrTooLarge)
		}
		x.HasBudget, x.Budget = true, uint32(e.Value)
	case ExtTimeout:
		x.HasTimeout = true
		x.Timeout, err = durationMs(&r, e.Value, start, "timeout")
	default:
		return false, nil
	}
	return true, err
}

// ParseRequest decodes a Request; b starts after the header byte h.
func ParseRequest(b []byte, h byte) (Request, int, error) {
	return parse(b, "REQUEST", func(m *Request, r *reader) error { return m.decode(r, h, nil) })
}
