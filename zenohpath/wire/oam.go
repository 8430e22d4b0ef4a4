package wire

// OAMBody is the body of a transport or network OAM message; its encoding
// is given by header bits 5-6 (same values as an extension's ENC).
type OAMBody struct {
	Enc   byte   // ExtEncUnit, ExtEncZ64 or ExtEncZBuf
	Value uint64 // for Z64
	Body  []byte // for ZBuf; aliases the input
}

func (o OAMBody) len() int {
	switch o.Enc {
	case ExtEncZ64:
		return VLELen(o.Value)
	case ExtEncZBuf:
		return bytesLen(len(o.Body))
	}
	return 0
}

func (o OAMBody) append(b []byte) []byte {
	switch o.Enc {
	case ExtEncZ64:
		return AppendVLE(b, o.Value)
	case ExtEncZBuf:
		return appendBytes(b, o.Body)
	}
	return b
}

func (r *reader) oamBody(enc byte) (OAMBody, error) {
	o := OAMBody{Enc: enc}
	var err error
	switch enc {
	case ExtEncUnit:
	case ExtEncZ64:
		o.Value, err = r.vle("body")
	case ExtEncZBuf:
		o.Body, err = r.bytes("body", 0xffff_ffff)
	default:
		err = r.err("header", ErrInvalid)
	}
	return o, err
}

// TransportOAM is an operations-and-management message at transport level
// (zenoh-wire.md §4.9); receivers may ignore it:
//
//	 7 6 5 4 3 2 1 0
//	+-+---+---------+
//	|Z|ENC|   OAM   |  ID 0x00; ENC: body encoding
//	+-+---+---------+
//	%    id:z16     %
//	~    [exts]     ~  0x31 QoS
//	~     body      ~  per ENC: none / VLE / <u8;z32>
type TransportOAM struct {
	ID     uint16
	HasQoS bool
	QoS    QoS
	Exts   []Ext
	Body   OAMBody
}

// TransportID implements TransportMessage.
func (*TransportOAM) TransportID() TransportID { return IDTransportOAM }

// Len implements TransportMessage.
func (m TransportOAM) Len() int {
	n := 1 + VLELen(uint64(m.ID)) + extsLen(m.Exts) + m.Body.len()
	if m.HasQoS {
		n += z64Len(uint64(m.QoS))
	}
	return n
}

// Append implements TransportMessage.
func (m TransportOAM) Append(b []byte) []byte {
	p := len(b)
	b = append(b, byte(IDTransportOAM)|m.Body.Enc&ExtEncMask)
	b = AppendVLE(b, uint64(m.ID))
	w := newExtWriter(b)
	if m.HasQoS {
		w.z64(ExtFrameQoS, uint64(m.QoS))
	}
	w.raw(m.Exts)
	b = finishHeader(&w, p)
	return m.Body.append(b)
}

func (x *TransportOAM) decode(r *reader, h byte) error {
	*x = TransportOAM{Exts: x.Exts[:0]}
	var err error
	if x.ID, err = r.z16("id"); err != nil {
		return err
	}
	if err = r.extChain(&x.Exts, h&FlagZ != 0, x.ext); err != nil {
		return err
	}
	x.Body, err = r.oamBody(h & ExtEncMask)
	return err
}

// ext takes the transport OAM's extension: QoS.
func (x *TransportOAM) ext(r reader, e Ext, start int) (ok bool, err error) {
	if e.Header != ExtFrameQoS {
		return false, nil
	}
	x.HasQoS = true
	x.QoS, err = r.qosExt(e, start)
	return true, err
}

// ParseTransportOAM decodes a transport OAM; b starts after the header h.
func ParseTransportOAM(b []byte, h byte) (TransportOAM, int, error) {
	return parse(b, "OAM", func(m *TransportOAM, r *reader) error { return m.decode(r, h) })
}

// NetworkOAM is an operations-and-management message at network level
// (zenoh-wire.md §9.8), used router↔router (LINKSTATE); a router may ignore
// it from clients:
//
//	 7 6 5 4 3 2 1 0
//	+-+---+---------+
//	|Z|ENC|   OAM   |  ID 0x1f
//	+-+---+---------+
//	%    id:z16     %
//	~    [exts]     ~  0x21 QoS, 0x42 Timestamp
//	~     body      ~  per ENC
type NetworkOAM struct {
	ID uint16
	NetExt
	Exts []Ext
	Body OAMBody
}

// NetworkID implements NetworkMessage.
func (*NetworkOAM) NetworkID() NetworkID { return IDNetworkOAM }

// Len implements NetworkMessage.
func (m NetworkOAM) Len() int {
	return 1 + VLELen(uint64(m.ID)) + m.NetExt.extLen() + extsLen(m.Exts) + m.Body.len()
}

// Append implements NetworkMessage.
func (m NetworkOAM) Append(b []byte) []byte {
	p := len(b)
	b = append(b, byte(IDNetworkOAM)|m.Body.Enc&ExtEncMask)
	b = AppendVLE(b, uint64(m.ID))
	w := newExtWriter(b)
	m.NetExt.write(&w)
	w.raw(m.Exts)
	b = finishHeader(&w, p)
	return m.Body.append(b)
}

func (m *NetworkOAM) decode(r *reader, h byte) error {
	x := NetworkOAM{}
	var err error
	if x.ID, err = r.z16("id"); err == nil {
		x.Exts = m.Exts[:0]
		if err = r.extChain(&x.Exts, h&FlagZ != 0, x.NetExt.take); err == nil {
			x.Body, err = r.oamBody(h & ExtEncMask)
		}
	}
	*m = x
	return err
}

// ParseNetworkOAM decodes a network OAM; b starts after the header byte h.
func ParseNetworkOAM(b []byte, h byte) (NetworkOAM, int, error) {
	return parse(b, "OAM", func(m *NetworkOAM, r *reader) error { return m.decode(r, h) })
}
