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

func (x *Push) decode(r *reader, h byte, p *Parser) error {
	*x = Push{Exts: x.Exts[:0]}
	var err error
	if x.WireExpr, err = r.headWireExpr(h, p.interner()); err != nil {
		return err
	}
	if err = r.extChain(&x.Exts, h&FlagZ != 0, x.NetExt.take); err != nil {
		return err
	}
	hb, err := r.u8("body")
	if err != nil {
		return err
	}
	body, ok, err := r.sampleBody(p, false, hb)
	if !ok {
		return r.errUnknownBody()
	}
	x.Body = body
	return err
}

// ParsePush decodes a Push; b starts after the header byte h.
func ParsePush(b []byte, h byte) (Push, int, error) {
	return parse(b, "PUSH", func(m *Push, r *reader) error { return m.decode(r, h, nil) })
}
