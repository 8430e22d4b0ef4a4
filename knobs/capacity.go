package knobs

import (
	"math"
	"time"
)

// Framing costs the capacity model uses (zenoh-wire.md §3.1, §4.6).
const (
	// StreamPrefixBytes is the u16 length that prefixes every batch on TCP
	// (stream) links; a batch's content is at most batch size − 2 there.
	StreamPrefixBytes = 2
	// FrameHeaderBytes is the worst-case FRAME header: header byte plus a
	// 28-bit sequence number as VLE (4 bytes) — zenoh-wire.md §4.6, §5.
	FrameHeaderBytes = 5
	// perMessageBytes is the per-sample cost inside a batch (PUSH header,
	// declared wire-expression id, PUT header, payload length) used by the
	// throughput model; calibrated so that 64 B samples in a 1024 B batch give
	// the ~15 samples per send behind nano-ros tx-tuning.md's ~136 msg/s.
	perMessageBytes = 4
	// perFdSendEfficiency: sends per socket window actually achieved on a
	// platform with a per-fd lock (tx-tuning.md: ~9 msg/s at a 100 ms window).
	perFdSendEfficiency = 0.9
	// splitLockGain is the measured throughput gain of split lock over plain
	// batching (tx-tuning.md: ~181 vs ~136 msg/s, native_sim, 64 B).
	splitLockGain = 181.0 / 136.0
)

// Capacity is what one zenoh-pico device can take from the gateway and how
// fast it drains, derived from its resolved knobs (anchors.md §2.6). The
// bridge computes it once per device with CapacityOf and shapes that device's
// express and batched lanes with it. Sizes are bytes of the serialized
// network message (a PUSH with its wire expression and payload): the bridge
// subtracts its own encoding overhead to get payload limits.
type Capacity struct {
	// BatchSize is the device's Z_BATCH_UNICAST_SIZE (zenoh.wire.batch_unicast_size):
	// its receive buffer and the batch size it proposes in INIT. The gateway
	// must never send a batch whose content exceeds BatchSize − StreamPrefixBytes
	// on a stream link (zenoh-wire.md §3.1 size rule).
	BatchSize int
	// Fragmentation says whether the device reassembles FRAGMENTs
	// (Z_FEATURE_FRAGMENTATION, zenoh.wire.fragmentation).
	Fragmentation bool
	// MaxMessageBytes is the largest network message the device can receive:
	// Z_FRAG_MAX_SIZE (zenoh.wire.frag_max_size) with fragmentation; without
	// it the message must fit one FRAME in one batch, BatchSize −
	// StreamPrefixBytes − FrameHeaderBytes. Larger messages are dropped by the
	// device without any error (zenoh-wire.md §4.7; zenoh-pico #1200).
	MaxMessageBytes int
	// SlotBytes is the small-class subscriber slot (zenoh.limits.subscriber_buffer_size):
	// a sample larger than its subscriber's slot is dropped in the device's
	// ring (nros-rmw-zenoh subscriber.rs, anchors.md §2.6).
	SlotBytes int
	// LargeSlotBytes and LargeSlots describe the large class
	// (zenoh.limits.subscriber_large_size, max_large_subscribers): up to
	// LargeSlots subscribers declared above the size threshold get slots of
	// LargeSlotBytes.
	LargeSlotBytes int
	LargeSlots     int
	// RingDepth is the per-subscriber receive ring (zenoh.limits.subscriber_ring_depth);
	// when full the newest sample is dropped. The burst the gateway sends one
	// subscriber per FlushInterval must stay ≤ RingDepth (anchors.md §2.6,
	// RFC-0074: pacing, not the mean rate, prevents read-task stalls).
	RingDepth int
	// SocketWindow is the device's socket timeout window
	// (zenoh.link.socket_timeout_ms, Z_CONFIG_SOCKET_TIMEOUT): the SO_RCVTIMEO
	// of the read task's blocking recv. It limits only what the device SENDS:
	// with PerFdTxCeiling a send waits while the read task is inside recv,
	// until data arrives or the window ends (~1 send per window untuned). It
	// never paces what the device receives: a sample to the device ends the
	// recv at once (anchors.md §2.6; zenoh-pico tcp_zephyr.c).
	SocketWindow time.Duration
	// PerFdTxCeiling is the platform capability per_fd_tx_ceiling (Zephyr
	// zsock): send and receive share one lock per socket, so the device's
	// own sends wait for the read task's recv to return.
	PerFdTxCeiling bool
	// TxBatch, TxFlush and SplitLock are the device's own TX settings
	// (zenoh.tx.batch, flush_ms, split_lock): how it coalesces what it
	// publishes. They bound its TX capacity (TxCapacity), never what the
	// gateway sends to it.
	TxBatch   bool
	TxFlush   time.Duration
	SplitLock bool
	// Lease is the device's transport lease (Z_TRANSPORT_LEASE,
	// zenoh.link.lease_ms); KeepAlive = Lease / Z_TRANSPORT_LEASE_EXPIRE_FACTOR.
	Lease     time.Duration
	KeepAlive time.Duration
}

// CapacityOf derives the capacity model from a resolved profile.
func CapacityOf(r *Resolved) Capacity {
	c := Capacity{
		BatchSize:      int(r.Int(BatchUnicastSize)),
		Fragmentation:  r.Bool(Fragmentation),
		SlotBytes:      int(r.Int(SubscriberBufferSize)),
		LargeSlotBytes: int(r.Int(SubscriberLargeSize)),
		LargeSlots:     int(r.Int(MaxLargeSubscribers)),
		RingDepth:      int(r.Int(SubscriberRingDepth)),
		SocketWindow:   ms(r.Int(SocketTimeoutMs)),
		PerFdTxCeiling: r.Cap(CapPerFdTxCeiling),
		TxBatch:        r.Bool(TxBatch),
		TxFlush:        ms(r.Int(TxFlushMs)),
		SplitLock:      r.Bool(TxSplitLock),
		Lease:          ms(r.Int(LeaseMs)),
	}
	c.KeepAlive = c.Lease / time.Duration(r.Int(LeaseExpireFactor))
	if c.Fragmentation {
		c.MaxMessageBytes = int(r.Int(FragMaxSize))
	} else {
		c.MaxMessageBytes = c.BatchSize - StreamPrefixBytes - FrameHeaderBytes
	}
	return c
}

// MaxSampleBytes is the largest message that reaches a subscriber of the
// device: min(MaxMessageBytes, slot), with the large slot when large is true
// and the device has large slots (anchors.md §2.6 second bullet).
func (c Capacity) MaxSampleBytes(large bool) int {
	slot := c.SlotBytes
	if large && c.LargeSlots > 0 {
		slot = max(slot, c.LargeSlotBytes)
	}
	return min(c.MaxMessageBytes, slot)
}

// SamplesPerBurst is the most samples of one subscriber the device takes
// in one burst of callbacks (one batch, or back-to-back batches the read
// task drains before the application runs): its subscriber ring depth,
// beyond which the newest are dropped (anchors.md §2.6, fourth bullet).
func (c Capacity) SamplesPerBurst() int { return max(c.RingDepth, 1) }

// TxCapacity is the most samples per second of size bytes the device can
// publish with its own TX knobs (nano-ros tx-tuning.md's table): ~0.9 sends
// per socket window on a per-fd-lock platform, each send one sample
// untuned or a batch of them with TX_BATCH (more with split lock). 0 means
// the window does not cap the device's sends (no per-fd lock).
func (c Capacity) TxCapacity(size int) float64 {
	if !c.PerFdTxCeiling || c.SocketWindow <= 0 {
		return 0
	}
	return sendRate(c.SocketWindow) * txSamplesPerSend(c.BatchSize, size, c.TxBatch, c.SplitLock)
}

// txSamplesPerSend is how many samples of size bytes one device send
// carries: a batch of them with TX batching (more with split lock, which
// appends while a send is in progress), else one sample at most (less than
// one when it needs several fragments).
func txSamplesPerSend(batchSize, size int, batched, split bool) float64 {
	per := samplesPerSend(batchSize, float64(size))
	if !batched {
		return math.Min(1, per)
	}
	if split {
		per *= splitLockGain
	}
	return per
}

// sendRate is the socket sends per second a per-fd-locked device achieves
// with a receive window w.
func sendRate(w time.Duration) float64 {
	return perFdSendEfficiency / w.Seconds()
}

func ms(v int64) time.Duration { return time.Duration(v) * time.Millisecond }

// samplesPerSend is how many samples of size bytes one send of a batch of
// batchSize carries; below 1 when a sample needs several fragments.
func samplesPerSend(batchSize int, size float64) float64 {
	content := float64(batchSize - StreamPrefixBytes - perMessageBytes)
	if size+perMessageBytes <= content {
		return content / (size + perMessageBytes)
	}
	return 1 / math.Ceil((size+perMessageBytes)/content)
}
