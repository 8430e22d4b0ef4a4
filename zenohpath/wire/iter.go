package wire

import "iter"

// frameScan remembers how far NetworkMessages got in a frame payload, so
// that TransportMessages can resume after the frame without decoding it
// again.
type frameScan struct {
	payload []byte // the payload iterated (identity: same first byte and length)
	end     int    // offset in payload where network messages stopped
	done    bool   // iteration reached end or a transport header
}

func samePayload(a, b []byte) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// NetworkMessages iterates over the network messages of a FRAME payload
// (or a reassembled message). It stops at the end of payload, or silently
// at a header byte with a transport ID (the end of the frame in a Rust
// multi-frame batch, zenoh-wire.md §3.2). A decode error is yielded once,
// with offsets counted from the start of payload, and ends the iteration.
// Values are the Parser's: valid until the next step.
func (p *Parser) NetworkMessages(payload []byte) iter.Seq2[NetworkMessage, error] {
	return func(yield func(NetworkMessage, error) bool) {
		p.scan = frameScan{payload: payload}
		off := 0
		for off < len(payload) && IsNetworkHeader(payload[off]) {
			m, n, err := p.Network(payload[off:])
			if err != nil {
				yield(nil, shiftErr(err, off))
				return
			}
			off += n
			p.scan.end = off
			if !yield(m, nil) {
				return
			}
		}
		p.scan.done = true
	}
}

// TransportMessages iterates over the transport messages of a batch. For a
// FRAME, iterate its payload with NetworkMessages inside the loop body;
// either way the iteration resumes after the frame's last network message,
// so Rust multi-frame batches work (zenoh-wire.md §3.2). A decode error is
// yielded once, with offsets counted from the start of the batch, and ends
// the iteration. Values are the Parser's: valid until the next step.
//
//	for t, err := range p.TransportMessages(batch) {
//		if err != nil { ... }
//		if f, ok := t.(*wire.Frame); ok {
//			for n, err := range p.NetworkMessages(f.Payload) { ... }
//		}
//	}
func (p *Parser) TransportMessages(batch []byte) iter.Seq2[TransportMessage, error] {
	return func(yield func(TransportMessage, error) bool) {
		off := 0
		for off < len(batch) {
			t, n, err := p.Transport(batch[off:])
			if err != nil {
				yield(nil, shiftErr(err, off))
				return
			}
			f, ok := t.(*Frame)
			if !ok {
				off += n
				if !yield(t, nil) {
					return
				}
				continue
			}
			payload := f.Payload
			off += n - len(payload)
			p.scan = frameScan{}
			if !yield(t, nil) {
				return
			}
			if samePayload(p.scan.payload, payload) && p.scan.done {
				off += p.scan.end
				continue
			}
			// the body did not walk the frame to its end: find it
			k := 0
			for k < len(payload) && IsNetworkHeader(payload[k]) {
				_, j, err := p.Network(payload[k:])
				if err != nil {
					yield(nil, shiftErr(err, off+k))
					return
				}
				k += j
			}
			off += k
		}
	}
}
