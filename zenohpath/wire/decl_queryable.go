package wire

// UndeclareQueryable removes a queryable (zenoh-wire.md §9.6, body 0x05):
//
//	 7 6 5 4 3 2 1 0
//	+-+-+-+---------+
//	|Z|X|X| U_QBL   |
//	+-+-+-+---------+
//	%    id:z32     %
//	~    [exts]     ~  0x5F WireExpr (ZBuf, M): lets a receiver that never saw
//	                   the declaration identify the key
type UndeclareQueryable struct {
	ID          uint32
	HasWireExpr bool
	WireExpr    WireExpr
	Exts        []Ext
}

// DeclID implements DeclarationBody.
func (*UndeclareQueryable) DeclID() DeclID { return IDUndeclareQueryable }

func (m *UndeclareQueryable) ent() entityUndecl {
	return entityUndecl{m.ID, m.HasWireExpr, m.WireExpr, m.Exts}
}

// Len implements DeclarationBody.
func (m UndeclareQueryable) Len() int { d := m.ent(); return d.len() }

// Append implements DeclarationBody.
func (m UndeclareQueryable) Append(b []byte) []byte {
	d := m.ent()
	return d.append(b, IDUndeclareQueryable)
}

func (m *UndeclareQueryable) decode(r *reader, h byte, in *interner) error {
	d := entityUndecl{exts: m.Exts[:0]}
	err := d.decode(r, h, in)
	*m = UndeclareQueryable{d.id, d.hasWE, d.we, d.exts}
	return err
}

// DeclareQueryable declares a queryable (zenoh-wire.md §9.6, body 0x04):
//
//	 7 6 5 4 3 2 1 0
//	+-+-+-+---------+
//	|Z|M|N|  D_QBL  |  N: suffix present; M: scope declared by the sender
//	+-+-+-+---------+
//	%    id:z32     %
//	~   WireExpr    ~
//	~    [exts]     ~  0x21 QueryableInfo (Z64): bit0 complete, bits 8..23 distance
//
// Complete queryables are what Target=AllComplete looks for.
type DeclareQueryable struct {
	ID       uint32
	WireExpr WireExpr
	HasInfo  bool
	Complete bool
	Distance uint16
	Exts     []Ext
}

// DeclID implements DeclarationBody.
func (*DeclareQueryable) DeclID() DeclID { return IDDeclareQueryable }

func (m *DeclareQueryable) info() uint64 {
	v := uint64(m.Distance) << 8
	if m.Complete {
		v |= 1
	}
	return v
}

// Len implements DeclarationBody.
func (m DeclareQueryable) Len() int {
	d := entityDecl{m.ID, m.WireExpr, m.Exts}
	if m.HasInfo {
		return d.len(z64Len(m.info()))
	}
	return d.len(0)
}

// Append implements DeclarationBody.
func (m DeclareQueryable) Append(b []byte) []byte {
	d := entityDecl{m.ID, m.WireExpr, m.Exts}
	w, p := d.appendHead(b, IDDeclareQueryable)
	if m.HasInfo {
		w.z64(ExtQueryableInfo, m.info())
	}
	w.raw(m.Exts)
	return finishHeader(&w, p)
}

func (m *DeclareQueryable) decode(r *reader, h byte, in *interner) error {
	d := entityDecl{}
	x := DeclareQueryable{Exts: m.Exts[:0]}
	err := d.decodeHead(r, h, in)
	x.ID, x.WireExpr = d.id, d.we
	if err == nil {
		err = r.extChain(&x.Exts, h&FlagZ != 0, x.ext)
	}
	*m = x
	return err
}

// ext takes the queryable's extension: QueryableInfo (complete, distance).
func (x *DeclareQueryable) ext(r reader, e Ext, start int) (ok bool, err error) {
	if e.Header != ExtQueryableInfo {
		return false, nil
	}
	if e.Value>>24 != 0 {
		return true, newErr(r.msg, "queryable_info", start, ErrTooLarge)
	}
	x.HasInfo, x.Complete, x.Distance = true, e.Value&1 != 0, uint16(e.Value>>8)
	return true, nil
}

// ParseDeclareQueryable decodes a DeclareQueryable declaration body; b starts after its
// header byte h.
func ParseDeclareQueryable(b []byte, h byte) (DeclareQueryable, int, error) {
	return parse(b, "DeclareQueryable", func(m *DeclareQueryable, r *reader) error { return m.decode(r, h, nil) })
}

// ParseUndeclareQueryable decodes a UndeclareQueryable declaration body; b starts after its
// header byte h.
func ParseUndeclareQueryable(b []byte, h byte) (UndeclareQueryable, int, error) {
	return parse(b, "UndeclareQueryable", func(m *UndeclareQueryable, r *reader) error { return m.decode(r, h, nil) })
}
