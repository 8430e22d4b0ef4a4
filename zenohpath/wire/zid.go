package wire

import (
	"encoding/hex"
)

// MaxZIDLen is the longest Zenoh ID, in bytes (zenoh-wire.md §1.3).
const MaxZIDLen = 16

// ZID is a Zenoh ID: a non-zero 128-bit integer stored little-endian, of
// which only the significant bytes go on the wire (1..16 bytes,
// zenoh-wire.md §1.3). The zero value is "no ZID" (length 0), which is not
// valid on the wire.
type ZID struct {
	n uint8
	b [MaxZIDLen]byte
}

// NewZID builds a ZID from its wire bytes (1..16).
func NewZID(wire []byte) (ZID, error) {
	if len(wire) == 0 || len(wire) > MaxZIDLen {
		return ZID{}, newErr("ZID", "len", 0, ErrInvalid)
	}
	var z ZID
	z.n = uint8(len(wire))
	copy(z.b[:], wire)
	return z, nil
}

// MustZID is NewZID that panics; for constants and tests.
func MustZID(wire []byte) ZID {
	z, err := NewZID(wire)
	if err != nil {
		panic(err)
	}
	return z
}

// Len is the number of wire bytes (0 for the zero value).
func (z ZID) Len() int { return int(z.n) }

// Bytes returns a copy of the wire bytes.
func (z ZID) Bytes() []byte { return append([]byte(nil), z.b[:z.n]...) }

// IsZero reports whether z is the zero value.
func (z ZID) IsZero() bool { return z.n == 0 }

// Hex is the wire bytes in lower-case hex, as the transcripts show them.
func (z ZID) Hex() string { return hex.EncodeToString(z.b[:z.n]) }

// String is the Rust uhlc::ID form: the u128 in hex, most significant digit
// first, leading zeros stripped (the wire bytes reversed).
func (z ZID) String() string {
	var rev [MaxZIDLen]byte
	for i := 0; i < int(z.n); i++ {
		rev[i] = z.b[int(z.n)-1-i]
	}
	s := hex.EncodeToString(rev[:z.n])
	for len(s) > 1 && s[0] == '0' {
		s = s[1:]
	}
	return s
}

// appendWire appends the raw bytes (no length).
func (z ZID) appendWire(b []byte) []byte { return append(b, z.b[:z.n]...) }

// zidFromReader reads n raw ZID bytes.
func (r *reader) zid(field string, n int) (ZID, error) {
	if n < 1 || n > MaxZIDLen {
		return ZID{}, r.err(field, ErrInvalid)
	}
	s, err := r.take(field, n)
	if err != nil {
		return ZID{}, err
	}
	var z ZID
	z.n = uint8(n)
	copy(z.b[:], s)
	return z, nil
}

// zidNibble reads the `(len-1)<<4 | low` byte used in INIT/JOIN and in
// SourceInfo/EntityGlobalId, then the ZID; it returns the low nibble.
func (r *reader) zidNibble(field string) (ZID, byte, error) {
	c, err := r.u8(field)
	if err != nil {
		return ZID{}, 0, err
	}
	z, err := r.zid(field, int(c>>4)+1)
	return z, c & 0x0f, err
}

func (z ZID) nibbleByte(low byte) byte {
	n := z.n
	if n == 0 {
		n = 1
	}
	return (n-1)<<4 | low&0x0f
}

// appendZIDNibble writes `(len-1)<<4 | low` then the ZID bytes. A zero ZID
// is written as one 0x00 byte so that Append never fails (Validate rejects it).
func appendZIDNibble(b []byte, z ZID, low byte) []byte {
	b = append(b, z.nibbleByte(low))
	if z.n == 0 {
		return append(b, 0)
	}
	return z.appendWire(b)
}

func zidNibbleLen(z ZID) int { return 1 + max(int(z.n), 1) }

// ParseZID parses a ZID written as zenohd prints it (String): the 128-bit
// integer in hex, most significant digit first, 1 to 32 hex digits, an
// optional 0x prefix, leading zeros allowed, not all zero. Upper-case
// digits are accepted. Errors wrap ErrInvalid.
func ParseZID(s string) (ZID, error) {
	h := s
	if len(h) > 2 && (h[:2] == "0x" || h[:2] == "0X") {
		h = h[2:]
	}
	if h == "" || len(h) > 2*MaxZIDLen {
		return ZID{}, newErr("ZID", "hex", 0, ErrInvalid)
	}
	if len(h)%2 == 1 {
		h = "0" + h
	}
	b, err := hex.DecodeString(h)
	if err != nil {
		return ZID{}, newErr("ZID", "hex", 0, ErrInvalid)
	}
	for len(b) > 0 && b[0] == 0 {
		b = b[1:]
	}
	if len(b) == 0 {
		return ZID{}, newErr("ZID", "zero", 0, ErrInvalid)
	}
	var z ZID
	z.n = uint8(len(b))
	for i := range b {
		z.b[i] = b[len(b)-1-i]
	}
	return z, nil
}
