package wire

// Del deletes a key (zenoh-wire.md §10.2):
//
//	 7 6 5 4 3 2 1 0
//	+-+-+-+---------+
//	|Z|X|T|   DEL   |  T: timestamp
//	+-+-+-+---------+
//	~  timestamp    ~  if T
//	~    [exts]     ~  0x41 SourceInfo, 0x42 Attachment (Rust numbering;
//	                   pico looks under 0x43 and never sends one)
type Del struct {
	HasTimestamp  bool
	Timestamp     Timestamp
	HasSourceInfo bool
	SourceInfo    SourceInfo
	Attachment    []byte // ext 0x42; nil = absent; aliases the input
	Exts          []Ext
}

// ZenohID implements ZenohMessage.
func (*Del) ZenohID() ZenohID { return IDDel }
func (*Del) isPushBody()      {}
func (*Del) isRequestBody()   {}
func (*Del) isReplyBody()     {}

// Len implements ZenohMessage.
func (m Del) Len() int {
	n := 1 + extsLen(m.Exts)
	if m.HasTimestamp {
		n += m.Timestamp.Len()
	}
	if m.HasSourceInfo {
		n += zbufLen(m.SourceInfo.Len())
	}
	if m.Attachment != nil {
		n += zbufLen(len(m.Attachment))
	}
	return n
}

// Append implements ZenohMessage.
func (m Del) Append(b []byte) []byte {
	p := len(b)
	b = append(b, byte(IDDel)|boolByte(m.HasTimestamp, FlagTimestamp))
	if m.HasTimestamp {
		b = m.Timestamp.Append(b)
	}
	w := newExtWriter(b)
	if m.HasSourceInfo {
		w.sourceInfo(m.SourceInfo)
	}
	if m.Attachment != nil {
		w.zbuf(ExtDelAttachment, m.Attachment)
	}
	w.raw(m.Exts)
	return finishHeader(&w, p)
}

func (x *Del) decode(r *reader, h byte) error {
	*x = Del{Exts: x.Exts[:0]}
	var err error
	if x.HasTimestamp = h&FlagTimestamp != 0; x.HasTimestamp {
		if x.Timestamp, err = r.timestamp("timestamp"); err != nil {
			return err
		}
	}
	err = r.extChain(&x.Exts, h&FlagZ != 0, x.ext)
	return err
}

// ext takes DEL's extensions: SourceInfo, Attachment.
func (x *Del) ext(r reader, e Ext, start int) (ok bool, err error) {
	switch e.Header {
	case ExtSourceInfo:
		x.HasSourceInfo = true
		x.SourceInfo, err = r.sourceInfoExt(e, start)
	case ExtDelAttachment:
		x.Attachment = e.Body
	default:
		return false, nil
	}
	return true, err
}

// ParseDel decodes a Del; b starts after the header byte h.
func ParseDel(b []byte, h byte) (Del, int, error) {
	return parse(b, "DEL", func(m *Del, r *reader) error { return m.decode(r, h) })
}
