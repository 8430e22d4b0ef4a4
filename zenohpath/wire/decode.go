package wire

// The decode idiom every message file follows (docs/architecture.md, step 5):
//
//	func (x *Put) decode(r *reader, h byte) error  // fields in wire order, then
//	    err = r.extChain(&x.Exts, h&FlagZ != 0, x.ext)
//	func (x *Put) ext(r reader, e Ext, start int) (bool, error)  // its known extensions
//	func ParsePut(b []byte, h byte) (Put, int, error)  // parse(b, "PUT", ...)
//
// so a message's file holds its bit diagram, its fields and the extensions
// it knows; the loop over the chain, the unknown-extension rule and the
// PUT/DEL bodies are here.

// extFunc takes one extension a message knows: ok is false for one it does
// not know (extChain then keeps it raw, or refuses it if mandatory). start
// is the offset of the extension's header, for errors. It gets a copy of
// the reader (for its message name): a pointer handed to a function value
// would escape, and the Parser's readers must stay on the stack
// (TestParserAllocs).
type extFunc func(r reader, e Ext, start int) (ok bool, err error)

// extChain reads the extension chain that a header's Z flag (more)
// announces, handing each extension to known first (nil: none is known).
// Unknown ones are appended to *dst, the message's raw extensions (known
// may append there too: JOIN keeps some raw); an unknown mandatory one is
// ErrUnknownMandatoryExt (zenoh-wire.md §1.3).
func (r *reader) extChain(dst *[]Ext, more bool, known extFunc) error {
	for more {
		start := r.i
		var e Ext
		var err error
		if e, more, err = r.ext(); err != nil {
			return err
		}
		if known != nil {
			ok, err := known(*r, e, start)
			if err != nil {
				return err
			}
			if ok {
				continue
			}
		}
		if *dst, err = r.unknownExt(*dst, e, start); err != nil {
			return err
		}
	}
	return nil
}

// parse is the body of every exported ParseX: it runs decode over b (which
// starts after the header byte) and returns the message and the number of
// bytes consumed. msg names the message in errors.
func parse[T any](b []byte, msg string, decode func(*T, *reader) error) (T, int, error) {
	var m T
	r := reader{b: b, msg: msg}
	err := decode(&m, &r)
	return m, r.i, err
}

// headWireExpr reads the WireExpr whose N and M flags are in the message's
// header h (PUSH, REQUEST, RESPONSE, the declarations).
func (r *reader) headWireExpr(h byte, in *interner) (WireExpr, error) {
	return r.wireExpr(h&FlagN != 0, Mapping(h&FlagM != 0), in)
}

// requestHead reads the request_id (z32) and WireExpr that REQUEST and
// RESPONSE start with.
func (r *reader) requestHead(h byte, p *Parser) (id uint32, we WireExpr, err error) {
	if id, err = r.z32("request_id"); err != nil {
		return id, we, err
	}
	we, err = r.headWireExpr(h, p.interner())
	return id, we, err
}

// sample is a PUT or a DEL: the bodies PUSH, REQUEST and REPLY carry.
type sample interface {
	PushBody
	RequestBody
	ReplyBody
}

// sampleBody decodes the PUT or DEL whose header byte is hb into a value
// of the Parser's (reply: its reply pool); ok is false for any other body.
func (r *reader) sampleBody(p *Parser, reply bool, hb byte) (body sample, ok bool, err error) {
	switch ZenohID(hb & MaskID) {
	case IDPut:
		put := p.newPut(reply)
		return put, true, put.decode(r, hb)
	case IDDel:
		del := p.newDel(reply)
		return del, true, del.decode(r, hb)
	}
	return nil, false, nil
}

// errUnknownBody is the error for a body header (read just before r.i)
// its carrier does not allow.
func (r *reader) errUnknownBody() error { return newErr(r.msg, "body", r.i-1, ErrUnknownMessage) }
