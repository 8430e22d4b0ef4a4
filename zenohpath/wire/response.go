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

func (x *Response) decode(r *reader, h byte, p *Parser) error {
	*x = Response{Exts: x.Exts[:0]}
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
	return r.errUnknownBody()
}

// ext takes RESPONSE's extensions: the network ones (NetExt), ResponderID.
func (x *Response) ext(r reader, e Ext, start int) (ok bool, err error) {
	if ok, err := x.NetExt.take(r, e, start); ok || err != nil {
		return true, err
	}
	if e.Header != ExtResponderID {
		return false, nil
	}
	x.HasResponderID = true
	x.ResponderID, err = r.entityGlobalIDExt(e, start, "responder_id")
	return true, err
}

// ParseResponse decodes a Response; b starts after the header byte h.
func ParseResponse(b []byte, h byte) (Response, int, error) {
	return parse(b, "RESPONSE", func(m *Response, r *reader) error { return m.decode(r, h, nil) })
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
		x.Exts = m.Exts[:0]
		err = r.extChain(&x.Exts, h&FlagZ != 0, x.NetExt.take)
	}
	*m = x
	return err
}

// ParseResponseFinal decodes a ResponseFinal; b starts after the header h.
func ParseResponseFinal(b []byte, h byte) (ResponseFinal, int, error) {
	return parse(b, "RESPONSE_FINAL", func(m *ResponseFinal, r *reader) error { return m.decode(r, h) })
}
