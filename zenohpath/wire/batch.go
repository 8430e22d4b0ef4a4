package wire

// Batch framing (zenoh-wire.md §3.1).
//
// On streams (TCP, TLS, WS, QUIC streams) every batch is preceded by its
// length as a u16 little-endian; on datagram links (UDP) one datagram is
// one batch with no prefix. The Rust receiver's buffer of batch_size bytes
// includes the 2-byte prefix, so on streams the content must be at most
// batch_size − 2 bytes (MaxStreamBatchContent).

// StreamPrefixLen is the size of the stream length prefix, in bytes.
const StreamPrefixLen = 2

// MaxStreamBatchContent returns the largest batch content to send on a
// stream link with the negotiated batch size (zenoh-wire.md §3.1).
func MaxStreamBatchContent(batchSize uint16) int {
	if batchSize < StreamPrefixLen {
		return 0
	}
	return int(batchSize) - StreamPrefixLen
}

// AppendStreamBatch appends u16le(len(content)) followed by content. It
// panics if content is longer than 65535 bytes (a caller bug: batches are
// bounded by the negotiated size).
func AppendStreamBatch(b, content []byte) []byte {
	if len(content) > 0xffff {
		panic("wire: stream batch longer than 65535 bytes")
	}
	b = append(b, byte(len(content)), byte(len(content)>>8))
	return append(b, content...)
}

// PutStreamPrefix writes the u16le length n into dst[0:2]; use it to fill a
// reserved prefix after the batch content was appended.
func PutStreamPrefix(dst []byte, n int) {
	if n < 0 || n > 0xffff {
		panic("wire: stream batch length out of range")
	}
	dst[0], dst[1] = byte(n), byte(n>>8)
}

// StreamBatchLen decodes a length prefix.
func StreamBatchLen(prefix []byte) (int, error) {
	if len(prefix) < StreamPrefixLen {
		return 0, newErr("batch", "length", 0, ErrTruncated)
	}
	return int(prefix[0]) | int(prefix[1])<<8, nil
}

// SplitStreamBatch cuts the first length-prefixed batch off b. It returns
// the batch content (aliasing b) and the remaining bytes; ErrTruncated if b
// does not yet hold the whole batch (the caller then reads more).
func SplitStreamBatch(b []byte) (batch, rest []byte, err error) {
	n, err := StreamBatchLen(b)
	if err != nil {
		return nil, b, err
	}
	if len(b)-StreamPrefixLen < n {
		return nil, b, newErr("batch", "content", StreamPrefixLen, ErrTruncated)
	}
	return b[StreamPrefixLen : StreamPrefixLen+n : StreamPrefixLen+n], b[StreamPrefixLen+n:], nil
}

// AppendBatch appends the transport messages back to back (a datagram batch
// or the content of a stream batch).
func AppendBatch(b []byte, msgs ...TransportMessage) []byte {
	for _, m := range msgs {
		b = m.Append(b)
	}
	return b
}

// AppendFrame appends a FRAME header (no extensions) followed by the
// network messages: the usual way to build a batch for zenoh-pico, which
// must end with its only FRAME (zenoh-wire.md §3.2). Use Frame.HeaderLen
// and each message's Len beforehand to stay within the batch size.
func AppendFrame(b []byte, reliable bool, sn uint64, msgs ...NetworkMessage) []byte {
	b = Frame{Reliable: reliable, SN: sn}.Append(b)
	for _, m := range msgs {
		b = m.Append(b)
	}
	return b
}
