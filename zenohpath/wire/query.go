package wire

// Consolidation is the QUERY/REPLY consolidation value (zenoh-wire.md
// §10.3). Rust numbering: 0 Auto, 1 None, 2 Monotonic, 3 Latest; pico
// writes its C enum (0 None, 1 Monotonic, 2 Latest). Treat as advisory.
type Consolidation uint8

// Consolidation values (Rust numbering).
const (
	ConsolidationAuto      Consolidation = 0
	ConsolidationNone      Consolidation = 1
	ConsolidationMonotonic Consolidation = 2
	ConsolidationLatest    Consolidation = 3
)

// QueryBody is the QUERY ext 0x43: an encoding then the raw payload to the
// end of the extension (no inner length), zenoh-wire.md §10.3.
type QueryBody struct {
	Encoding Encoding
	Payload  []byte // aliases the input
}

// Query is the body of a REQUEST (zenoh-wire.md §10.3):
//
//	 7 6 5 4 3 2 1 0
//	+-+-+-+---------+
//	|Z|P|C|  QUERY  |  C: consolidation; P: parameters
//	+-+-+-+---------+
//	% consolidation %  if C
//	~ params <u8;z16> ~ if P: the selector part after '?'
//	~    [exts]     ~  0x41 SourceInfo, 0x43 QueryBody, 0x45 Attachment
type Query struct {
	HasConsolidation bool
	Consolidation    Consolidation
	Parameters       string // P is written iff non-empty
	HasSourceInfo    bool
	SourceInfo       SourceInfo
	HasBody          bool
	Body             QueryBody
	Attachment       []byte // ext 0x45; nil = absent; aliases the input
	Exts             []Ext
}

// ZenohID implements ZenohMessage.
func (*Query) ZenohID() ZenohID { return IDQuery }
func (*Query) isRequestBody()   {}

func (m *Query) bodyLen() int { return m.Body.Encoding.Len() + len(m.Body.Payload) }

// Len implements ZenohMessage.
func (m Query) Len() int {
	n := 1 + extsLen(m.Exts)
	if m.HasConsolidation {
		n += VLELen(uint64(m.Consolidation))
	}
	if m.Parameters != "" {
		n += bytesLen(len(m.Parameters))
	}
	if m.HasSourceInfo {
		n += zbufLen(m.SourceInfo.Len())
	}
	if m.HasBody {
		n += zbufLen(m.bodyLen())
	}
	if m.Attachment != nil {
		n += zbufLen(len(m.Attachment))
	}
	return n
}

// Append implements ZenohMessage.
func (m Query) Append(b []byte) []byte {
	p := len(b)
	b = append(b, byte(IDQuery)|boolByte(m.HasConsolidation, FlagConsolidation)|boolByte(m.Parameters != "", FlagParameters))
	if m.HasConsolidation {
		b = AppendVLE(b, uint64(m.Consolidation))
	}
	if m.Parameters != "" {
		b = appendString(b, m.Parameters)
	}
	w := newExtWriter(b)
	if m.HasSourceInfo {
		w.sourceInfo(m.SourceInfo)
	}
	if m.HasBody {
		w.hdr(ExtQueryBody)
		w.b = AppendVLE(w.b, uint64(m.bodyLen()))
		w.b = m.Body.Encoding.Append(w.b)
		w.b = append(w.b, m.Body.Payload...)
	}
	if m.Attachment != nil {
		w.zbuf(ExtQueryAttachment, m.Attachment)
	}
	w.raw(m.Exts)
	return finishHeader(&w, p)
}

func (x *Query) decode(r *reader, h byte) error {
	*x = Query{Exts: x.Exts[:0]}
	var err error
	if x.HasConsolidation = h&FlagConsolidation != 0; x.HasConsolidation {
		v, err := r.z8("consolidation")
		if err != nil {
			return err
		}
		x.Consolidation = Consolidation(v)
	}
	if h&FlagParameters != 0 {
		s, err := r.bytes("parameters", 0xffff)
		if err != nil {
			return err
		}
		x.Parameters = string(s)
	}
	err = r.extChain(&x.Exts, h&FlagZ != 0, x.ext)
	return err
}

// ext takes QUERY's extensions: SourceInfo, Body, Attachment.
func (x *Query) ext(r reader, e Ext, start int) (ok bool, err error) {
	switch e.Header {
	case ExtSourceInfo:
		x.HasSourceInfo = true
		x.SourceInfo, err = r.sourceInfoExt(e, start)
	case ExtQueryBody:
		x.HasBody = true
		s := reader{b: e.Body, msg: r.msg}
		if x.Body.Encoding, err = s.encoding("body"); err != nil {
			return true, newErr(r.msg, "body", start, sentinel(err))
		}
		x.Body.Payload = s.rest()
	case ExtQueryAttachment:
		x.Attachment = e.Body
	default:
		return false, nil
	}
	return true, err
}

// ParseQuery decodes a Query; b starts after the header byte h.
func ParseQuery(b []byte, h byte) (Query, int, error) {
	return parse(b, "QUERY", func(m *Query, r *reader) error { return m.decode(r, h) })
}
