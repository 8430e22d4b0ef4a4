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
		w.sourceInfo(m.SourceInfo)
	}
	if m.Shm {
		w.unit(ExtShm)
	}
	w.raw(m.Exts)
	b = finishHeader(&w, p)
	return appendBytes(b, m.Payload)
}

func (x *Err) decode(r *reader, h byte) error {
	*x = Err{Exts: x.Exts[:0]}
	var err error
	if x.HasEncoding = h&FlagEncoding != 0; x.HasEncoding {
		if x.Encoding, err = r.encoding("encoding"); err != nil {
			return err
		}
	}
	if err = r.extChain(&x.Exts, h&FlagZ != 0, x.ext); err != nil {
		return err
	}
	x.Payload, err = r.bytes("payload", 0xffff_ffff)
	return err
}

// ext takes ERR's extensions: SourceInfo, Shm.
func (x *Err) ext(r reader, e Ext, start int) (ok bool, err error) {
	switch e.Header {
	case ExtSourceInfo:
		x.HasSourceInfo = true
		x.SourceInfo, err = r.sourceInfoExt(e, start)
	case ExtShm:
		x.Shm = true
	default:
		return false, nil
	}
	return true, err
}

// ParseErr decodes an Err; b starts after the header byte h.
func ParseErr(b []byte, h byte) (Err, int, error) {
	return parse(b, "ERR", func(m *Err, r *reader) error { return m.decode(r, h) })
}
