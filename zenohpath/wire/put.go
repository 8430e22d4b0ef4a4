package wire

// Put is a sample (zenoh-wire.md §10.1), the body of PUSH, of REQUEST (a
// remote put) and of REPLY:
//
//	 7 6 5 4 3 2 1 0
//	+-+-+-+---------+
//	|Z|E|T|   PUT   |  T: timestamp; E: encoding
//	+-+-+-+---------+
//	~  timestamp    ~  if T (§1.4)
//	~   encoding    ~  if E (§1.5)
//	~    [exts]     ~  0x41 SourceInfo, 0x12 Shm (unit, M), 0x43 Attachment
//	~ payload <u8;z32> ~
//
// pico's minimal PUT is `01 <len> <bytes>`.
type Put struct {
	HasTimestamp  bool
	Timestamp     Timestamp
	HasEncoding   bool
	Encoding      Encoding
	HasSourceInfo bool
	SourceInfo    SourceInfo
	Shm           bool   // ext 0x12: payload is an SHM handle — never send to pico
	Attachment    []byte // ext 0x43; nil = absent; aliases the input
	Exts          []Ext
	Payload       []byte // aliases the input
}

// ZenohID implements ZenohMessage.
func (*Put) ZenohID() ZenohID { return IDPut }
func (*Put) isPushBody()      {}
func (*Put) isRequestBody()   {}
func (*Put) isReplyBody()     {}

// Len implements ZenohMessage.
func (m Put) Len() int {
	n := 1 + bytesLen(len(m.Payload)) + extsLen(m.Exts)
	if m.HasTimestamp {
		n += m.Timestamp.Len()
	}
	if m.HasEncoding {
		n += m.Encoding.Len()
	}
	if m.HasSourceInfo {
		n += zbufLen(m.SourceInfo.Len())
	}
	if m.Shm {
		n++
	}
	if m.Attachment != nil {
		n += zbufLen(len(m.Attachment))
	}
	return n
}

// Append implements ZenohMessage.
func (m Put) Append(b []byte) []byte {
	p := len(b)
	b = append(b, byte(IDPut)|boolByte(m.HasTimestamp, FlagTimestamp)|boolByte(m.HasEncoding, FlagEncoding))
	if m.HasTimestamp {
		b = m.Timestamp.Append(b)
	}
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
	if m.Attachment != nil {
		w.zbuf(ExtPutAttachment, m.Attachment)
	}
	w.raw(m.Exts)
	b = finishHeader(&w, p)
	return appendBytes(b, m.Payload)
}

func (x *Put) decode(r *reader, h byte) error {
	*x = Put{Exts: x.Exts[:0]}
	var err error
	if x.HasTimestamp = h&FlagTimestamp != 0; x.HasTimestamp {
		if x.Timestamp, err = r.timestamp("timestamp"); err != nil {
			return err
		}
	}
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

// ext takes PUT's extensions: SourceInfo, Shm, Attachment.
func (x *Put) ext(r reader, e Ext, start int) (ok bool, err error) {
	switch e.Header {
	case ExtSourceInfo:
		x.HasSourceInfo = true
		x.SourceInfo, err = r.sourceInfoExt(e, start)
	case ExtShm:
		x.Shm = true
	case ExtPutAttachment:
		x.Attachment = e.Body
	default:
		return false, nil
	}
	return true, err
}

// ParsePut decodes a Put; b starts after the header byte h.
func ParsePut(b []byte, h byte) (Put, int, error) {
	return parse(b, "PUT", func(m *Put, r *reader) error { return m.decode(r, h) })
}
