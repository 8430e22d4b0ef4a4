package wire

// InterestMode is the mode of an INTEREST, header bits 5-6 (zenoh-wire.md §9.7).
type InterestMode uint8

// Interest modes.
const (
	InterestFinal         InterestMode = 0 // forget the interest id
	InterestCurrent       InterestMode = 1 // declare what exists now, then DeclareFinal
	InterestFuture        InterestMode = 2 // declare changes from now on
	InterestCurrentFuture InterestMode = 3 // both
)

func (m InterestMode) String() string {
	switch m {
	case InterestFinal:
		return "Final"
	case InterestCurrent:
		return "Current"
	case InterestFuture:
		return "Future"
	}
	return "CurrentFuture"
}

// InterestOptions is the options byte of an INTEREST (zenoh-wire.md §9.7):
//
//	 7 6 5 4 3 2 1 0
//	+-+-+-+-+-+-+-+-+
//	|A|M|N|R|T|Q|S|K|
//	+-+-+-+-+-+-+-+-+
//
// K key exprs, S subscribers, Q queryables, T tokens, R restricted to a key,
// N key has a suffix, M sender mapping, A aggregate. When R is set, N and M
// are taken from / written by Interest.WireExpr.
type InterestOptions uint8

// Interest option bits.
const (
	InterestKeyExprs    InterestOptions = 0x01
	InterestSubscribers InterestOptions = 0x02
	InterestQueryables  InterestOptions = 0x04
	InterestTokens      InterestOptions = 0x08
	InterestRestricted  InterestOptions = 0x10
	InterestNamed       InterestOptions = 0x20
	InterestMapping     InterestOptions = 0x40
	InterestAggregate   InterestOptions = 0x80
)

// String lists the set bits as in the transcripts: "K,S,R,M,A".
func (o InterestOptions) String() string {
	names := [8]string{"K", "S", "Q", "T", "R", "N", "M", "A"}
	s := ""
	for i, n := range names {
		if o&(1<<i) != 0 {
			if s != "" {
				s += ","
			}
			s += n
		}
	}
	return s
}

// Interest asks the receiver for declarations (zenoh-wire.md §9.7):
//
//	 7 6 5 4 3 2 1 0
//	+-+---+---------+
//	|Z|Mod|INTEREST |  Mode: 00 Final, 01 Current, 10 Future, 11 CurrentFuture
//	+-+---+---------+
//	%    id:z32     %
//	|    options    |  if Mode != Final
//	~   WireExpr    ~  if R
//	~    [exts]     ~  0x21 QoS, 0x42 Timestamp, 0x33 NodeId (M)
type Interest struct {
	Mode     InterestMode
	ID       uint32
	Options  InterestOptions // ignored for Final; N and M come from WireExpr when R is set
	WireExpr WireExpr        // valid when Options has InterestRestricted
	NetExt
	Exts []Ext
}

// NetworkID implements NetworkMessage.
func (*Interest) NetworkID() NetworkID { return IDInterest }

func (m *Interest) options() byte {
	o := byte(m.Options)
	if m.Options&InterestRestricted != 0 {
		o = o&^byte(InterestNamed|InterestMapping) | m.WireExpr.flags()
	}
	return o
}

// Len implements NetworkMessage.
func (m Interest) Len() int {
	n := 1 + VLELen(uint64(m.ID)) + m.NetExt.extLen() + extsLen(m.Exts)
	if m.Mode != InterestFinal {
		n++
		if m.Options&InterestRestricted != 0 {
			n += m.WireExpr.Len()
		}
	}
	return n
}

// Append implements NetworkMessage.
func (m Interest) Append(b []byte) []byte {
	p := len(b)
	b = append(b, byte(IDInterest)|byte(m.Mode&3)<<5)
	b = AppendVLE(b, uint64(m.ID))
	if m.Mode != InterestFinal {
		b = append(b, m.options())
		if m.Options&InterestRestricted != 0 {
			b = m.WireExpr.Append(b)
		}
	}
	w := newExtWriter(b)
	m.NetExt.write(&w)
	w.raw(m.Exts)
	return finishHeader(&w, p)
}

func (x *Interest) decode(r *reader, h byte, in *interner) error {
	exts := x.Exts[:0]
	*x = Interest{Mode: InterestMode(h >> 5 & 3)}
	var err error
	if x.ID, err = r.z32("id"); err != nil {
		return err
	}
	if x.Mode != InterestFinal {
		o, err := r.u8("options")
		if err != nil {
			return err
		}
		x.Options = InterestOptions(o)
		if x.Options&InterestRestricted != 0 {
			x.WireExpr, err = r.wireExpr(x.Options&InterestNamed != 0, Mapping(x.Options&InterestMapping != 0), in)
			if err != nil {
				return err
			}
		}
	}
	x.Exts = exts
	err = r.extChain(&x.Exts, h&FlagZ != 0, x.NetExt.take)
	return err
}

// ParseInterest decodes an Interest; b starts after the header byte h.
func ParseInterest(b []byte, h byte) (Interest, int, error) {
	return parse(b, "INTEREST", func(m *Interest, r *reader) error { return m.decode(r, h, nil) })
}
