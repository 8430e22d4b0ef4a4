package transport

import "github.com/picobridge/picobridge/zenohpath/wire"

// dropReason labels a counted drop (invariant 2). The set is closed so
// that metrics labels stay bounded.
type dropReason uint8

const (
	dropQueueFull        dropReason = iota // Send: TX queue full (DROP)
	dropBlockTimeout                       // Send: TX queue full for BlockTimeout (BLOCK)
	dropTooLarge                           // Send: message over MaxReassembly
	dropSNWindow                           // RX: FRAME/FRAGMENT SN outside the acceptance window
	dropFragmentGap                        // RX: non-consecutive fragment SN; the partial message is dropped
	dropFragmentOversize                   // RX: reassembled message over MaxReassembly
	dropFragmentNoFirst                    // RX: fragment train without the First marker (Patch ≥ 1)
	dropFragmentMarker                     // RX: the peer sent the Drop marker
	dropUDPQueueFull                       // RX: UDP listener demux queue full for a peer
	dropClosed                             // TX: messages still queued when the session closed
	dropUDPGarbage                         // RX: UDP datagram from an unknown source that is not an InitSyn
	numDropReasons
)

var dropNames = [numDropReasons]string{
	"queue_full", "block_timeout", "too_large", "sn_window", "fragment_gap",
	"fragment_oversize", "fragment_no_first", "fragment_drop_marker", "udp_queue_full", "closed",
	"udp_garbage",
}

func (d dropReason) String() string { return dropNames[d] }

// reassembler rebuilds one network message from consecutive FRAGMENTs of
// one channel (zenoh-wire.md §4.7), bounded by max bytes. With patch (the
// First/Drop markers negotiated, Patch ≥ 1) a train must start with First.
// A gap in the SNs or a train over the bound drops the whole message; the
// rest of that train is skipped.
type reassembler struct {
	max   int
	mask  uint64
	patch bool

	buf      []byte
	active   bool   // a train is being collected
	skipping bool   // discarding the rest of a dropped train
	next     uint64 // SN expected next while active
}

func newReassembler(max int, mask uint64, patch bool) *reassembler {
	return &reassembler{max: max, mask: mask, patch: patch}
}

// push adds one fragment. It returns the complete message (valid until the
// next push) when f is the last fragment of a train, and a drop reason with
// dropped true when a (partial) message was discarded.
func (r *reassembler) push(f *wire.Fragment) (msg []byte, dropped bool, why dropReason) {
	if f.Drop {
		wasActive := r.active
		r.reset()
		if wasActive {
			return nil, true, dropFragmentMarker
		}
		return nil, false, 0
	}
	started := false
	if r.patch && f.First {
		if r.active {
			dropped, why = true, dropFragmentGap
		}
		r.reset()
		r.active, started = true, true
	}
	switch {
	case r.skipping:
		if !f.More {
			r.skipping = false
		}
		return nil, dropped, why
	case r.active && !started && f.SN != r.next:
		// Gap: the partial message is lost.
		r.reset()
		dropped, why = true, dropFragmentGap
		if r.patch {
			// A fragment without First cannot start a train.
			r.skipping = f.More
			return nil, dropped, why
		}
		r.active = true
	case !r.active:
		if r.patch {
			r.skipping = f.More
			return nil, true, dropFragmentNoFirst
		}
		r.active = true
	}
	if len(r.buf)+len(f.Payload) > r.max {
		r.reset()
		r.skipping = f.More
		return nil, true, dropFragmentOversize
	}
	r.buf = append(r.buf, f.Payload...)
	r.next = snNext(f.SN, r.mask)
	if f.More {
		return nil, dropped, why
	}
	msg = r.buf
	r.active = false
	r.buf = r.buf[:0]
	return msg, dropped, why
}

func (r *reassembler) reset() {
	r.buf = r.buf[:0]
	r.active = false
	r.skipping = false
	if cap(r.buf) > 4*r.max/3+(64<<10) {
		r.buf = nil
	}
}
