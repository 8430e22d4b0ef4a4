package wire

// Err is a negative answer inside a RESPONSE (zenoh-wire.md §10.5):
//
//	 7 6 5 4 3 2 1 0
//	+-+-+-+---------+
//	|Z|E|X|   ERR   |  E: encoding
//	+-+-+-+---------+
//	~   encoding    ~  if E
//	~    [exts]     ~  0x41 SourceInfo, 0x12 Shm (M)
//	~ payload <u8;z32> ~
type Err struct {
	HasEncoding   bool
	Encoding      Encoding
	HasSourceInfo bool
	SourceInfo    SourceInfo
	Shm           bool
	Exts          []Ext
	Payload       []byte // aliases the input
}

// ZenohID implements ZenohMessage.
func (*Err) ZenohID() ZenohID { return IDErr }
func (*Err) isResponseBody()  {}

// Len implements ZenohMessage.
func (m Err) Len() int {
	n := 1 + bytesLen(len(m.Payload)) + extsLen(m.Exts)
	if m.HasEncoding {
		n += m.Encoding.Len()
	}
	if m.HasSourceInfo {
		n += zbufLen(m.SourceInfo.Len())
	}
	if m.Shm {
		n++
	}
	return n
}

// Append implements ZenohMessage.
func (m Err) Append(b []byte) []byte {
	p := len(b)
	b = append(b, byte(IDErr)|boolByte(m.HasEncoding, FlagEncoding))
	if m.HasEncoding {
		b = m.Encoding.Append(b)
	}
	w := newExtWriter(b)
	if m.HasSourceInfo {
		w.hdr(ExtSourceInfo)
		w.b = AppendVLE(w.b, uint64(m.SourceInfo.Len()))
		w.b = m.SourceInfo.Append(w.b)
	}
	if m.Shm {
		w.unit(ExtShm)
	}
	w.raw(m.Exts)
	b = finishHeader(&w, p)
	return appendBytes(b, m.Payload)
}

func (m *Err) decode(r *reader, h byte) error {
	x := Err{Exts: m.Exts[:0]}
	err := x.decodeRest(r, h)
	*m = x
	return err
}

func (x *Err) decodeRest(r *reader, h byte) error {
	var err error
	if x.HasEncoding = h&FlagEncoding != 0; x.HasEncoding {
		if x.Encoding, err = r.encoding("encoding"); err != nil {
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
		case ExtShm:
			x.Shm = true
		default:
			if x.Exts, err = r.unknownExt(x.Exts, e, start); err != nil {
				return err
			}
		}
	}
	x.Payload, err = r.bytes("payload", 0xffff_ffff)
	return err
}

// ParseErr decodes an Err; b starts after the header byte h.
func ParseErr(b []byte, h byte) (Err, int, error) {
	var m Err
	r := reader{b: b, msg: "ERR"}
	err := m.decode(&r, h)
	return m, r.i, err
}
