package wire

// ReplyBody is the body of a REPLY: *Put or *Del.
type ReplyBody interface {
	ZenohMessage
	isReplyBody()
}

// Reply is a positive answer inside a RESPONSE (zenoh-wire.md §10.4):
//
//	 7 6 5 4 3 2 1 0
//	+-+-+-+---------+
//	|Z|X|C|  REPLY  |  C: consolidation
//	+-+-+-+---------+
//	% consolidation %  if C
//	~    [exts]     ~  pico rejects ANY reply extension: never send one to pico
//	~  PUT or DEL   ~  a complete message with its own header
type Reply struct {
	HasConsolidation bool
	Consolidation    Consolidation
	Exts             []Ext
	Body             ReplyBody // *Put or *Del
}

// ZenohID implements ZenohMessage.
func (*Reply) ZenohID() ZenohID { return IDReply }
func (*Reply) isResponseBody()  {}

// Len implements ZenohMessage.
func (m Reply) Len() int {
	n := 1 + extsLen(m.Exts)
	if m.HasConsolidation {
		n += VLELen(uint64(m.Consolidation))
	}
	if m.Body != nil {
		n += m.Body.Len()
	}
	return n
}

// Append implements ZenohMessage.
func (m Reply) Append(b []byte) []byte {
	p := len(b)
	b = append(b, byte(IDReply)|boolByte(m.HasConsolidation, FlagConsolidation))
	if m.HasConsolidation {
		b = AppendVLE(b, uint64(m.Consolidation))
	}
	w := newExtWriter(b)
	w.raw(m.Exts)
	b = finishHeader(&w, p)
	if m.Body != nil {
		b = m.Body.Append(b)
	}
	return b
}

func (x *Reply) decode(r *reader, h byte, p *Parser) error {
	exts := x.Exts[:0]
	*x = Reply{}
	var err error
	if x.HasConsolidation = h&FlagConsolidation != 0; x.HasConsolidation {
		v, err := r.z8("consolidation")
		if err != nil {
			return err
		}
		x.Consolidation = Consolidation(v)
	}
	x.Exts = exts
	if err = r.extChain(&x.Exts, h&FlagZ != 0, nil); err != nil {
		return err
	}
	hb, err := r.u8("body")
	if err != nil {
		return err
	}
	body, ok, err := r.sampleBody(p, true, hb)
	if !ok {
		return r.errUnknownBody()
	}
	x.Body = body
	return err
}

// ParseReply decodes a Reply; b starts after the header byte h.
func ParseReply(b []byte, h byte) (Reply, int, error) {
	return parse(b, "REPLY", func(m *Reply, r *reader) error { return m.decode(r, h, nil) })
}
