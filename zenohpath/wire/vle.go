package wire

// VLE ("zint") integers, zenoh-wire.md §1.1.
//
// Little-endian groups of 7 bits, bit 7 of each byte = "more bytes follow".
// At most 9 bytes: after 8 continuation bytes (56 bits) the 9th byte is taken
// whole (8 raw bits, no continuation bit), so math.MaxUint64 is
// ff ff ff ff ff ff ff ff ff. Encoders emit the minimal form; decoders
// accept non-minimal forms (as zenoh-pico and Rust Zenoh do) and reject
// values above the field's bound (z8/z16/z32).

// MaxVLELen is the longest VLE encoding, in bytes.
const MaxVLELen = 9

// VLELen returns the number of bytes AppendVLE writes for v.
func VLELen(v uint64) int {
	n := 1
	for v >= 0x80 && n < MaxVLELen {
		v >>= 7
		n++
	}
	return n
}

// AppendVLE appends the minimal VLE encoding of v.
func AppendVLE(b []byte, v uint64) []byte {
	for i := 0; i < MaxVLELen-1; i++ {
		if v < 0x80 {
			return append(b, byte(v))
		}
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v)) // 9th byte: 8 raw bits
}

// ParseVLE decodes a VLE integer from the start of b and returns it with the
// number of bytes consumed. The only possible error is ErrTruncated.
func ParseVLE(b []byte) (uint64, int, error) {
	var v uint64
	for i := 0; i < MaxVLELen; i++ {
		if i >= len(b) {
			return 0, 0, ErrTruncated
		}
		c := b[i]
		if i == MaxVLELen-1 {
			return v | uint64(c)<<56, i + 1, nil
		}
		v |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			return v, i + 1, nil
		}
	}
	return 0, 0, ErrTruncated // unreachable
}
