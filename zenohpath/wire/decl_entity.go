package wire

// Shared code of the entity declarations (subscriber, queryable, token)
// and their undeclarations, zenoh-wire.md §9.6.

type entityDecl struct {
	id   uint32
	we   WireExpr
	exts []Ext
}

func (d *entityDecl) len(extra int) int {
	return 1 + VLELen(uint64(d.id)) + d.we.Len() + extsLen(d.exts) + extra
}

func (d *entityDecl) appendHead(b []byte, id DeclID) (extWriter, int) {
	p := len(b)
	b = append(b, byte(id)|d.we.flags())
	b = AppendVLE(b, uint64(d.id))
	b = d.we.Append(b)
	return newExtWriter(b), p
}

func (d *entityDecl) decodeHead(r *reader, h byte, in *interner) error {
	var err error
	if d.id, err = r.z32("id"); err != nil {
		return err
	}
	d.we, err = r.headWireExpr(h, in)
	return err
}

// undeclWireExpr is the optional ext 0x5F (ZBuf, mandatory) of the
// Undeclare* bodies: u8 flags (bit0 N, bit1 M) · %scope% · suffix as raw
// bytes to the end of the extension (no length).
func undeclWireExprLen(w WireExpr) int {
	n := 1 + VLELen(uint64(w.Scope))
	if w.HasSuffix() {
		n += len(w.Suffix)
	}
	return n
}

func appendUndeclWireExpr(wr *extWriter, w WireExpr) {
	wr.hdr(ExtUndeclareWireExp)
	wr.b = AppendVLE(wr.b, uint64(undeclWireExprLen(w)))
	wr.b = append(wr.b, boolByte(w.HasSuffix(), 0x01)|boolByte(bool(w.Mapping), 0x02))
	wr.b = AppendVLE(wr.b, uint64(w.Scope))
	if w.HasSuffix() {
		wr.b = append(wr.b, w.Suffix...)
	}
}

func (r *reader) undeclWireExpr(e Ext, start int, in *interner) (WireExpr, error) {
	s := reader{b: e.Body, msg: r.msg}
	var w WireExpr
	flags, err := s.u8("wire_expr")
	if err == nil {
		w.Mapping = Mapping(flags&0x02 != 0)
		if w.Scope, err = s.z16("wire_expr"); err == nil && flags&0x01 != 0 {
			w.Suffix = in.str(s.rest())
		}
	}
	if err != nil {
		return w, newErr(r.msg, "wire_expr", start, sentinel(err))
	}
	return w, nil
}

type entityUndecl struct {
	id    uint32
	hasWE bool
	we    WireExpr
	exts  []Ext
}

func (d *entityUndecl) len() int {
	n := 1 + VLELen(uint64(d.id)) + extsLen(d.exts)
	if d.hasWE {
		n += zbufLen(undeclWireExprLen(d.we))
	}
	return n
}

func (d *entityUndecl) append(b []byte, id DeclID) []byte {
	p := len(b)
	b = append(b, byte(id))
	b = AppendVLE(b, uint64(d.id))
	w := newExtWriter(b)
	if d.hasWE {
		appendUndeclWireExpr(&w, d.we)
	}
	w.raw(d.exts)
	return finishHeader(&w, p)
}

func (d *entityUndecl) decode(r *reader, h byte, in *interner) error {
	var err error
	if d.id, err = r.z32("id"); err != nil {
		return err
	}
	err = r.extChain(&d.exts, h&FlagZ != 0, func(r reader, e Ext, start int) (bool, error) {
		if e.Header != ExtUndeclareWireExp {
			return false, nil
		}
		d.hasWE = true
		d.we, err = r.undeclWireExpr(e, start, in)
		return true, err
	})
	return err
}
