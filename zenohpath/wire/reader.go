package wire

import "math"

// reader is the internal cursor all parsers use. Offsets in errors are
// relative to the start of b; callers working on sub-slices shift them.
type reader struct {
	b   []byte
	i   int
	msg string
}

func (r *reader) err(field string, err error) error { return newErr(r.msg, field, r.i, err) }

func (r *reader) rest() []byte { return r.b[r.i:] }
func (r *reader) left() int    { return len(r.b) - r.i }

func (r *reader) u8(field string) (byte, error) {
	if r.i >= len(r.b) {
		return 0, r.err(field, ErrTruncated)
	}
	c := r.b[r.i]
	r.i++
	return c, nil
}

func (r *reader) u16le(field string) (uint16, error) {
	if r.left() < 2 {
		return 0, r.err(field, ErrTruncated)
	}
	v := uint16(r.b[r.i]) | uint16(r.b[r.i+1])<<8
	r.i += 2
	return v, nil
}

func (r *reader) vle(field string) (uint64, error) {
	v, n, err := ParseVLE(r.b[r.i:])
	if err != nil {
		return 0, r.err(field, err)
	}
	r.i += n
	return v, nil
}

func (r *reader) vleMax(field string, max uint64) (uint64, error) {
	start := r.i
	v, err := r.vle(field)
	if err != nil {
		return 0, err
	}
	if v > max {
		return 0, newErr(r.msg, field, start, ErrTooLarge)
	}
	return v, nil
}

func (r *reader) z8(field string) (uint8, error) {
	v, err := r.vleMax(field, math.MaxUint8)
	return uint8(v), err
}

func (r *reader) z16(field string) (uint16, error) {
	v, err := r.vleMax(field, math.MaxUint16)
	return uint16(v), err
}

func (r *reader) z32(field string) (uint32, error) {
	v, err := r.vleMax(field, math.MaxUint32)
	return uint32(v), err
}

// take returns the next n bytes (aliasing b).
func (r *reader) take(field string, n int) ([]byte, error) {
	if n < 0 || n > r.left() {
		return nil, r.err(field, ErrTruncated)
	}
	s := r.b[r.i : r.i+n : r.i+n]
	r.i += n
	return s, nil
}

// bytes reads <u8;zN>: a VLE length bounded by max, then that many bytes,
// which alias the input. A length claiming more than what remains is
// ErrTruncated; nothing is allocated from it.
func (r *reader) bytes(field string, max uint64) ([]byte, error) {
	start := r.i
	n, err := r.vleMax(field, max)
	if err != nil {
		return nil, err
	}
	if n > uint64(r.left()) {
		r.i = start
		return nil, r.err(field, ErrTruncated)
	}
	return r.take(field, int(n))
}

// appendBytes writes <u8;zN>.
func appendBytes(b, s []byte) []byte {
	b = AppendVLE(b, uint64(len(s)))
	return append(b, s...)
}

func appendString(b []byte, s string) []byte {
	b = AppendVLE(b, uint64(len(s)))
	return append(b, s...)
}

func bytesLen(n int) int { return VLELen(uint64(n)) + n }

func boolByte(ok bool, bit byte) byte {
	if ok {
		return bit
	}
	return 0
}
