package wire

// Close ends a link or the whole session (zenoh-wire.md §4.4):
//
//	 7 6 5 4 3 2 1 0
//	+-+-+-+---------+
//	|Z|X|S|  CLOSE  |  S: close the whole session (else only this link)
//	+-+-+-+---------+
//	|    reason     |  u8, see CloseReason
//	+---------------+
//	~    [exts]     ~
//
// pico sends `23 05` (session, EXPIRED) when its lease expires.
type Close struct {
	Session bool
	Reason  CloseReason
	Exts    []Ext
}

// TransportID implements TransportMessage.
func (*Close) TransportID() TransportID { return IDClose }

// Len implements TransportMessage.
func (m Close) Len() int { return 2 + extsLen(m.Exts) }

// Append implements TransportMessage.
func (m Close) Append(b []byte) []byte {
	p := len(b)
	b = append(b, byte(IDClose)|boolByte(m.Session, FlagCloseSession), byte(m.Reason))
	w := newExtWriter(b)
	w.raw(m.Exts)
	return finishHeader(&w, p)
}

func (m *Close) decode(r *reader, h byte) error {
	x := Close{Session: h&FlagCloseSession != 0}
	c, err := r.u8("reason")
	if err == nil {
		x.Reason = CloseReason(c)
		x.Exts = m.Exts[:0]
		err = r.extChain(&x.Exts, h&FlagZ != 0, nil)
	}
	*m = x
	return err
}

// ParseClose decodes a Close; b starts after the header byte h.
func ParseClose(b []byte, h byte) (Close, int, error) {
	return parse(b, "CLOSE", func(m *Close, r *reader) error { return m.decode(r, h) })
}

// KeepAlive keeps an idle link's lease alive (zenoh-wire.md §4.5):
//
//	 7 6 5 4 3 2 1 0
//	+-+-+-+---------+
//	|Z|X|X|KEEPALIVE|  one byte 0x04 (no extension is defined)
//	+-+-+-+---------+
type KeepAlive struct {
	Exts []Ext
}

// TransportID implements TransportMessage.
func (*KeepAlive) TransportID() TransportID { return IDKeepAlive }

// Len implements TransportMessage.
func (m KeepAlive) Len() int { return extsOnlyLen(m.Exts) }

// Append implements TransportMessage.
func (m KeepAlive) Append(b []byte) []byte { return appendExtsOnly(b, byte(IDKeepAlive), m.Exts) }

func (m *KeepAlive) decode(r *reader, h byte) error { return r.extsOnly(h, &m.Exts) }

// ParseKeepAlive decodes a KeepAlive; b starts after the header byte h.
func ParseKeepAlive(b []byte, h byte) (KeepAlive, int, error) {
	return parse(b, "KEEP_ALIVE", func(m *KeepAlive, r *reader) error { return m.decode(r, h) })
}
