package ros2

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Endianness is the byte order named by a CDR encapsulation header.
type Endianness uint8

// Byte orders of plain CDR (XCDR1).
const (
	LittleEndian Endianness = iota // encapsulation 00 01 (CDR_LE), what ROS 2 sends on x86/ARM
	BigEndian                      // encapsulation 00 00 (CDR_BE)
)

func (e Endianness) String() string {
	switch e {
	case LittleEndian:
		return "CDR_LE"
	case BigEndian:
		return "CDR_BE"
	}
	return fmt.Sprintf("Endianness(%d)", uint8(e))
}

// Encapsulation representation identifiers: a big-endian u16 in the first two bytes of a
// serialized payload (DDS-RTPS 2.5 ch. 10, DDS-XTypes 1.3).
const (
	EncapsulationCDRBE uint16 = 0x0000
	EncapsulationCDRLE uint16 = 0x0001
)

// EncapsulationSize is the length of the encapsulation header: representation identifier
// (2 bytes) and options (2 bytes).
const EncapsulationSize = 4

// maxTrailing is how many bytes may follow the last field: a writer may pad the payload to a
// multiple of 4 and announce the padding in the low bits of the options (DDS-XTypes 1.3).
const maxTrailing = 3

// ParseEncapsulation reads the 4-byte encapsulation header of a serialized message and
// returns its byte order. Only plain CDR (XCDR1) is accepted; the options bytes are ignored.
func ParseEncapsulation(cdr []byte) (Endianness, error) {
	if len(cdr) < EncapsulationSize {
		return 0, ErrTruncated
	}
	switch binary.BigEndian.Uint16(cdr) {
	case EncapsulationCDRLE:
		return LittleEndian, nil
	case EncapsulationCDRBE:
		return BigEndian, nil
	}
	return 0, fmt.Errorf("%w: representation 0x%02x%02x (want 0x0000 CDR_BE or 0x0001 CDR_LE)", ErrEncapsulation, cdr[0], cdr[1])
}

// AppendEncapsulation appends the 4-byte encapsulation header for e (options zero).
func AppendEncapsulation(b []byte, e Endianness) []byte {
	if e == BigEndian {
		return append(b, 0, 0, 0, 0)
	}
	return append(b, 0, 1, 0, 0)
}

func (e Endianness) order() binary.ByteOrder {
	if e == BigEndian {
		return binary.BigEndian
	}
	return binary.LittleEndian
}

func (e Endianness) appendOrder() binary.AppendByteOrder {
	if e == BigEndian {
		return binary.BigEndian
	}
	return binary.LittleEndian
}

// alignUp returns pos rounded up to a multiple of n (n a power of two); pos counts from the
// first byte after the encapsulation header.
func alignUp(pos, n int) int { return (pos + n - 1) &^ (n - 1) }

// encoder appends XCDR1 primitives. origin is the index in b of the first byte after the
// encapsulation header; alignment is relative to it.
type encoder struct {
	b      []byte
	origin int
	order  binary.AppendByteOrder
}

func newEncoder(b []byte, e Endianness) *encoder {
	b = AppendEncapsulation(b, e)
	return &encoder{b: b, origin: len(b), order: e.appendOrder()}
}

func (e *encoder) align(n int) {
	pos := len(e.b) - e.origin
	for pad := alignUp(pos, n) - pos; pad > 0; pad-- {
		e.b = append(e.b, 0)
	}
}

func (e *encoder) u32(v uint32) {
	e.align(4)
	e.b = e.order.AppendUint32(e.b, v)
}

func (e *encoder) i32(v int32) { e.u32(uint32(v)) }

func (e *encoder) f32(v float32) { e.u32(math.Float32bits(v)) }

func (e *encoder) f64(v float64) {
	e.align(8)
	e.b = e.order.AppendUint64(e.b, math.Float64bits(v))
}

// str writes a CDR string: u32 length including the NUL terminator, bytes, NUL.
func (e *encoder) str(s string) {
	e.u32(uint32(len(s) + 1))
	e.b = append(e.b, s...)
	e.b = append(e.b, 0)
}

func (e *encoder) f32seq(v []float32) {
	e.u32(uint32(len(v)))
	for _, f := range v {
		e.b = e.order.AppendUint32(e.b, math.Float32bits(f))
	}
}

// strLen is the size of a CDR string written at pos (already aligned or not), returning the
// new position.
func strLen(pos int, s string) int { return alignUp(pos, 4) + 4 + len(s) + 1 }

// decoder reads XCDR1 primitives from b. off is the read position in b; alignment is
// relative to EncapsulationSize. The first error sticks: later reads return zero values.
type decoder struct {
	b     []byte
	off   int
	order binary.ByteOrder
	typ   string
	err   error
}

func newDecoder(cdr []byte, rosType string) *decoder {
	d := &decoder{b: cdr, typ: rosType}
	e, err := ParseEncapsulation(cdr)
	if err != nil {
		d.err = &DecodeError{Type: rosType, Field: "encapsulation", Offset: 0, Err: err}
		return d
	}
	d.order = e.order()
	d.off = EncapsulationSize
	return d
}

func (d *decoder) fail(field string, err error) {
	if d.err == nil {
		d.err = &DecodeError{Type: d.typ, Field: field, Offset: d.off, Err: err}
	}
}

func (d *decoder) remaining() int { return len(d.b) - d.off }

func (d *decoder) align(field string, n int) bool {
	if d.err != nil {
		return false
	}
	pos := d.off - EncapsulationSize
	pad := alignUp(pos, n) - pos
	if pad > d.remaining() {
		d.fail(field, ErrTruncated)
		return false
	}
	d.off += pad
	return true
}

func (d *decoder) u32(field string) uint32 {
	if !d.align(field, 4) {
		return 0
	}
	if d.remaining() < 4 {
		d.fail(field, ErrTruncated)
		return 0
	}
	v := d.order.Uint32(d.b[d.off:])
	d.off += 4
	return v
}

func (d *decoder) i32(field string) int32 { return int32(d.u32(field)) }

func (d *decoder) f32(field string) float32 { return math.Float32frombits(d.u32(field)) }

func (d *decoder) f64(field string) float64 {
	if !d.align(field, 8) {
		return 0
	}
	if d.remaining() < 8 {
		d.fail(field, ErrTruncated)
		return 0
	}
	v := d.order.Uint64(d.b[d.off:])
	d.off += 8
	return math.Float64frombits(v)
}

// str reads a CDR string. The length includes the NUL terminator, so it is at least 1, and
// the last byte must be NUL.
func (d *decoder) str(field string) string {
	n := d.u32(field)
	if d.err != nil {
		return ""
	}
	if n == 0 {
		d.fail(field, fmt.Errorf("%w: string length 0 (no NUL terminator)", ErrMalformed))
		return ""
	}
	if uint64(n) > uint64(d.remaining()) {
		d.fail(field, fmt.Errorf("%w: string length %d, %d bytes left", ErrTruncated, n, d.remaining()))
		return ""
	}
	raw := d.b[d.off : d.off+int(n)]
	if raw[n-1] != 0 {
		d.fail(field, fmt.Errorf("%w: string not NUL-terminated", ErrMalformed))
		return ""
	}
	d.off += int(n)
	return string(raw[:n-1])
}

// f32seq reads a sequence<float>. The count is checked against the bytes left before any
// allocation; an empty sequence decodes as nil.
func (d *decoder) f32seq(field string) []float32 {
	n := d.u32(field)
	if d.err != nil || n == 0 {
		return nil
	}
	if uint64(n)*4 > uint64(d.remaining()) {
		d.fail(field, fmt.Errorf("%w: sequence of %d floats, %d bytes left", ErrTruncated, n, d.remaining()))
		return nil
	}
	v := make([]float32, n)
	for i := range v {
		v[i] = math.Float32frombits(d.order.Uint32(d.b[d.off:]))
		d.off += 4
	}
	return v
}

// finish checks that at most maxTrailing padding bytes follow the message.
func (d *decoder) finish() error {
	if d.err == nil && d.remaining() > maxTrailing {
		d.fail("(end)", fmt.Errorf("%w: %d bytes after the message", ErrMalformed, d.remaining()))
	}
	return d.err
}
