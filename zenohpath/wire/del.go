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
		w.hdr(ExtSourceInfo)
		w.b = AppendVLE(w.b, uint64(m.SourceInfo.Len()))
		w.b = m.SourceInfo.Append(w.b)
	}
	if m.Attachment != nil {
		w.zbuf(ExtDelAttachment, m.Attachment)
	}
	w.raw(m.Exts)
	return finishHeader(&w, p)
}

func (m *Del) decode(r *reader, h byte) error {
	x := Del{Exts: m.Exts[:0]}
	err := x.decodeRest(r, h)
	*m = x
	return err
}

func (x *Del) decodeRest(r *reader, h byte) error {
	var err error
	if x.HasTimestamp = h&FlagTimestamp != 0; x.HasTimestamp {
		if x.Timestamp, err = r.timestamp("timestamp"); err != nil {
			return err
		}
	}
	for more := h&FlagZ != 0; more; {
		start := r.i
		var e Ext
		if e, more, err = r.ext(); err != nil {
			return err
		}
		switch e.Header {
		case ExtSourceInfo:
			x.HasSourceInfo = true
			if x.SourceInfo, err = r.sourceInfoExt(e, start); err != nil {
				return err
			}
		case ExtDelAttachment:
			x.Attachment = e.Body
		default:
			if x.Exts, err = r.unknownExt(x.Exts, e, start); err != nil {
				return err
			}
		}
	}
	return nil
}

// ParseDel decodes a Del; b starts after the header byte h.
func ParseDel(b []byte, h byte) (Del, int, error) {
	var m Del
	r := reader{b: b, msg: "DEL"}
	err := m.decode(&r, h)
	return m, r.i, err
}
