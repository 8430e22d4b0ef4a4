package wire

// Push carries pub/sub data (zenoh-wire.md §9.2):
//
//	 7 6 5 4 3 2 1 0
//	+-+-+-+---------+
//	|Z|M|N|  PUSH   |  N: suffix present; M: scope declared by the sender
//	+-+-+-+---------+
//	~   WireExpr    ~  %scope:z16% [suffix <u8;z16> if N]
//	+---------------+
//	~    [exts]     ~  0x21 QoS, 0x42 Timestamp, 0x33 NodeId (M), 0x47 TsStack
//	+---------------+
//	~  PUT or DEL   ~
//
// Reliability is the enclosing FRAME's R flag.
type Push struct {
	WireExpr WireExpr
	NetExt
	Exts []Ext
	Body PushBody // *Put or *Del
}

// NetworkID implements NetworkMessage.
func (*Push) NetworkID() NetworkID { return IDPush }

// Len implements NetworkMessage.
func (m Push) Len() int {
	n := 1 + m.WireExpr.Len() + m.NetExt.extLen() + extsLen(m.Exts)
	if m.Body != nil {
		n += m.Body.Len()
	}
	return n
}

// Append implements NetworkMessage.
func (m Push) Append(b []byte) []byte {
	p := len(b)
	b = append(b, byte(IDPush)|m.WireExpr.flags())
	b = m.WireExpr.Append(b)
	w := newExtWriter(b)
	m.NetExt.write(&w)
	w.raw(m.Exts)
	b = finishHeader(&w, p)
	if m.Body != nil {
		b = m.Body.Append(b)
	}
	return b
}

func (m *Push) decode(r *reader, h byte, p *Parser) error {
	x := Push{Exts: m.Exts[:0]}
	err := x.decodeRest(r, h, p)
	*m = x
	return err
}

func (x *Push) decodeRest(r *reader, h byte, p *Parser) error {
	var err error
	if x.WireExpr, err = r.wireExpr(h&FlagN != 0, Mapping(h&FlagM != 0), p.interner()); err != nil {
		return err
	}
	if x.Exts, err = x.NetExt.exts(r, x.Exts, h&FlagZ != 0); err != nil {
		return err
	}
	hb, err := r.u8("body")
	if err != nil {
		return err
	}
	switch ZenohID(hb & MaskID) {
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

// ParsePush decodes a Push; b starts after the header byte h.
func ParsePush(b []byte, h byte) (Push, int, error) {
	var m Push
	r := reader{b: b, msg: "PUSH"}
	err := m.decode(&r, h, nil)
	return m, r.i, err
}
