package wire

// ScoutingID is the ID of a scouting message (zenoh-wire.md §7), sent on
// UDP without a length prefix (multicast udp/224.0.0.224:7446 by default).
type ScoutingID byte

// Scouting message IDs.
const (
	IDScout ScoutingID = 0x01
	IDHello ScoutingID = 0x02
)

// FlagHelloLocators is the HELLO L flag: a locator list follows.
const FlagHelloLocators byte = 0x20

// WhatMask is the SCOUT "what" bitmap (zenoh-wire.md §7).
type WhatMask uint8

// Scouted roles.
const (
	WhatRouter WhatMask = 0b001
	WhatPeer   WhatMask = 0b010
	WhatClient WhatMask = 0b100
)

// ScoutingMessage is *Scout or *Hello.
type ScoutingMessage interface {
	Append(b []byte) []byte
	Len() int
	ScoutingID() ScoutingID
}

// Scout asks who is there (zenoh-wire.md §7):
//
//	 7 6 5 4 3 2 1 0
//	+-+-+-+---------+
//	|Z|X|X|  SCOUT  |
//	+-+-+-+---------+
//	|    version    |
//	+---------------+
//	|zidlen-1|X|I|what|  I 0x08: zid present; what: router 1, peer 2, client 4
//	+---------------+
//	~     [zid]     ~  if I
//	~    [exts]     ~
type Scout struct {
	Version byte
	What    WhatMask
	ZID     ZID // zero = absent (no I flag)
	Exts    []Ext
}

// ScoutingID implements ScoutingMessage.
func (*Scout) ScoutingID() ScoutingID { return IDScout }

// Len implements ScoutingMessage.
func (m Scout) Len() int { return 3 + m.ZID.Len() + extsLen(m.Exts) }

// Append implements ScoutingMessage.
func (m Scout) Append(b []byte) []byte {
	p := len(b)
	flags := byte(m.What) & 0x07
	if !m.ZID.IsZero() {
		flags |= (m.ZID.n-1)<<4 | 0x08
	}
	b = append(b, byte(IDScout), m.Version, flags)
	b = m.ZID.appendWire(b)
	w := newExtWriter(b)
	w.raw(m.Exts)
	return finishHeader(&w, p)
}

func (m *Scout) decode(r *reader, h byte) error {
	x := Scout{}
	var err error
	if x.Version, err = r.u8("version"); err != nil {
		return err
	}
	flags, err := r.u8("flags")
	if err != nil {
		return err
	}
	x.What = WhatMask(flags & 0x07)
	if flags&0x08 != 0 {
		if x.ZID, err = r.zid("zid", int(flags>>4)+1); err != nil {
			return err
		}
	}
	x.Exts = m.Exts[:0]
	err = r.extChain(&x.Exts, h&FlagZ != 0, nil)
	*m = x
	return err
}

// ParseScout decodes a Scout; b starts after the header byte h.
func ParseScout(b []byte, h byte) (Scout, int, error) {
	return parse(b, "SCOUT", func(m *Scout, r *reader) error { return m.decode(r, h) })
}

// Hello answers a Scout (zenoh-wire.md §7):
//
//	 7 6 5 4 3 2 1 0
//	+-+-+-+---------+
//	|Z|X|L|  HELLO  |  L: locators present
//	+-+-+-+---------+
//	|    version    |
//	+---------------+
//	|zidlen-1|X|X|wai|
//	~      zid      ~
//	+---------------+
//	~   locators    ~  if L: %count% then count × string <u8;z16>
//	~    [exts]     ~
type Hello struct {
	Version  byte
	WhatAmI  WhatAmI
	ZID      ZID
	Locators []string // e.g. "tcp/192.168.1.2:7447"; L is written iff non-empty
	Exts     []Ext
}

// ScoutingID implements ScoutingMessage.
func (*Hello) ScoutingID() ScoutingID { return IDHello }

// Len implements ScoutingMessage.
func (m Hello) Len() int {
	n := 2 + zidNibbleLen(m.ZID) + extsLen(m.Exts)
	if len(m.Locators) > 0 {
		n += VLELen(uint64(len(m.Locators)))
		for _, l := range m.Locators {
			n += bytesLen(len(l))
		}
	}
	return n
}

// Append implements ScoutingMessage.
func (m Hello) Append(b []byte) []byte {
	p := len(b)
	b = append(b, byte(IDHello)|boolByte(len(m.Locators) > 0, FlagHelloLocators), m.Version)
	b = appendZIDNibble(b, m.ZID, byte(m.WhatAmI)&0x03)
	if len(m.Locators) > 0 {
		b = AppendVLE(b, uint64(len(m.Locators)))
		for _, l := range m.Locators {
			b = appendString(b, l)
		}
	}
	w := newExtWriter(b)
	w.raw(m.Exts)
	return finishHeader(&w, p)
}

func (x *Hello) decode(r *reader, h byte) error {
	exts := x.Exts[:0]
	*x = Hello{}
	var err error
	if x.Version, err = r.u8("version"); err != nil {
		return err
	}
	var low byte
	if x.ZID, low, err = r.zidNibble("zid"); err != nil {
		return err
	}
	x.WhatAmI = WhatAmI(low & 0x03)
	if h&FlagHelloLocators != 0 {
		start := r.i
		n, err := r.vle("locators")
		if err != nil {
			return err
		}
		if n > uint64(r.left()) { // each locator takes at least one byte
			return newErr(r.msg, "locators", start, ErrTruncated)
		}
		for i := uint64(0); i < n; i++ {
			s, err := r.bytes("locator", 0xffff)
			if err != nil {
				return err
			}
			x.Locators = append(x.Locators, string(s))
		}
	}
	x.Exts = exts
	err = r.extChain(&x.Exts, h&FlagZ != 0, nil)
	return err
}

// ParseHello decodes a Hello; b starts after the header byte h.
func ParseHello(b []byte, h byte) (Hello, int, error) {
	return parse(b, "HELLO", func(m *Hello, r *reader) error { return m.decode(r, h) })
}

// ParseScouting decodes one scouting message (a whole UDP datagram)
// starting at its header byte b[0].
func ParseScouting(b []byte) (ScoutingMessage, int, error) {
	if len(b) == 0 {
		return nil, 0, newErr("scouting", "header", 0, ErrTruncated)
	}
	h := b[0]
	r := reader{b: b, i: 1}
	switch ScoutingID(h & MaskID) {
	case IDScout:
		r.msg = "SCOUT"
		m := new(Scout)
		if err := m.decode(&r, h); err != nil {
			return nil, r.i, err
		}
		return m, r.i, nil
	case IDHello:
		r.msg = "HELLO"
		m := new(Hello)
		if err := m.decode(&r, h); err != nil {
			return nil, r.i, err
		}
		return m, r.i, nil
	}
	return nil, 0, newErr("scouting", "header", 0, ErrUnknownMessage)
}
