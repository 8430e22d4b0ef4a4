package wire

// InitSyn opens a unicast session (INIT with A=0), zenoh-wire.md §4.1:
//
//	 7 6 5 4 3 2 1 0
//	+-+-+-+---------+
//	|Z|S|A|  INIT   |  A=0
//	+-+-+-+---------+
//	|    version    |  0x09
//	+---------------+
//	|zidlen-1|X|X|wai|  whatami: 0 router, 1 peer, 2 client
//	+---------------+
//	~     zid       ~  1..16 bytes
//	+---------------+
//	|  resolution   |  if S: bits 0-1 frame SN, 2-3 request id (00=8 … 11=64 bit)
//	+---------------+
//	|  batch_size   |  if S: u16le
//	+---------------+
//	~   [exts]      ~  if Z
//
// Without S the defaults are resolution 0x0a and batch 65535; decoding
// fills them in, and Append writes S only when HasSize is set.
type InitSyn struct {
	Version    byte
	WhatAmI    WhatAmI
	ZID        ZID
	HasSize    bool   // S flag
	Resolution uint8  // valid when HasSize (else DefaultResolution after decode)
	BatchSize  uint16 // bytes; valid when HasSize (else 65535 after decode)
	Patch      uint64 // ext 0x27; 0 = absent; 1 = fragment First/Drop markers
	// Exts holds the other extensions (QoS 0x01, QoSLink 0x21, Shm 0x42,
	// Auth 0x43, MultiLink 0x44, LowLatency 0x05, Compression 0x06, ...)
	// raw; Body aliases the input. Append writes the extensions sorted by
	// ID around Patch (IDs below 7 first), as Rust and pico order them.
	Exts []Ext
}

// InitAck answers an InitSyn (INIT with A=1), zenoh-wire.md §4.1-4.2: the
// same fields as InitSyn followed by the cookie `<u8;z16>` before the
// extensions. Send S (HasSize) whenever the InitSyn had it.
type InitAck struct {
	Version    byte
	WhatAmI    WhatAmI
	ZID        ZID
	HasSize    bool
	Resolution uint8
	BatchSize  uint16
	Cookie     []byte // opaque, echoed in OpenSyn; aliases the input when parsed
	Patch      uint64
	Exts       []Ext
}

// TransportID implements TransportMessage.
func (*InitSyn) TransportID() TransportID { return IDInit }

// TransportID implements TransportMessage.
func (*InitAck) TransportID() TransportID { return IDInit }

type initCommon struct {
	version    byte
	whatami    WhatAmI
	zid        ZID
	hasSize    bool
	resolution uint8
	batch      uint16
	cookie     []byte
	patch      uint64
	exts       []Ext
}

func (c *initCommon) len(ack bool) int {
	n := 2 + zidNibbleLen(c.zid)
	if c.hasSize {
		n += 3
	}
	if ack {
		n += bytesLen(len(c.cookie))
	}
	if c.patch != 0 {
		n += z64Len(c.patch)
	}
	return n + extsLen(c.exts)
}

func (c *initCommon) append(b []byte, ack bool) []byte {
	p := len(b)
	b = append(b, byte(IDInit)|boolByte(ack, FlagInitAck)|boolByte(c.hasSize, FlagInitSize), c.version)
	b = appendZIDNibble(b, c.zid, byte(c.whatami)&0x03)
	if c.hasSize {
		b = append(b, c.resolution, byte(c.batch), byte(c.batch>>8))
	}
	if ack {
		b = appendBytes(b, c.cookie)
	}
	w := newExtWriter(b)
	w.rawBelow(c.exts, ExtPatch, true)
	if c.patch != 0 {
		w.z64(ExtPatch, c.patch)
	}
	w.rawBelow(c.exts, ExtPatch, false)
	return finishHeader(&w, p)
}

func (c *initCommon) decode(r *reader, h byte, ack bool) error {
	if (h&FlagInitAck != 0) != ack {
		return newErr(r.msg, "header", r.i-1, ErrInvalid)
	}
	var err error
	if c.version, err = r.u8("version"); err != nil {
		return err
	}
	var low byte
	if c.zid, low, err = r.zidNibble("zid"); err != nil {
		return err
	}
	c.whatami = WhatAmI(low & 0x03)
	c.hasSize = h&FlagInitSize != 0
	c.resolution, c.batch = DefaultResolution, DefaultBatchUnicast
	if c.hasSize {
		if c.resolution, err = r.u8("resolution"); err != nil {
			return err
		}
		if c.batch, err = r.u16le("batch_size"); err != nil {
			return err
		}
	}
	if ack {
		if c.cookie, err = r.bytes("cookie", 0xffff); err != nil {
			return err
		}
	}
	err = r.extChain(&c.exts, h&FlagZ != 0, func(_ reader, e Ext, _ int) (bool, error) {
		if e.Header != ExtPatch {
			return false, nil
		}
		c.patch = e.Value
		return true, nil
	})
	return err
}

func (m *InitSyn) common() initCommon {
	return initCommon{m.Version, m.WhatAmI, m.ZID, m.HasSize, m.Resolution, m.BatchSize, nil, m.Patch, m.Exts}
}

// Len implements TransportMessage.
func (m InitSyn) Len() int { c := m.common(); return c.len(false) }

// Append implements TransportMessage.
func (m InitSyn) Append(b []byte) []byte { c := m.common(); return c.append(b, false) }

func (m *InitSyn) decode(r *reader, h byte) error {
	c := initCommon{exts: m.Exts[:0]}
	err := c.decode(r, h, false)
	*m = InitSyn{c.version, c.whatami, c.zid, c.hasSize, c.resolution, c.batch, c.patch, c.exts}
	return err
}

// ParseInitSyn decodes an InitSyn; b starts after the header byte h.
func ParseInitSyn(b []byte, h byte) (InitSyn, int, error) {
	return parse(b, "InitSyn", func(m *InitSyn, r *reader) error { return m.decode(r, h) })
}

func (m *InitAck) common() initCommon {
	return initCommon{m.Version, m.WhatAmI, m.ZID, m.HasSize, m.Resolution, m.BatchSize, m.Cookie, m.Patch, m.Exts}
}

// Len implements TransportMessage.
func (m InitAck) Len() int { c := m.common(); return c.len(true) }

// Append implements TransportMessage.
func (m InitAck) Append(b []byte) []byte { c := m.common(); return c.append(b, true) }

func (m *InitAck) decode(r *reader, h byte) error {
	c := initCommon{exts: m.Exts[:0]}
	err := c.decode(r, h, true)
	*m = InitAck{c.version, c.whatami, c.zid, c.hasSize, c.resolution, c.batch, c.cookie, c.patch, c.exts}
	return err
}

// ParseInitAck decodes an InitAck; b starts after the header byte h.
func ParseInitAck(b []byte, h byte) (InitAck, int, error) {
	return parse(b, "InitAck", func(m *InitAck, r *reader) error { return m.decode(r, h) })
}
