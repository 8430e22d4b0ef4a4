package wire

// DeclareSubscriber declares a subscriber (zenoh-wire.md §9.6, body 0x02):
//
//	 7 6 5 4 3 2 1 0
//	+-+-+-+---------+
//	|Z|M|N| D_SUB   |  N: suffix present; M: scope declared by the sender
//	+-+-+-+---------+
//	%    id:z32     %
//	~   WireExpr    ~
//	~    [exts]     ~
type DeclareSubscriber struct {
	ID       uint32
	WireExpr WireExpr
	Exts     []Ext
}

// DeclID implements DeclarationBody.
func (*DeclareSubscriber) DeclID() DeclID { return IDDeclareSubscriber }

func (m *DeclareSubscriber) ent() entityDecl { return entityDecl{m.ID, m.WireExpr, m.Exts} }

// Len implements DeclarationBody.
func (m DeclareSubscriber) Len() int { d := m.ent(); return d.len(0) }

// Append implements DeclarationBody.
func (m DeclareSubscriber) Append(b []byte) []byte {
	d := m.ent()
	w, p := d.appendHead(b, IDDeclareSubscriber)
	w.raw(m.Exts)
	return finishHeader(&w, p)
}

func (m *DeclareSubscriber) decode(r *reader, h byte, in *interner) error {
	d := entityDecl{}
	err := d.decodeHead(r, h, in)
	if err == nil {
		d.exts = m.Exts[:0]
		err = r.extChain(&d.exts, h&FlagZ != 0, nil)
	}
	*m = DeclareSubscriber{d.id, d.we, d.exts}
	return err
}

// UndeclareSubscriber removes a subscriber (zenoh-wire.md §9.6, body 0x03):
//
//	 7 6 5 4 3 2 1 0
//	+-+-+-+---------+
//	|Z|X|X| U_SUB   |
//	+-+-+-+---------+
//	%    id:z32     %
//	~    [exts]     ~  0x5F WireExpr (ZBuf, M): lets a receiver that never saw
//	                   the declaration identify the key
type UndeclareSubscriber struct {
	ID          uint32
	HasWireExpr bool
	WireExpr    WireExpr
	Exts        []Ext
}

// DeclID implements DeclarationBody.
func (*UndeclareSubscriber) DeclID() DeclID { return IDUndeclareSubscriber }

func (m *UndeclareSubscriber) ent() entityUndecl {
	return entityUndecl{m.ID, m.HasWireExpr, m.WireExpr, m.Exts}
}

// Len implements DeclarationBody.
func (m UndeclareSubscriber) Len() int { d := m.ent(); return d.len() }

// Append implements DeclarationBody.
func (m UndeclareSubscriber) Append(b []byte) []byte {
	d := m.ent()
	return d.append(b, IDUndeclareSubscriber)
}

func (m *UndeclareSubscriber) decode(r *reader, h byte, in *interner) error {
	d := entityUndecl{exts: m.Exts[:0]}
	err := d.decode(r, h, in)
	*m = UndeclareSubscriber{d.id, d.hasWE, d.we, d.exts}
	return err
}

// ParseDeclareSubscriber decodes a DeclareSubscriber declaration body; b starts after its
// header byte h.
func ParseDeclareSubscriber(b []byte, h byte) (DeclareSubscriber, int, error) {
	return parse(b, "DeclareSubscriber", func(m *DeclareSubscriber, r *reader) error { return m.decode(r, h, nil) })
}

// ParseUndeclareSubscriber decodes a UndeclareSubscriber declaration body; b starts after its
// header byte h.
func ParseUndeclareSubscriber(b []byte, h byte) (UndeclareSubscriber, int, error) {
	return parse(b, "UndeclareSubscriber", func(m *UndeclareSubscriber, r *reader) error { return m.decode(r, h, nil) })
}
