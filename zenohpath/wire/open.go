package wire

import (
	"math"
	"time"
)

// OpenSyn is the second handshake step (OPEN with A=0), zenoh-wire.md §4.3:
//
//	 7 6 5 4 3 2 1 0
//	+-+-+-+---------+
//	|Z|T|A|  OPEN   |  A=0; T: lease in seconds
//	+-+-+-+---------+
//	%    lease      %  ms, or s if T
//	+---------------+
//	%  initial_sn   %
//	+---------------+
//	~    cookie     ~  <u8;z16>, the InitAck's cookie
//	+---------------+
//	~    [exts]     ~
//
// Append sets T when Lease is a whole number of seconds (as both
// implementations do).
type OpenSyn struct {
	Lease     time.Duration
	InitialSN uint64
	Cookie    []byte // aliases the input when parsed
	Exts      []Ext  // QoS, Shm, Auth, MultiLink, LowLatency, Compression, ... kept raw
}

// OpenAck completes the handshake (OPEN with A=1): lease and initial SN,
// no cookie (zenoh-wire.md §4.3).
type OpenAck struct {
	Lease     time.Duration
	InitialSN uint64
	Exts      []Ext
}

// TransportID implements TransportMessage.
func (*OpenSyn) TransportID() TransportID { return IDOpen }

// TransportID implements TransportMessage.
func (*OpenAck) TransportID() TransportID { return IDOpen }

func leaseWire(d time.Duration) (uint64, bool) {
	if d < 0 {
		d = 0
	}
	if d%time.Second == 0 {
		return uint64(d / time.Second), true
	}
	return uint64(d / time.Millisecond), false
}

func openLen(lease time.Duration, sn uint64, cookie []byte, ack bool, exts []Ext) int {
	v, _ := leaseWire(lease)
	n := 1 + VLELen(v) + VLELen(sn) + extsLen(exts)
	if !ack {
		n += bytesLen(len(cookie))
	}
	return n
}

func openAppend(b []byte, lease time.Duration, sn uint64, cookie []byte, ack bool, exts []Ext) []byte {
	v, secs := leaseWire(lease)
	p := len(b)
	b = append(b, byte(IDOpen)|boolByte(ack, FlagOpenAck)|boolByte(secs, FlagOpenSeconds))
	b = AppendVLE(b, v)
	b = AppendVLE(b, sn)
	if !ack {
		b = appendBytes(b, cookie)
	}
	w := newExtWriter(b)
	w.raw(exts)
	return finishHeader(&w, p)
}

func openDecode(r *reader, h byte, ack bool, exts []Ext) (lease time.Duration, sn uint64, cookie []byte, _ []Ext, err error) {
	if (h&FlagOpenAck != 0) != ack {
		return 0, 0, nil, exts, newErr(r.msg, "header", r.i-1, ErrInvalid)
	}
	start := r.i
	v, err := r.vle("lease")
	if err != nil {
		return 0, 0, nil, exts, err
	}
	unit := time.Millisecond
	if h&FlagOpenSeconds != 0 {
		unit = time.Second
	}
	if v > uint64(math.MaxInt64/int64(unit)) {
		return 0, 0, nil, exts, newErr(r.msg, "lease", start, ErrTooLarge)
	}
	lease = time.Duration(v) * unit
	if sn, err = r.vle("initial_sn"); err != nil {
		return
	}
	if !ack {
		if cookie, err = r.bytes("cookie", 0xffff); err != nil {
			return
		}
	}
	err = r.extChain(&exts, h&FlagZ != 0, nil)
	return lease, sn, cookie, exts, err
}

// Len implements TransportMessage.
func (m OpenSyn) Len() int { return openLen(m.Lease, m.InitialSN, m.Cookie, false, m.Exts) }

// Append implements TransportMessage.
func (m OpenSyn) Append(b []byte) []byte {
	return openAppend(b, m.Lease, m.InitialSN, m.Cookie, false, m.Exts)
}

func (m *OpenSyn) decode(r *reader, h byte) (err error) {
	var x OpenSyn
	x.Lease, x.InitialSN, x.Cookie, x.Exts, err = openDecode(r, h, false, m.Exts[:0])
	*m = x
	return err
}

// ParseOpenSyn decodes an OpenSyn; b starts after the header byte h.
func ParseOpenSyn(b []byte, h byte) (OpenSyn, int, error) {
	return parse(b, "OpenSyn", func(m *OpenSyn, r *reader) error { return m.decode(r, h) })
}

// Len implements TransportMessage.
func (m OpenAck) Len() int { return openLen(m.Lease, m.InitialSN, nil, true, m.Exts) }

// Append implements TransportMessage.
func (m OpenAck) Append(b []byte) []byte {
	return openAppend(b, m.Lease, m.InitialSN, nil, true, m.Exts)
}

func (m *OpenAck) decode(r *reader, h byte) (err error) {
	var x OpenAck
	x.Lease, x.InitialSN, _, x.Exts, err = openDecode(r, h, true, m.Exts[:0])
	*m = x
	return err
}

// ParseOpenAck decodes an OpenAck; b starts after the header byte h.
func ParseOpenAck(b []byte, h byte) (OpenAck, int, error) {
	return parse(b, "OpenAck", func(m *OpenAck, r *reader) error { return m.decode(r, h) })
}
