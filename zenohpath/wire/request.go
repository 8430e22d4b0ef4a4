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

func (m *Request) decode(r *reader, h byte, p *Parser) error {
	x := Request{Exts: m.Exts[:0]}
	err := x.decodeRest(r, h, p)
	*m = x
	return err
}

func (x *Request) decodeRest(r *reader, h byte, p *Parser) error {
	var err error
	if x.ID, err = r.z32("request_id"); err != nil {
		return err
	}
	if x.WireExpr, err = r.wireExpr(h&FlagN != 0, Mapping(h&FlagM != 0), p.interner()); err != nil {
		return err
	}
	for more := h&FlagZ != 0; more; {
		start := r.i
		var e Ext
		if e, more, err = r.ext(); err != nil {
			return err
		}
		if ok, err := x.NetExt.take(r, e, start); ok || err != nil {
			if err != nil {
				return err
			}
			continue
		}
		switch e.Header {
		case ExtTarget:
			if e.Value > 0xff {
				return newErr(r.msg, "target", start, ErrTooLarge)
			}
			x.HasTarget, x.Target = true, QueryTarget(e.Value)
		case ExtBudget:
			if e.Value > 0xffff_ffff {
				return newErr(r.msg, "budget", start, ErrTooLarge)
			}
			x.HasBudget, x.Budget = true, uint32(e.Value)
		case ExtTimeout:
			x.HasTimeout = true
			if x.Timeout, err = durationMs(r, e.Value, start, "timeout"); err != nil {
				return err
			}
		default:
			if x.Exts, err = r.unknownExt(x.Exts, e, start); err != nil {
				return err
			}
		}
	}
	hb, err := r.u8("body")
	if err != nil {
		return err
	}
	switch ZenohID(hb & MaskID) {
	case IDQuery:
		q := p.newQuery()
		x.Body = q
		return q.decode(r, hb)
	case IDPut:
		put := p.newPut(false)
		x.Body = put
		return put.decode(r, hb)
	case IDDel:
		del := p.newDel(false)
		x.Body = del
		return del.decode(r, hb)
	}
	return newErr(r.msg, "body", r.i-1, ErrUnknownMessage)
}

// ParseRequest decodes a Request; b starts after the header byte h.
func ParseRequest(b []byte, h byte) (Request, int, error) {
	var m Request
	r := reader{b: b, msg: "REQUEST"}
	err := m.decode(&r, h, nil)
	return m, r.i, err
}
