package wire

// Declare carries one declaration (zenoh-wire.md §9.6):
//
//	 7 6 5 4 3 2 1 0
//	+-+-+-+---------+
//	|Z|X|I| DECLARE |  I: interest_id present (reply to a Current interest)
//	+-+-+-+---------+
//	% interest_id   %  z32, if I
//	~    [exts]     ~  0x21 QoS, 0x42 Timestamp, 0x33 NodeId (M)
//	~     body      ~  exactly one declaration, with its own header byte
type Declare struct {
	HasInterestID bool
	InterestID    uint32
	NetExt
	Exts []Ext
	Body DeclarationBody
}

// NetworkID implements NetworkMessage.
func (*Declare) NetworkID() NetworkID { return IDDeclare }

// Len implements NetworkMessage.
func (m Declare) Len() int {
	n := 1 + m.NetExt.extLen() + extsLen(m.Exts)
	if m.HasInterestID {
		n += VLELen(uint64(m.InterestID))
	}
	if m.Body != nil {
		n += m.Body.Len()
	}
	return n
}

// Append implements NetworkMessage.
func (m Declare) Append(b []byte) []byte {
	p := len(b)
	b = append(b, byte(IDDeclare)|boolByte(m.HasInterestID, FlagDeclareI))
	if m.HasInterestID {
		b = AppendVLE(b, uint64(m.InterestID))
	}
	w := newExtWriter(b)
	m.NetExt.write(&w)
	w.raw(m.Exts)
	b = finishHeader(&w, p)
	if m.Body != nil {
		b = m.Body.Append(b)
	}
	return b
}

func (x *Declare) decode(r *reader, h byte, p *Parser) error {
	*x = Declare{Exts: x.Exts[:0]}
	var err error
	if x.HasInterestID = h&FlagDeclareI != 0; x.HasInterestID {
		if x.InterestID, err = r.z32("interest_id"); err != nil {
			return err
		}
	}
	if err = r.extChain(&x.Exts, h&FlagZ != 0, x.NetExt.take); err != nil {
		return err
	}
	hb, err := r.u8("body")
	if err != nil {
		return err
	}
	in := p.interner()
	switch DeclID(hb & MaskID) {
	case IDDeclareKeyExpr:
		d := p.newDeclKeyExpr()
		x.Body = d
		return d.decode(r, hb, in)
	case IDUndeclareKeyExpr:
		d := p.newUndeclKeyExpr()
		x.Body = d
		return d.decode(r, hb)
	case IDDeclareSubscriber:
		d := p.newDeclSub()
		x.Body = d
		return d.decode(r, hb, in)
	case IDUndeclareSubscriber:
		d := p.newUndeclSub()
		x.Body = d
		return d.decode(r, hb, in)
	case IDDeclareQueryable:
		d := p.newDeclQbl()
		x.Body = d
		return d.decode(r, hb, in)
	case IDUndeclareQueryable:
		d := p.newUndeclQbl()
		x.Body = d
		return d.decode(r, hb, in)
	case IDDeclareToken:
		d := p.newDeclTok()
		x.Body = d
		return d.decode(r, hb, in)
	case IDUndeclareToken:
		d := p.newUndeclTok()
		x.Body = d
		return d.decode(r, hb, in)
	case IDDeclareFinal:
		d := p.newDeclFinal()
		x.Body = d
		return d.decode(r, hb)
	}
	return newErr(r.msg, "body", r.i-1, ErrUnknownMessage)
}

// ParseDeclare decodes a Declare; b starts after the header byte h.
func ParseDeclare(b []byte, h byte) (Declare, int, error) {
	return parse(b, "DECLARE", func(m *Declare, r *reader) error { return m.decode(r, h, nil) })
}

// DeclareFinal terminates the declarations answering a Current interest
// (zenoh-wire.md §9.6): body ID 0x1a, no fields; the enclosing DECLARE
// carries the interest id (I).
//
//	 7 6 5 4 3 2 1 0
//	+-+-+-+---------+
//	|Z|X|X| D_FINAL |
//	+-+-+-+---------+
type DeclareFinal struct {
	Exts []Ext
}

// DeclID implements DeclarationBody.
func (*DeclareFinal) DeclID() DeclID { return IDDeclareFinal }

// Len implements DeclarationBody.
func (m DeclareFinal) Len() int { return extsOnlyLen(m.Exts) }

// Append implements DeclarationBody.
func (m DeclareFinal) Append(b []byte) []byte { return appendExtsOnly(b, byte(IDDeclareFinal), m.Exts) }

func (m *DeclareFinal) decode(r *reader, h byte) error { return r.extsOnly(h, &m.Exts) }

// ParseDeclareFinal decodes a DeclareFinal declaration body; b starts after its
// header byte h.
func ParseDeclareFinal(b []byte, h byte) (DeclareFinal, int, error) {
	return parse(b, "DeclareFinal", func(m *DeclareFinal, r *reader) error { return m.decode(r, h) })
}
