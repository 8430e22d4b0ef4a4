package wire

// DeclareKeyExpr binds a numeric id to a key expression in the sender's id
// space (zenoh-wire.md §9.6, body 0x00):
//
//	 7 6 5 4 3 2 1 0
//	+-+-+-+---------+
//	|Z|X|N| D_KEXPR |  N: suffix present
//	+-+-+-+---------+
//	%  expr_id:z16  %
//	~   WireExpr    ~  use scope 0 (Rust and pico disagree on its mapping)
//	~    [exts]     ~
type DeclareKeyExpr struct {
	ID       uint16
	WireExpr WireExpr
	Exts     []Ext
}

// UndeclareKeyExpr removes an id bound by DeclareKeyExpr (body 0x01):
//
//	|Z|X|X| U_KEXPR | · %expr_id:z16% · [exts]
type UndeclareKeyExpr struct {
	ID   uint16
	Exts []Ext
}

// DeclID implements DeclarationBody.
func (*DeclareKeyExpr) DeclID() DeclID { return IDDeclareKeyExpr }

// DeclID implements DeclarationBody.
func (*UndeclareKeyExpr) DeclID() DeclID { return IDUndeclareKeyExpr }

// Len implements DeclarationBody.
func (m DeclareKeyExpr) Len() int {
	return 1 + VLELen(uint64(m.ID)) + m.WireExpr.Len() + extsLen(m.Exts)
}

// Append implements DeclarationBody.
func (m DeclareKeyExpr) Append(b []byte) []byte {
	p := len(b)
	b = append(b, byte(IDDeclareKeyExpr)|m.WireExpr.flags())
	b = AppendVLE(b, uint64(m.ID))
	b = m.WireExpr.Append(b)
	w := newExtWriter(b)
	w.raw(m.Exts)
	return finishHeader(&w, p)
}

func (m *DeclareKeyExpr) decode(r *reader, h byte, in *interner) error {
	x := DeclareKeyExpr{}
	var err error
	if x.ID, err = r.z16("expr_id"); err == nil {
		if x.WireExpr, err = r.headWireExpr(h, in); err == nil {
			x.Exts = m.Exts[:0]
			err = r.extChain(&x.Exts, h&FlagZ != 0, nil)
		}
	}
	*m = x
	return err
}

// Len implements DeclarationBody.
func (m UndeclareKeyExpr) Len() int { return 1 + VLELen(uint64(m.ID)) + extsLen(m.Exts) }

// Append implements DeclarationBody.
func (m UndeclareKeyExpr) Append(b []byte) []byte {
	p := len(b)
	b = append(b, byte(IDUndeclareKeyExpr))
	b = AppendVLE(b, uint64(m.ID))
	w := newExtWriter(b)
	w.raw(m.Exts)
	return finishHeader(&w, p)
}

func (m *UndeclareKeyExpr) decode(r *reader, h byte) error {
	x := UndeclareKeyExpr{}
	var err error
	if x.ID, err = r.z16("expr_id"); err == nil {
		x.Exts = m.Exts[:0]
		err = r.extChain(&x.Exts, h&FlagZ != 0, nil)
	}
	*m = x
	return err
}

// ParseDeclareKeyExpr decodes a DeclareKeyExpr declaration body; b starts after its
// header byte h.
func ParseDeclareKeyExpr(b []byte, h byte) (DeclareKeyExpr, int, error) {
	return parse(b, "DeclareKeyExpr", func(m *DeclareKeyExpr, r *reader) error { return m.decode(r, h, nil) })
}

// ParseUndeclareKeyExpr decodes a UndeclareKeyExpr declaration body; b starts after its
// header byte h.
func ParseUndeclareKeyExpr(b []byte, h byte) (UndeclareKeyExpr, int, error) {
	return parse(b, "UndeclareKeyExpr", func(m *UndeclareKeyExpr, r *reader) error { return m.decode(r, h) })
}
