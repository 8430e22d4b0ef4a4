package wire

// Response carries one reply to a REQUEST (zenoh-wire.md §9.4):
//
//	 7 6 5 4 3 2 1 0
//	+-+-+-+---------+
//	|Z|M|N|RESPONSE |
//	+-+-+-+---------+
//	%  request_id   %  z32
//	~   WireExpr    ~  key of the reply sample
//	~    [exts]     ~  0x21 QoS, 0x42 Timestamp, 0x43 ResponderId, 0x47 TsStack
//	~     body      ~  REPLY or ERR
type Response struct {
	ID       uint32
	WireExpr WireExpr
	NetExt
	HasResponderID bool
	ResponderID    EntityGlobalID // ext 0x43 (ZBuf), §1.6
	Exts           []Ext
	Body           ResponseBody // *Reply or *Err
}

// NetworkID implements NetworkMessage.
func (*Response) NetworkID() NetworkID { return IDResponse }

// Len implements NetworkMessage.
func (m Response) Len() int {
	n := 1 + VLELen(uint64(m.ID)) + m.WireExpr.Len() + m.NetExt.extLen() + extsLen(m.Exts)
	if m.HasResponderID {
		n += zbufLen(m.ResponderID.Len())
	}
	if m.Body != nil {
		n += m.Body.Len()
	}
	return n
}

// Append implements NetworkMessage.
func (m Response) Append(b []byte) []byte {
	p := len(b)
	b = append(b, byte(IDResponse)|m.WireExpr.flags())
	b = AppendVLE(b, uint64(m.ID))
	b = m.WireExpr.Append(b)
	w := newExtWriter(b)
	m.NetExt.write(&w)
	if m.HasResponderID {
		w.hdr(ExtResponderID)
		w.b = AppendVLE(w.b, uint64(m.ResponderID.Len()))
		w.b = m.ResponderID.Append(w.b)
	}
	w.raw(m.Exts)
	b = finishHeader(&w, p)
	if m.Body != nil {
		b = m.Body.Append(b)
	}
	return b
}

func (m *Response) decode(r *reader, h byte, p *Parser) error {
	x := Response{Exts: m.Exts[:0]}
	err := x.decodeRest(r, h, p)
	*m = x
	return err
}

func (x *Response) decodeRest(r *reader, h byte, p *Parser) error {
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
		if e.Header == ExtResponderID {
			x.HasResponderID = true
			if x.ResponderID, err = r.entityGlobalIDExt(e, start, "responder_id"); err != nil {
				return err
			}
			continue
		}
		if x.Exts, err = r.unknownExt(x.Exts, e, start); err != nil {
			return err
		}
	}
	hb, err := r.u8("body")
	if err != nil {
		return err
	}
	switch ZenohID(hb & MaskID) {
	case IDReply:
		rp := p.newReply()
		x.Body = rp
		return rp.decode(r, hb, p)
	case IDErr:
		e := p.newErr()
		x.Body = e
		return e.decode(r, hb)
	}
	return newErr(r.msg, "body", r.i-1, ErrUnknownMessage)
}

// ParseResponse decodes a Response; b starts after the header byte h.
func ParseResponse(b []byte, h byte) (Response, int, error) {
	var m Response
	r := reader{b: b, msg: "RESPONSE"}
	err := m.decode(&r, h, nil)
	return m, r.i, err
}

// ResponseFinal ends the replies to a REQUEST (zenoh-wire.md §9.5):
//
//	 7 6 5 4 3 2 1 0
//	+-+-+-+---------+
//	|Z|X|X| RES_FIN |
//	+-+-+-+---------+
//	%  request_id   %  z32
//	~    [exts]     ~  0x21 QoS, 0x42 Timestamp
//
// Observed from pico: `1a 01`.
type ResponseFinal struct {
	ID uint32
	NetExt
	Exts []Ext
}

// NetworkID implements NetworkMessage.
func (*ResponseFinal) NetworkID() NetworkID { return IDResponseFinal }

// Len implements NetworkMessage.
func (m ResponseFinal) Len() int {
	return 1 + VLELen(uint64(m.ID)) + m.NetExt.extLen() + extsLen(m.Exts)
}

// Append implements NetworkMessage.
func (m ResponseFinal) Append(b []byte) []byte {
	p := len(b)
	b = append(b, byte(IDResponseFinal))
	b = AppendVLE(b, uint64(m.ID))
	w := newExtWriter(b)
	m.NetExt.write(&w)
	w.raw(m.Exts)
	return finishHeader(&w, p)
}

func (m *ResponseFinal) decode(r *reader, h byte) error {
	x := ResponseFinal{}
	var err error
	if x.ID, err = r.z32("request_id"); err == nil {
		x.Exts, err = x.NetExt.exts(r, m.Exts[:0], h&FlagZ != 0)
	}
	*m = x
	return err
}

// ParseResponseFinal decodes a ResponseFinal; b starts after the header h.
func ParseResponseFinal(b []byte, h byte) (ResponseFinal, int, error) {
	var m ResponseFinal
	r := reader{b: b, msg: "RESPONSE_FINAL"}
	err := m.decode(&r, h)
	return m, r.i, err
}
