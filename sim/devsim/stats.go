package devsim

import (
	"math"
	"math/bits"
	"time"
)

// DeviceStats is a JSON-able snapshot of one device.
type DeviceStats struct {
	Name     string `json:"name"`
	Platform string `json:"platform"`
	Board    string `json:"board,omitempty"`
	// Connected says whether a session is open now; Connects counts
	// sessions opened, Reconnects those after the first.
	Connected  bool   `json:"connected"`
	Connects   uint64 `json:"connects"`
	Reconnects uint64 `json:"reconnects"`
	LastError  string `json:"last_error,omitempty"`
	// Model is what the device obeys.
	Model Model `json:"model"`
	// Subscriptions and Publications are keyed by the configured key.
	Subscriptions map[string]SubStats `json:"subscriptions"`
	Publications  map[string]PubStats `json:"publications"`
	// OversizeDropsUnattributed counts reassemblies the transport dropped
	// before the key was known (beyond its hard bound).
	OversizeDropsUnattributed uint64 `json:"oversize_drops_unattributed"`
	// ProbePings counts pings received, ProbeResponses pongs sent.
	ProbePings     uint64 `json:"probe_pings"`
	ProbeResponses uint64 `json:"probe_responses"`
	// RxBatches / TxBatches are link batches over all sessions.
	RxBatches uint64 `json:"rx_batches"`
	TxBatches uint64 `json:"tx_batches"`
	// Socket counts the per-fd lock model (per_fd_tx_ceiling only): recvs
	// of the read task that ended by timeout or with data, sends that
	// waited for the socket and sends that got it.
	Socket fdStats `json:"socket"`
	// TransportDrops are the transport's drop counters of the current
	// session, by reason.
	TransportDrops map[string]uint64 `json:"transport_drops,omitempty"`
	// Uptime is since Start.
	Uptime time.Duration `json:"uptime_ns"`
}

// SubStats are the counters of one subscriber.
type SubStats struct {
	// Received: samples that reached the subscriber (before the ring).
	Received uint64 `json:"received"`
	// Delivered: samples the application took from the ring.
	Delivered uint64 `json:"delivered"`
	// RingFullDrops: samples dropped because the ring was full (drop-newest;
	// zenoh-pico drops silently, the simulator counts).
	RingFullDrops uint64 `json:"ring_full_drops"`
	// OversizeDrops: messages larger than frag_max_size (reassembled from
	// fragments) that the device dropped.
	OversizeDrops uint64 `json:"oversize_drops"`
	// SlotDrops: payloads larger than the subscriber's slot.
	SlotDrops uint64 `json:"slot_drops"`
	// OutOfOrder: samples whose sequence number was not above the last one
	// seen from the same source; Gaps: sequence numbers skipped.
	OutOfOrder uint64 `json:"out_of_order"`
	Gaps       uint64 `json:"gaps"`
	// Latency is delivery time − ROS header stamp (ms), for delivered
	// samples that carry a stamp.
	Latency LatencyStats `json:"latency"`
	// DeviceReceive is the device's own share of it (ms): from the read
	// task's callback (the batch had just been read from the socket) to the
	// application taking the sample; ≈ 0 when woken on arrival, up to the
	// spin period otherwise.
	DeviceReceive LatencyStats `json:"device_receive"`
	// RingSlot is the slot size in bytes this subscriber got.
	RingSlot int `json:"ring_slot_bytes"`
}

// PubStats are the counters of one publisher.
type PubStats struct {
	// Attempts: samples the application tried to publish.
	Attempts uint64 `json:"attempts"`
	// Sent: samples handed to the link.
	Sent uint64 `json:"sent"`
	// Filtered: attempts while the write filter was closed (no matching
	// subscriber declared by the router, or not connected); zenoh-pico
	// sends nothing and reports success.
	Filtered uint64 `json:"filtered"`
	// TxDrops: samples lost in the device's TX path (queue full).
	TxDrops uint64 `json:"tx_drops"`
	// Matched: the write filter is open.
	Matched bool `json:"matched"`
}

// LatencyStats summarizes a latency histogram, milliseconds.
type LatencyStats struct {
	Count uint64  `json:"count"`
	P50   float64 `json:"p50_ms"`
	P95   float64 `json:"p95_ms"`
	P99   float64 `json:"p99_ms"`
	Max   float64 `json:"max_ms"`
}

// histogram is a log-linear histogram of durations in microseconds:
// 32 sub-buckets per power of two (≤ 3 % relative error), constant memory.
type histogram struct {
	counts [64 * histSub]uint64
	n      uint64
	max    time.Duration
}

const histSub = 32

func histIndex(us uint64) int {
	if us < histSub {
		return int(us)
	}
	e := bits.Len64(us) - 1 // ≥ 5
	sub := (us >> (e - 5)) & (histSub - 1)
	return (e-4)*histSub + int(sub)
}

// histValue is the midpoint of bucket i, microseconds.
func histValue(i int) float64 {
	if i < histSub {
		return float64(i)
	}
	e := i/histSub + 4
	sub := uint64(i % histSub)
	lo := (histSub + sub) << (e - 5)
	return float64(lo) + float64(uint64(1)<<(e-5))/2
}

func (h *histogram) add(d time.Duration) {
	if d < 0 {
		d = 0
	}
	us := uint64(d / time.Microsecond)
	i := histIndex(us)
	if i >= len(h.counts) {
		i = len(h.counts) - 1
	}
	h.counts[i]++
	h.n++
	h.max = max(h.max, d)
}

func (h *histogram) quantile(q float64) float64 {
	if h.n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(h.n)))
	rank = max(rank, 1)
	var c uint64
	for i, v := range h.counts {
		c += v
		if c >= rank {
			return histValue(i)
		}
	}
	return float64(h.max / time.Microsecond)
}

func (h *histogram) stats() LatencyStats {
	ms := func(us float64) float64 { return math.Round(us) / 1000 }
	return LatencyStats{
		Count: h.n,
		P50:   ms(h.quantile(0.50)),
		P95:   ms(h.quantile(0.95)),
		P99:   ms(h.quantile(0.99)),
		Max:   float64(h.max.Microseconds()) / 1000,
	}
}

// FleetStats aggregates the devices of a fleet.
type FleetStats struct {
	Devices []DeviceStats `json:"devices"`
	Totals  Totals        `json:"totals"`
}

// Totals sums every device's counters.
type Totals struct {
	Devices        int    `json:"devices"`
	Connected      int    `json:"connected"`
	Received       uint64 `json:"received"`
	Delivered      uint64 `json:"delivered"`
	RingFullDrops  uint64 `json:"ring_full_drops"`
	OversizeDrops  uint64 `json:"oversize_drops"`
	SlotDrops      uint64 `json:"slot_drops"`
	OutOfOrder     uint64 `json:"out_of_order"`
	Gaps           uint64 `json:"gaps"`
	Sent           uint64 `json:"sent"`
	Filtered       uint64 `json:"filtered"`
	TxDrops        uint64 `json:"tx_drops"`
	ProbeResponses uint64 `json:"probe_responses"`
	Reconnects     uint64 `json:"reconnects"`
}

func (t *Totals) add(d DeviceStats) {
	t.Devices++
	if d.Connected {
		t.Connected++
	}
	for _, s := range d.Subscriptions {
		t.Received += s.Received
		t.Delivered += s.Delivered
		t.RingFullDrops += s.RingFullDrops
		t.OversizeDrops += s.OversizeDrops
		t.SlotDrops += s.SlotDrops
		t.OutOfOrder += s.OutOfOrder
		t.Gaps += s.Gaps
	}
	t.OversizeDrops += d.OversizeDropsUnattributed
	for _, p := range d.Publications {
		t.Sent += p.Sent
		t.Filtered += p.Filtered
		t.TxDrops += p.TxDrops
	}
	t.ProbeResponses += d.ProbeResponses
	t.Reconnects += d.Reconnects
}
