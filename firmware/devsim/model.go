package devsim

import (
	"fmt"
	"sort"
	"time"

	"github.com/picobridge/picobridge/firmware"
	"github.com/picobridge/picobridge/knobs"
)

// SendEfficiency is the fraction of socket windows in which a device with a
// per-socket lock manages one send (nano-ros tx-tuning.md: ~9 msg/s at a
// 100 ms window on Zephyr native_sim; knobs.Capacity.ExpressRateCeiling uses
// the same 0.9). The simulated socket window cycle is SocketWindow /
// SendEfficiency.
const SendEfficiency = 0.9

// Model is what a simulated device obeys, derived from its resolved knobs
// (docs/devsim.md has each rule and its source). Durations are wall time;
// sizes are bytes.
type Model struct {
	// BatchSize is zenoh.wire.batch_unicast_size (Z_BATCH_UNICAST_SIZE): the
	// batch the device proposes in INIT and its receive buffer.
	BatchSize int `json:"batch_unicast_size"`
	// Fragmentation is zenoh.wire.fragmentation (Z_FEATURE_FRAGMENTATION).
	Fragmentation bool `json:"fragmentation"`
	// FragMaxSize is the largest message the device reassembles
	// (zenoh.wire.frag_max_size, Z_FRAG_MAX_SIZE); a larger fragmented
	// message is dropped (counted oversize_drops). Without fragmentation
	// it is the content of one batch.
	FragMaxSize int `json:"frag_max_size"`
	// RingDepth is zenoh.limits.subscriber_ring_depth: slots per
	// subscriber ring; a full ring drops the newest sample.
	RingDepth int `json:"subscriber_ring_depth"`
	// SlotBytes / LargeSlotBytes / LargeSlots: subscriber slot classes
	// (zenoh.limits.subscriber_buffer_size, subscriber_large_size,
	// max_large_subscribers); a payload larger than its subscriber's slot
	// is dropped (counted slot_drops).
	SlotBytes      int `json:"subscriber_buffer_size"`
	LargeSlotBytes int `json:"subscriber_large_size"`
	LargeSlots     int `json:"max_large_subscribers"`
	// SocketWindow is zenoh.link.socket_timeout_ms (Z_CONFIG_SOCKET_TIMEOUT).
	SocketWindow time.Duration `json:"socket_timeout_ns"`
	// PerFdLock is the capability per_fd_tx_ceiling (Zephyr zsock): send
	// and receive share one lock per socket, modelled as one receive and
	// one send per WindowCycle.
	PerFdLock bool `json:"per_fd_tx_ceiling"`
	// WindowCycle is SocketWindow / SendEfficiency with PerFdLock, else 0.
	WindowCycle time.Duration `json:"window_cycle_ns"`
	// DrainInterval is how often the application empties its subscriber
	// rings: knobs.Capacity.DrainInterval (the socket window) unless the
	// device configuration overrides it.
	DrainInterval time.Duration `json:"drain_interval_ns"`
	// TxBatch, FlushInterval, SplitLock: zenoh.tx.batch, flush_ms,
	// split_lock. With TxBatch non-express samples are coalesced and sent
	// once per FlushInterval.
	TxBatch       bool          `json:"tx_batch"`
	FlushInterval time.Duration `json:"flush_interval_ns"`
	SplitLock     bool          `json:"split_lock"`
	// FlushThread is the capability flush_thread; without it a batch leaves
	// only when the application spins (every DrainInterval).
	FlushThread bool `json:"flush_thread"`
	// Lease is zenoh.link.lease_ms, announced in OPEN.
	Lease time.Duration `json:"lease_ns"`
	// Capacity is the gateway's view of the same knobs (knobs.CapacityOf).
	Capacity knobs.Capacity `json:"-"`
}

// ExpectedRxBatchRate is the most batches per second the model lets the
// device read: 1 / WindowCycle with a per-socket lock (= the knobs'
// ExpressRateCeiling), 0 (unbounded) otherwise.
func (m Model) ExpectedRxBatchRate() float64 {
	if m.WindowCycle <= 0 {
		return 0
	}
	return 1 / m.WindowCycle.Seconds()
}

// ModelOf builds the model from a resolved profile; drain, when > 0,
// overrides the application's drain interval.
func ModelOf(r *knobs.Resolved, drain time.Duration) Model {
	c := knobs.CapacityOf(r)
	m := Model{
		BatchSize:      c.BatchSize,
		Fragmentation:  c.Fragmentation,
		FragMaxSize:    c.MaxMessageBytes,
		RingDepth:      c.RingDepth,
		SlotBytes:      c.SlotBytes,
		LargeSlotBytes: c.LargeSlotBytes,
		LargeSlots:     c.LargeSlots,
		SocketWindow:   c.SocketWindow,
		PerFdLock:      c.PerFdTxCeiling,
		DrainInterval:  c.SocketWindow,
		TxBatch:        r.Bool(knobs.TxBatch),
		FlushInterval:  time.Duration(r.Int(knobs.TxFlushMs)) * time.Millisecond,
		SplitLock:      r.Bool(knobs.TxSplitLock),
		FlushThread:    r.Cap(knobs.CapFlushThread),
		Lease:          c.Lease,
		Capacity:       c,
	}
	if m.PerFdLock {
		m.WindowCycle = time.Duration(float64(m.SocketWindow) / SendEfficiency)
	}
	if drain > 0 {
		m.DrainInterval = drain
	}
	return m
}

// Resolve resolves a device's knobs through the embedded catalog
// (firmware.Catalog): builtin < platform < board < env, env being the
// device's overrides (name → value, the spellings of docs/knobs.md).
func Resolve(platform, board string, env map[string]string, origin string) (*knobs.Resolved, error) {
	cat, err := firmware.Catalog()
	if err != nil {
		return nil, err
	}
	var e *knobs.Env
	if len(env) > 0 {
		names := make([]string, 0, len(env))
		for k := range env {
			names = append(names, k)
		}
		sort.Strings(names)
		e = &knobs.Env{}
		for i, k := range names {
			e.Vars = append(e.Vars, knobs.EnvVar{Name: k, Value: env[k], File: origin, Line: i + 1})
		}
	}
	r, err := cat.Resolve(knobs.Options{Platform: platform, Board: board, Env: e})
	if err != nil {
		return nil, fmt.Errorf("devsim: knobs of platform %q board %q: %w", platform, board, err)
	}
	return r, nil
}
