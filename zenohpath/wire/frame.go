package wire

// Frame carries network messages (zenoh-wire.md §4.6):
//
//	 7 6 5 4 3 2 1 0
//	+-+-+-+---------+
//	|Z|X|R|  FRAME  |  R: reliable channel (else best effort)
//	+-+-+-+---------+
//	%      sn       %  SN in the channel's space (28-bit mask by default)
//	+---------------+
//	~    [exts]     ~  0x31 QoS (Z64, mandatory): priority lane — only with QoS negotiated
//	+---------------+
//	~  network msgs ~  one or more, back to back
//
// Payload is everything after the frame header up to the end of the batch,
// as zenoh-pico reads it (§3.2). A Rust sender may put another transport
// message after the network messages; Parser.WalkBatch detects that (a
// header byte with a transport ID) and resumes at batch level. Payload
// aliases the input. To build a frame, append Frame{...}.Append(b) (with
// Payload nil or pre-encoded) and then append network messages after it.
type Frame struct {
	Reliable bool
	SN       uint64
	HasQoS   bool // ext 0x31: never send to zenoh-pico (§12.8)
	QoS      QoS
	Exts     []Ext
	Payload  []byte
}

// TransportID implements TransportMessage.
func (*Frame) TransportID() TransportID { return IDFrame }

// HeaderLen is the size of the frame without its payload.
func (m Frame) HeaderLen() int {
	n := 1 + VLELen(m.SN) + extsLen(m.Exts)
	if m.HasQoS {
		n += z64Len(uint64(m.QoS))
	}
	return n
}

// Len implements TransportMessage.
func (m Frame) Len() int { return m.HeaderLen() + len(m.Payload) }

// Append implements TransportMessage.
func (m Frame) Append(b []byte) []byte {
	p := len(b)
	b = append(b, byte(IDFrame)|boolByte(m.Reliable, FlagReliable))
	b = AppendVLE(b, m.SN)
	w := newExtWriter(b)
	if m.HasQoS {
		w.z64(ExtFrameQoS, uint64(m.QoS))
	}
	w.raw(m.Exts)
	b = finishHeader(&w, p)
	return append(b, m.Payload...)
}

// decodeHeader reads sn and extensions; the payload is the rest of r.
func (m *Frame) decode(r *reader, h byte) error {
	x := Frame{Reliable: h&FlagReliable != 0, Exts: m.Exts[:0]}
	err := x.decodeExts(r, h)
	if err == nil {
		x.Payload = r.rest()
		r.i = len(r.b)
	}
	*m = x
	return err
}

func (x *Frame) decodeExts(r *reader, h byte) error {
	var err error
	if x.SN, err = r.vle("sn"); err != nil {
		return err
	}
	err = r.extChain(&x.Exts, h&FlagZ != 0, x.ext)
	return err
}

// ext takes FRAME's extension: QoS.
func (x *Frame) ext(r reader, e Ext, start int) (ok bool, err error) {
	if e.Header != ExtFrameQoS {
		return false, nil
	}
	x.HasQoS = true
	x.QoS, err = r.qosExt(e, start)
	return true, err
}

// ParseFrame decodes a Frame; b starts after the header byte h and the
// payload runs to the end of b.
func ParseFrame(b []byte, h byte) (Frame, int, error) {
	return parse(b, "FRAME", func(m *Frame, r *reader) error { return m.decode(r, h) })
}
