package wire

// DeclareToken declares a liveliness token (zenoh-wire.md §9.6, body 0x06):
//
//	 7 6 5 4 3 2 1 0
//	+-+-+-+---------+
//	|Z|M|N| D_TOKEN |  N: suffix present; M: scope declared by the sender
//	+-+-+-+---------+
//	%    id:z32     %
//	~   WireExpr    ~
//	~    [exts]     ~
type DeclareToken struct {
	ID       uint32
	WireExpr WireExpr
	Exts     []Ext
}

// DeclID implements DeclarationBody.
func (*DeclareToken) DeclID() DeclID { return IDDeclareToken }

func (m *DeclareToken) ent() entityDecl { return entityDecl{m.ID, m.WireExpr, m.Exts} }

// Len implements DeclarationBody.
func (m DeclareToken) Len() int { d := m.ent(); return d.len(0) }

// Append implements DeclarationBody.
func (m DeclareToken) Append(b []byte) []byte {
	d := m.ent()
	w, p := d.appendHead(b, IDDeclareToken)
	w.raw(m.Exts)
	return finishHeader(&w, p)
}

func (m *DeclareToken) decode(r *reader, h byte, in *interner) error {
	d := entityDecl{}
	err := d.decodeHead(r, h, in)
	if err == nil {
		d.exts = m.Exts[:0]
		err = r.extChain(&d.exts, h&FlagZ != 0, nil)
	}
	*m = DeclareToken{d.id, d.we, d.exts}
	return err
}

// UndeclareToken removes a liveliness token (zenoh-wire.md §9.6, body 0x07):
//
//	 7 6 5 4 3 2 1 0
//	+-+-+-+---------+
//	|Z|X|X| U_TOKEN |
//	+-+-+-+---------+
//	%    id:z32     %
//	~    [exts]     ~  0x5F WireExpr (ZBuf, M): lets a receiver that never saw
//	                   the declaration identify the key
type UndeclareToken struct {
	ID          uint32
	HasWireExpr bool
	WireExpr    WireExpr
	Exts        []Ext
}

// DeclID implements DeclarationBody.
func (*UndeclareToken) DeclID() DeclID { return IDUndeclareToken }

func (m *UndeclareToken) ent() entityUndecl {
	return entityUndecl{m.ID, m.HasWireExpr, m.WireExpr, m.Exts}
}

// Len implements DeclarationBody.
func (m UndeclareToken) Len() int { d := m.ent(); return d.len() }

// Append implements DeclarationBody.
func (m UndeclareToken) Append(b []byte) []byte { d := m.ent(); return d.append(b, IDUndeclareToken) }

func (m *UndeclareToken) decode(r *reader, h byte, in *interner) error {
	d := entityUndecl{exts: m.Exts[:0]}
	err := d.decode(r, h, in)
	*m = UndeclareToken{d.id, d.hasWE, d.we, d.exts}
	return err
}

// ParseDeclareToken decodes a DeclareToken declaration body; b starts after its
// header byte h.
func ParseDeclareToken(b []byte, h byte) (DeclareToken, int, error) {
	return parse(b, "DeclareToken", func(m *DeclareToken, r *reader) error { return m.decode(r, h, nil) })
}

// ParseUndeclareToken decodes a UndeclareToken declaration body; b starts after its
// header byte h.
func ParseUndeclareToken(b []byte, h byte) (UndeclareToken, int, error) {
	return parse(b, "UndeclareToken", func(m *UndeclareToken, r *reader) error { return m.decode(r, h, nil) })
}
