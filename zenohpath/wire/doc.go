// Package wire is the Zenoh 1.x (protocol version 0x09) wire codec: VLE
// integers, ZIDs, extensions, transport, network and zenoh messages, and
// batch framing. It is pure functions over bytes: no I/O, no clocks, and it
// imports only the standard library. Scouting messages (SCOUT, HELLO, §7)
// are included for UDP discovery. The protocol notes it follows are
// shared/design/zenoh-wire.md; section numbers (§) in doc comments refer to
// that file.
//
// # Encoding
//
// Every message type has Append(b []byte) []byte, which appends the encoded
// message (header byte included) and cannot fail, and Len() int, which
// equals len(Append(nil)) so a batcher can decide to fit, flush or fragment
// before appending. Optional fields are explicit: a Has* flag (HasQoS,
// HasTimestamp, ...) or a nil slice decides whether a flag/extension is
// written, so decoding and re-encoding reproduce the input bytes (see
// "Canonical forms" below).
//
// # Decoding
//
// ParseX(b []byte, h byte) (X, int, error) decodes message X; b starts
// after the header byte h (as in zenoh-pico's decoders) and the int counts
// the bytes consumed from b. ParseTransport and ParseNetwork dispatch on
// the header byte at b[0].
//
// For the receive path use a Parser (one per link): it decodes into values
// it owns and reuses, and interns key suffixes, so FRAME → PUSH → PUT does
// not allocate in steady state. Messages returned by a Parser are valid
// until its next call. WalkBatch walks a whole batch with a callback:
// transport messages, and the network messages of each FRAME; the range
// iterators TransportMessages and NetworkMessages do the same with
// for-range loops. Neither allocates.
//
// # Ownership of bytes
//
// []byte fields of decoded values (payloads, attachments, cookies, raw
// extension bodies, encoding schemas, FRAME/FRAGMENT payloads) alias the
// input batch: copy them if they must outlive the batch buffer. String
// fields (key suffixes, query parameters) are copies (or interned copies)
// and are safe to keep.
//
// # Errors
//
// Decoding never panics and never allocates from an unchecked length (a
// length that claims more than the remaining bytes is ErrTruncated). Every
// error is an *Error carrying the message name, the field and the byte
// offset, wrapping one sentinel: ErrTruncated, ErrUnknownMessage,
// ErrUnknownMandatoryExt, ErrTooLarge, ErrInvalid or ErrNotNetwork. Match
// with errors.Is / errors.As.
//
// # Extensions
//
// Extensions the codec interprets become typed fields; all others that are
// not mandatory are kept raw, in order, in the message's Exts field
// ([]Ext), so a router can forward or ignore them. An unknown mandatory
// extension (M bit) is ErrUnknownMandatoryExt (§2.2). On Append the typed
// extensions are written first, in a fixed order, then Exts.
//
// # Batches
//
// A batch is a concatenation of transport messages. On streams each batch
// is prefixed by its length as u16 little-endian (AppendStreamBatch,
// SplitStreamBatch); on datagram links one datagram is one batch (§3.1).
// A FRAME's payload runs to the end of the batch, as zenoh-pico reads it;
// WalkBatch also accepts Rust multi-frame batches (§3.2).
//
// # Canonical forms (re-encode exceptions)
//
// Append(Parse(b)) == b for every batch of the zenoh-pico transcripts, in
// both directions (the transcript test checks it). It differs from the input
// only where the input is not in the form Zenoh encoders produce:
//
//   - A non-minimal VLE (e.g. 81 00 for 1) is accepted, as both
//     implementations do, and re-encoded minimally.
//   - Reserved/unused bits are dropped: header flags marked X in the
//     diagrams (e.g. 0x40 of CLOSE), bits 2-3 of the whatami byte of
//     INIT/JOIN, unused bits of the Undeclare WireExpr flags byte, bits 1-7
//     of the QueryableInfo value.
//   - A lease in milliseconds that is a whole number of seconds is written
//     with the T flag (seconds), as both implementations do.
//   - An N flag with an empty suffix (WireExpr, INTEREST options with R,
//     Undeclare WireExpr ext) and a P flag with empty QUERY parameters are
//     dropped: empty strings are never sent (§9.1).
//   - An INIT/JOIN Patch extension with value 0 is dropped (0 = absent).
//   - Extensions are written in a fixed order: the typed ones in the order
//     of the message's diagram (which is the order Rust's codec writes
//     them), then the raw Exts in input order; for INIT and JOIN the chain
//     is written sorted by ID around Patch, as Rust and pico do. A sender
//     using another order, or repeating an extension (the last one wins),
//     is re-encoded in that order. Uninterpreted extensions keep their
//     order and bytes.
//
// Fuzz targets check that Append(Parse(x)) is a fixpoint: parsing it again
// and appending yields the same bytes.
//
// # Tests, fuzzing, benchmarks
//
// The transcript test decodes every batch of shared/testdata/zenoh-pico
// (found through $PICOBRIDGE_SHARED or by walking up from the working
// directory; skipped when absent), re-encodes it and compares the
// description with its `# expect:` line. Fuzz targets (FuzzParseBatch,
// FuzzParseTransport, FuzzParseNetwork, FuzzParseZenohMessage,
// FuzzParseScouting, FuzzVLE) are seeded with appended values and the
// transcripts; run one with
//
//	go test ./zenohpath/wire -run '^$' -fuzz '^FuzzParseBatch$' -fuzztime 30s
//
// Benchmarks (BenchmarkParseFramePush, BenchmarkAppendFramePush,
// BenchmarkWalkBatch170Push, BenchmarkReassemble) report allocations;
// TestParserAllocs pins zero allocations on FRAME→PUSH→PUT decode and on
// encoding into a reused buffer.
package wire
