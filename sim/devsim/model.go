package devsim

import (
	"fmt"
	"sort"
	"time"

	"github.com/picobridge/picobridge/firmware"
	"github.com/picobridge/picobridge/knobs"
)

// Model is what a simulated device obeys, derived from its resolved knobs
// (docs/devsim.md has each rule and its source). Durations are wall time;
// sizes are bytes.
type Model struct {
	// BatchSize is zenoh.wire.batch_unicast_size (Z_BATCH_UNICAST_SIZE): the
	// batch the device proposes in INIT, its receive buffer and its TX batch.
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
	// SocketWindow is zenoh.link.socket_timeout_ms (Z_CONFIG_SOCKET_TIMEOUT):
	// the read task's recv timeout. With PerFdLock it caps what the device
	// SENDS (fdLock); it never paces what the device receives.
	SocketWindow time.Duration `json:"socket_timeout_ns"`
	// PerFdLock is the capability per_fd_tx_ceiling (Zephyr zsock): a send
	// waits until the read task's recv returns (data or window).
	PerFdLock bool `json:"per_fd_tx_ceiling"`
	// SpinPeriod is the application's executor spin period: 0 = woken on
	// arrival (nano-ros signal_executor_wake from the subscriber callback),
	// else the application takes samples every SpinPeriod (a timer-paced
	// spin_once, the application's choice; DeviceConfig.Spin).
	SpinPeriod time.Duration `json:"app_spin_ns"`
	// TxBatch, FlushInterval, SplitLock: zenoh.tx.batch, flush_ms,
	// split_lock (txPath). SplitLock only with TxBatch.
	TxBatch       bool          `json:"tx_batch"`
	FlushInterval time.Duration `json:"flush_interval_ns"`
	SplitLock     bool          `json:"split_lock"`
	// FlushThread is the capability flush_thread; without it a batch leaves
	// when the application spins (every SpinPeriod, or every FlushInterval
	// when the application is woken on arrival).
	FlushThread bool `json:"flush_thread"`
	// Lease is zenoh.link.lease_ms, announced in OPEN.
	Lease time.Duration `json:"lease_ns"`
	// Capacity is the gateway's view of the same knobs (knobs.CapacityOf);
	// the simulator reads only its receive-side fields.
	Capacity knobs.Capacity `json:"-"`
}

// ModelOf builds the model from a resolved profile; spin is the
// application's spin period (0: woken on arrival).
func ModelOf(r *knobs.Resolved, spin time.Duration) Model {
	c := knobs.CapacityOf(r)
	ms := func(n int64) time.Duration { return time.Duration(n) * time.Millisecond }
	m := Model{
		BatchSize:      c.BatchSize,
		Fragmentation:  c.Fragmentation,
		FragMaxSize:    c.MaxMessageBytes,
		RingDepth:      c.RingDepth,
		SlotBytes:      c.SlotBytes,
		LargeSlotBytes: c.LargeSlotBytes,
		LargeSlots:     c.LargeSlots,
		SocketWindow:   ms(r.Int(knobs.SocketTimeoutMs)),
		PerFdLock:      r.Cap(knobs.CapPerFdTxCeiling),
		SpinPeriod:     max(spin, 0),
		TxBatch:        r.Bool(knobs.TxBatch),
		FlushInterval:  ms(r.Int(knobs.TxFlushMs)),
		SplitLock:      r.Bool(knobs.TxSplitLock) && r.Bool(knobs.TxBatch),
		FlushThread:    r.Cap(knobs.CapFlushThread),
		Lease:          c.Lease,
		Capacity:       c,
	}
	if m.FlushInterval <= 0 {
		m.FlushInterval = 50 * time.Millisecond // zpico.c's fallback
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
