package wire

// Extension header byte (zenoh-wire.md §2.2):
//
//	 7   6 5   4   3 2 1 0
//	+-+-----+---+---------+
//	|Z| ENC | M |   ID    |   Z: another extension follows
//	+-+-----+---+---------+   ENC: 00 unit, 01 Z64, 10 ZBuf, 11 reserved
//	                          M: mandatory (unknown ⇒ message invalid)
//
// An extension is identified by header&0x7f (ID + M + ENC).
const (
	ExtMore      byte = 0x80 // Z: another extension follows
	ExtMandatory byte = 0x10 // M
	ExtEncMask   byte = 0x60
	ExtIDMask    byte = 0x0f
	ExtEncUnit   byte = 0x00
	ExtEncZ64    byte = 0x20
	ExtEncZBuf   byte = 0x40
	extEncRsvd   byte = 0x60
)

// Known extension header bytes (ID|M|ENC, without Z). zenoh-wire.md §2.2,
// §4, §8.2, §9.6, §10.
const (
	// transport
	ExtInitQoS         byte = 0x01 // INIT/OPEN QoS (unit)
	ExtInitQoSLink     byte = 0x21 // INIT QoSLink (Z64)
	ExtInitShm         byte = 0x42 // INIT Shm (ZBuf)
	ExtInitAuth        byte = 0x43 // INIT/OPEN Auth (ZBuf)
	ExtInitMultiLink   byte = 0x44 // INIT/OPEN MultiLink (ZBuf)
	ExtInitLowLatency  byte = 0x05 // INIT/OPEN LowLatency (unit)
	ExtInitCompression byte = 0x06 // INIT/OPEN Compression (unit)
	ExtPatch           byte = 0x27 // INIT/JOIN Patch (Z64): 1 = fragment First/Drop markers
	ExtFrameQoS        byte = 0x31 // FRAME/FRAGMENT/OAM QoS (Z64, mandatory): low 3 bits = priority
	ExtFragmentFirst   byte = 0x02 // FRAGMENT First (unit)
	ExtFragmentDrop    byte = 0x03 // FRAGMENT Drop (unit)
	ExtJoinQoS         byte = 0x51 // JOIN QoS (ZBuf, mandatory)
	ExtJoinShm         byte = 0x52 // JOIN Shm (ZBuf, mandatory)
	// network
	ExtQoS         byte = 0x21 // QoS (Z64), §8.1
	ExtTimestamp   byte = 0x42 // Timestamp (ZBuf), §1.4
	ExtNodeID      byte = 0x33 // NodeId (Z64, mandatory)
	ExtTarget      byte = 0x34 // REQUEST query target (Z64, mandatory)
	ExtBudget      byte = 0x25 // REQUEST budget (Z64)
	ExtTimeout     byte = 0x26 // REQUEST timeout in ms (Z64)
	ExtResponderID byte = 0x43 // RESPONSE responder id (ZBuf)
	// declarations
	ExtQueryableInfo    byte = 0x21 // DeclareQueryable info (Z64): bit0 complete, bits 8..23 distance
	ExtUndeclareWireExp byte = 0x5f // Undeclare* WireExpr (ZBuf, mandatory)
	// zenoh
	ExtSourceInfo      byte = 0x41 // PUT/DEL/QUERY/ERR SourceInfo (ZBuf)
	ExtShm             byte = 0x12 // PUT/ERR SHM marker (unit, mandatory)
	ExtPutAttachment   byte = 0x43 // PUT attachment (ZBuf)
	ExtDelAttachment   byte = 0x42 // DEL attachment (ZBuf, Rust numbering)
	ExtQueryBody       byte = 0x43 // QUERY body (ZBuf): encoding + payload
	ExtQueryAttachment byte = 0x45 // QUERY attachment (ZBuf)
)

// Ext is one extension kept raw, so that a router can forward or ignore
// extensions it does not interpret. Body aliases the parsed input.
type Ext struct {
	Header byte   // ID|M|ENC (the Z bit is managed by the chain)
	Value  uint64 // for ENC = Z64
	Body   []byte // for ENC = ZBuf; aliases the input when parsed
}

// Enc returns the encoding bits (ExtEncUnit, ExtEncZ64, ExtEncZBuf).
func (e Ext) Enc() byte { return e.Header & ExtEncMask }

// Mandatory reports the M bit.
func (e Ext) Mandatory() bool { return e.Header&ExtMandatory != 0 }

// Len is the encoded size in bytes.
func (e Ext) Len() int {
	switch e.Enc() {
	case ExtEncZ64:
		return 1 + VLELen(e.Value)
	case ExtEncZBuf:
		return 1 + bytesLen(len(e.Body))
	}
	return 1
}

// Append appends the extension with the Z bit set iff more.
func (e Ext) Append(b []byte, more bool) []byte {
	h := e.Header &^ ExtMore
	if more {
		h |= ExtMore
	}
	b = append(b, h)
	switch e.Enc() {
	case ExtEncZ64:
		b = AppendVLE(b, e.Value)
	case ExtEncZBuf:
		b = appendBytes(b, e.Body)
	}
	return b
}

// ext reads one extension; more reports its Z bit.
func (r *reader) ext() (e Ext, more bool, err error) {
	h, err := r.u8("ext")
	if err != nil {
		return e, false, err
	}
	e.Header = h &^ ExtMore
	switch e.Enc() {
	case ExtEncUnit:
	case ExtEncZ64:
		e.Value, err = r.vle("ext")
	case ExtEncZBuf:
		e.Body, err = r.bytes("ext", 0xffff_ffff)
	default:
		r.i--
		return e, false, r.err("ext", ErrInvalid)
	}
	return e, h&ExtMore != 0, err
}

// unknownExt keeps a non-mandatory extension raw and rejects a mandatory one.
func (r *reader) unknownExt(dst []Ext, e Ext, start int) ([]Ext, error) {
	if e.Mandatory() {
		return dst, newErr(r.msg, "ext", start, ErrUnknownMandatoryExt)
	}
	return append(dst, e), nil
}

// extWriter appends an extension chain, setting Z on every extension and
// clearing it on the last one in done.
type extWriter struct {
	b    []byte
	last int
}

func newExtWriter(b []byte) extWriter { return extWriter{b: b, last: -1} }

func (w *extWriter) hdr(h byte) {
	w.last = len(w.b)
	w.b = append(w.b, h|ExtMore)
}

func (w *extWriter) unit(h byte) { w.hdr(h) }

func (w *extWriter) z64(h byte, v uint64) {
	w.hdr(h)
	w.b = AppendVLE(w.b, v)
}

func (w *extWriter) zbuf(h byte, body []byte) {
	w.hdr(h)
	w.b = appendBytes(w.b, body)
}

// sourceInfo writes the SourceInfo extension (0x41, ZBuf) of PUT, DEL,
// QUERY and ERR.
func (w *extWriter) sourceInfo(si SourceInfo) {
	w.hdr(ExtSourceInfo)
	w.b = AppendVLE(w.b, uint64(si.Len()))
	w.b = si.Append(w.b)
}

// rawBelow writes the raw extensions whose ID (low 4 bits) is below id
// (below = true) or at/above it (below = false), keeping their order. With
// a typed extension written in between, a chain sorted by ID (as Rust and
// pico write INIT/JOIN extensions) re-encodes byte for byte.
func (w *extWriter) rawBelow(exts []Ext, id byte, below bool) {
	for _, e := range exts {
		if (e.Header&ExtIDMask < id&ExtIDMask) == below {
			w.last = len(w.b)
			w.b = e.Append(w.b, true)
		}
	}
}

func (w *extWriter) raw(exts []Ext) {
	for _, e := range exts {
		w.last = len(w.b)
		w.b = e.Append(w.b, true)
	}
}

// done clears Z on the last extension and reports whether any was written.
func (w *extWriter) done() ([]byte, bool) {
	if w.last < 0 {
		return w.b, false
	}
	w.b[w.last] &^= ExtMore
	return w.b, true
}

func extsLen(exts []Ext) int {
	n := 0
	for _, e := range exts {
		n += e.Len()
	}
	return n
}

func z64Len(v uint64) int { return 1 + VLELen(v) }
func zbufLen(n int) int   { return 1 + bytesLen(n) }

// finishHeader sets FlagZ on the header byte at position p when any
// extension was written.
func finishHeader(w *extWriter, p int) []byte {
	b, any := w.done()
	if any {
		b[p] |= FlagZ
	}
	return b
}

// Messages with no field but their extensions (KEEP_ALIVE §4.5, D_FINAL
// §9.6): the header byte id (Z set when exts is not empty), then the
// chain, all of which they keep raw.

// extsOnlyLen is the encoded length of such a message.
func extsOnlyLen(exts []Ext) int { return 1 + extsLen(exts) }

// appendExtsOnly appends such a message.
func appendExtsOnly(b []byte, id byte, exts []Ext) []byte {
	p := len(b)
	b = append(b, id)
	w := newExtWriter(b)
	w.raw(exts)
	return finishHeader(&w, p)
}

// extsOnly reads such a message's chain after its header byte h into
// *exts, reusing its backing array.
func (r *reader) extsOnly(h byte, exts *[]Ext) error {
	*exts = (*exts)[:0]
	return r.extChain(exts, h&FlagZ != 0, nil)
}

// FindExt returns the first extension with the given header (ID|M|ENC).
func FindExt(exts []Ext, header byte) (Ext, bool) {
	for _, e := range exts {
		if e.Header == header&^ExtMore {
			return e, true
		}
	}
	return Ext{}, false
}
