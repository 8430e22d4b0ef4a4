package wire

// Fragment carries a slice of one serialized network message that does not
// fit in a batch (zenoh-wire.md §4.7):
//
//	 7 6 5 4 3 2 1 0
//	+-+-+-+---------+
//	|Z|M|R|FRAGMENT |  M: more fragments follow (0 = last); R: reliable
//	+-+-+-+---------+
//	%      sn       %  next SN of the channel
//	+---------------+
//	~    [exts]     ~  0x31 QoS (M), 0x02 First (unit), 0x03 Drop (unit)
//	+---------------+
//	~    payload    ~  up to the end of the batch
//
// With Patch ≥ 1 negotiated the first fragment of a train carries First.
// pico sends fragments of reliable messages with R=0 (§4.7 quirk).
type Fragment struct {
	Reliable bool
	More     bool
	SN       uint64
	HasQoS   bool
	QoS      QoS
	First    bool // ext 0x02
	Drop     bool // ext 0x03: discard the partial message
	Exts     []Ext
	Payload  []byte // aliases the input
}

// TransportID implements TransportMessage.
func (*Fragment) TransportID() TransportID { return IDFragment }

// HeaderLen is the size without the payload.
func (m Fragment) HeaderLen() int {
	n := 1 + VLELen(m.SN) + extsLen(m.Exts)
	if m.HasQoS {
		n += z64Len(uint64(m.QoS))
	}
	if m.First {
		n++
	}
	if m.Drop {
		n++
	}
	return n
}

// Len implements TransportMessage.
func (m Fragment) Len() int { return m.HeaderLen() + len(m.Payload) }

// Append implements TransportMessage.
func (m Fragment) Append(b []byte) []byte {
	p := len(b)
	b = append(b, byte(IDFragment)|boolByte(m.Reliable, FlagReliable)|boolByte(m.More, FlagMore))
	b = AppendVLE(b, m.SN)
	w := newExtWriter(b)
	if m.HasQoS {
		w.z64(ExtFrameQoS, uint64(m.QoS))
	}
	if m.First {
		w.unit(ExtFragmentFirst)
	}
	if m.Drop {
		w.unit(ExtFragmentDrop)
	}
	w.raw(m.Exts)
	b = finishHeader(&w, p)
	return append(b, m.Payload...)
}

func (x *Fragment) decode(r *reader, h byte) error {
	*x = Fragment{Reliable: h&FlagReliable != 0, More: h&FlagMore != 0, Exts: x.Exts[:0]}
	var err error
	if x.SN, err = r.vle("sn"); err != nil {
		return err
	}
	if err = r.extChain(&x.Exts, h&FlagZ != 0, x.ext); err != nil {
		return err
	}
	x.Payload = r.rest()
	r.i = len(r.b)
	return nil
}

// ext takes FRAGMENT's extensions: QoS, First, Drop.
func (x *Fragment) ext(r reader, e Ext, start int) (ok bool, err error) {
	switch e.Header {
	case ExtFrameQoS:
		x.HasQoS = true
		x.QoS, err = r.qosExt(e, start)
	case ExtFragmentFirst:
		x.First = true
	case ExtFragmentDrop:
		x.Drop = true
	default:
		return false, nil
	}
	return true, err
}

// ParseFragment decodes a Fragment; b starts after the header byte h and the
// payload runs to the end of b.
func ParseFragment(b []byte, h byte) (Fragment, int, error) {
	return parse(b, "FRAGMENT", func(m *Fragment, r *reader) error { return m.decode(r, h) })
}
