package wire

// Reassembler rebuilds one network message from a train of FRAGMENTs
// (zenoh-wire.md §4.7). It is pure and bounded: it never holds more than
// Max bytes. Use one per channel (or one per link, leniently: pico sends
// fragments of reliable messages with R=0, so the channel flag is not
// checked here).
//
// Rules: a fragment whose SN does not follow the previous one discards the
// partial message; with RequireFirst (Patch ≥ 1 negotiated) a train must
// start with the First marker, other trains are dropped silently; a
// fragment with the Drop marker discards the partial message; a message
// growing beyond Max is discarded with ErrTooLarge (pico drops it
// silently; the caller decides).
type Reassembler struct {
	// Max is the largest reassembled message, in bytes (zenoh-pico:
	// Z_FRAG_MAX_SIZE, 4096 in cmake builds, 300000 in its GNUmakefile).
	// 0 means 300000.
	Max int
	// RequireFirst drops trains that do not start with the First marker.
	RequireFirst bool
	// SNMask is the SN space (SNMask(resolution)); 0 means the default
	// 28-bit mask.
	SNMask uint64

	buf    []byte
	active bool
	next   uint64
}

// DefaultFragMax is the reassembly bound used when Reassembler.Max is 0.
const DefaultFragMax = 300000

// Reset discards any partial message.
func (r *Reassembler) Reset() {
	r.buf = r.buf[:0]
	r.active = false
}

// Buffered is the size of the partial message.
func (r *Reassembler) Buffered() int { return len(r.buf) }

// Push adds a fragment. When f completes a message it returns the
// serialized network message and true; the bytes are owned by the
// Reassembler and valid until the next Push or Reset (decode them with
// Parser.Network). f.Payload is copied.
func (r *Reassembler) Push(f *Fragment) ([]byte, bool, error) {
	mask := r.SNMask
	if mask == 0 {
		mask = SNMask(DefaultResolution)
	}
	limit := r.Max
	if limit <= 0 {
		limit = DefaultFragMax
	}
	if f.Drop {
		r.Reset()
		return nil, false, nil
	}
	if f.First || (r.active && f.SN&mask != r.next) {
		r.Reset()
	}
	if !r.active {
		if r.RequireFirst && !f.First {
			return nil, false, nil
		}
		r.active = true
	}
	if len(r.buf)+len(f.Payload) > limit {
		r.Reset()
		return nil, false, newErr("FRAGMENT", "payload", 0, ErrTooLarge)
	}
	r.buf = append(r.buf, f.Payload...)
	r.next = (f.SN + 1) & mask
	if f.More {
		return nil, false, nil
	}
	r.active = false
	msg := r.buf
	r.buf = r.buf[:0]
	return msg, true, nil
}
