package transport

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
