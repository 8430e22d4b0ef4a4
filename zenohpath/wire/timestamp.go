package wire

// Timestamp is a hybrid logical clock value (zenoh-wire.md §1.4):
//
//	%time:z64%         NTP64 since the UNIX epoch: upper 32 bits seconds,
//	                   lower 32 bits binary fraction
//	<u8;z8> zid        the clock's ZID, length-prefixed (1..16 bytes)
//
// It is carried in PUT/DEL (T flag) and as network ext 0x42 (ZBuf).
type Timestamp struct {
	Time uint64
	ZID  ZID
}

// Seconds returns the whole seconds since the UNIX epoch.
func (t Timestamp) Seconds() uint64 { return t.Time >> 32 }

// Len is the encoded size.
func (t Timestamp) Len() int { return VLELen(t.Time) + 1 + max(t.ZID.Len(), 1) }

// Append appends the timestamp (no extension header).
func (t Timestamp) Append(b []byte) []byte {
	b = AppendVLE(b, t.Time)
	if t.ZID.n == 0 {
		return append(b, 1, 0)
	}
	b = append(b, t.ZID.n)
	return t.ZID.appendWire(b)
}

func (r *reader) timestamp(field string) (Timestamp, error) {
	var t Timestamp
	var err error
	if t.Time, err = r.vle(field); err != nil {
		return t, err
	}
	n, err := r.z8(field)
	if err != nil {
		return t, err
	}
	t.ZID, err = r.zid(field, int(n))
	return t, err
}

// ParseTimestamp decodes a timestamp from the start of b.
func ParseTimestamp(b []byte) (Timestamp, int, error) {
	r := reader{b: b, msg: "Timestamp"}
	t, err := r.timestamp("timestamp")
	return t, r.i, err
}

// timestampExt parses the body of a Timestamp ZBuf extension, which must be
// consumed completely.
func (r *reader) timestampExt(e Ext, start int) (Timestamp, error) {
	t, n, err := ParseTimestamp(e.Body)
	if err != nil {
		return t, newErr(r.msg, "timestamp", start, sentinel(err))
	}
	if n != len(e.Body) {
		return t, newErr(r.msg, "timestamp", start, ErrInvalid)
	}
	return t, nil
}

// Encoding of a payload (zenoh-wire.md §1.5):
//
//	%(id<<1 | S):z32%   id = u16 from the predefined table
//	[schema <u8;z8>]    if S
//
// A missing encoding (no E flag) means id 0, zenoh/bytes.
type Encoding struct {
	ID     uint16
	Schema []byte // nil = no schema; aliases the input when parsed
}

// Len is the encoded size.
func (e Encoding) Len() int {
	v := uint64(e.ID) << 1
	if e.Schema != nil {
		return VLELen(v|1) + bytesLen(len(e.Schema))
	}
	return VLELen(v)
}

// Append appends the encoding.
func (e Encoding) Append(b []byte) []byte {
	v := uint64(e.ID) << 1
	if e.Schema != nil {
		b = AppendVLE(b, v|1)
		return appendBytes(b, e.Schema)
	}
	return AppendVLE(b, v)
}

func (r *reader) encoding(field string) (Encoding, error) {
	var e Encoding
	start := r.i
	v, err := r.z32(field)
	if err != nil {
		return e, err
	}
	if v>>1 > 0xffff {
		return e, newErr(r.msg, field, start, ErrTooLarge)
	}
	e.ID = uint16(v >> 1)
	if v&1 != 0 {
		e.Schema, err = r.bytes(field, 0xff)
	}
	return e, err
}

// Name returns the MIME-like name of a predefined encoding id, or "" if the
// id is not in the table (zenoh-wire.md §1.5).
func (e Encoding) Name() string {
	if int(e.ID) < len(encodingNames) {
		return encodingNames[e.ID]
	}
	return ""
}

var encodingNames = [...]string{
	"zenoh/bytes", "zenoh/string", "zenoh/serialized", "application/octet-stream", "text/plain",
	"application/json", "text/json", "application/cdr", "application/cbor", "application/yaml",
	"text/yaml", "text/json5", "application/python-serialized-object", "application/protobuf",
	"application/java-serialized-object", "application/openmetrics-text", "image/png", "image/jpeg",
	"image/gif", "image/bmp", "image/webp", "application/xml", "application/x-www-form-urlencoded",
	"text/html", "text/xml", "text/css", "text/javascript", "text/markdown", "text/csv",
	"application/sql", "application/coap-payload", "application/json-patch+json",
	"application/json-seq", "application/jsonpath", "application/jwt", "application/mp4",
	"application/soap+xml", "application/yang", "audio/aac", "audio/flac", "audio/mp4", "audio/ogg",
	"audio/vorbis", "video/h261", "video/h263", "video/h264", "video/h265", "video/h266",
	"video/mp4", "video/ogg", "video/raw", "video/vp8", "video/vp9",
}

// EntityGlobalID identifies an entity (zenoh-wire.md §1.6), carried as the
// RESPONSE ResponderId ext 0x43:
//
//	u8 (zidlen-1)<<4 · zid · %eid:z32%
type EntityGlobalID struct {
	ZID ZID
	EID uint32
}

// Len is the encoded size.
func (g EntityGlobalID) Len() int { return zidNibbleLen(g.ZID) + VLELen(uint64(g.EID)) }

// Append appends the body (no extension header).
func (g EntityGlobalID) Append(b []byte) []byte {
	b = appendZIDNibble(b, g.ZID, 0)
	return AppendVLE(b, uint64(g.EID))
}

// SourceInfo identifies the source of a sample (zenoh-wire.md §1.6), ext
// 0x41 of PUT/DEL/QUERY/ERR:
//
//	u8 (zidlen-1)<<4 · zid · %eid:z32% · %sn:z32%
type SourceInfo struct {
	ZID ZID
	EID uint32
	SN  uint32
}

// Len is the encoded size.
func (s SourceInfo) Len() int {
	return zidNibbleLen(s.ZID) + VLELen(uint64(s.EID)) + VLELen(uint64(s.SN))
}

// Append appends the body (no extension header).
func (s SourceInfo) Append(b []byte) []byte {
	b = appendZIDNibble(b, s.ZID, 0)
	b = AppendVLE(b, uint64(s.EID))
	return AppendVLE(b, uint64(s.SN))
}

func (r *reader) entityGlobalIDExt(e Ext, start int, field string) (EntityGlobalID, error) {
	s := reader{b: e.Body, msg: r.msg}
	var g EntityGlobalID
	var err error
	if g.ZID, _, err = s.zidNibble(field); err == nil {
		g.EID, err = s.z32(field)
	}
	if err == nil && s.left() != 0 {
		err = ErrInvalid
	}
	if err != nil {
		return g, newErr(r.msg, field, start, sentinel(err))
	}
	return g, nil
}

func (r *reader) sourceInfoExt(e Ext, start int) (SourceInfo, error) {
	s := reader{b: e.Body, msg: r.msg}
	var si SourceInfo
	var err error
	if si.ZID, _, err = s.zidNibble("source_info"); err == nil {
		if si.EID, err = s.z32("source_info"); err == nil {
			si.SN, err = s.z32("source_info")
		}
	}
	if err == nil && s.left() != 0 {
		err = ErrInvalid
	}
	if err != nil {
		return si, newErr(r.msg, "source_info", start, sentinel(err))
	}
	return si, nil
}

func sentinel(err error) error {
	if e, ok := err.(*Error); ok {
		return e.Err
	}
	return err
}
