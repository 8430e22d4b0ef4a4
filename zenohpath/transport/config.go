package transport

import (
	"log/slog"
	"time"

	"github.com/picobridge/picobridge/zenohpath/wire"
)

// Defaults (zenoh-wire.md §6, §14.2). Each applies when the Config field is zero.
const (
	// DefaultBatchSize is the batch size we propose/accept on TCP, in bytes
	// including the 2-byte length prefix (Rust and the pico GNUmakefile
	// build: 65535).
	DefaultBatchSize = 65535
	// DefaultUDPBatchSize caps the batch on UDP links, in bytes (Rust's UDP
	// link MTU default; avoids IP fragmentation of huge datagrams).
	DefaultUDPBatchSize = 8192
	// DefaultLease is the lease we announce in OPEN (Z_TRANSPORT_LEASE and
	// Rust transport/link/tx/lease: 10 s).
	DefaultLease = 10 * time.Second
	// MinLease and MaxLease bound Config.Lease: a positive value outside
	// them is clamped (a lease of a few ms makes the keep-alive timer spin
	// and peers expire us between two scheduler ticks). The floor is low
	// for tests; `picobridge router --lease` enforces 1 s.
	MinLease = 100 * time.Millisecond
	MaxLease = time.Hour
	// DefaultKeepAliveDivisor: KEEP_ALIVE after lease/4 of TX silence (Rust
	// keep_alive = 4; pico uses 3, §6).
	DefaultKeepAliveDivisor = 4
	// DefaultMaxReassembly bounds a reassembled message, in bytes (pico's
	// GNUmakefile Z_FRAG_MAX_SIZE = 300000; Rust defaults to 1 GiB).
	DefaultMaxReassembly = 1 << 20
	// DefaultOpenTimeout bounds the INIT/OPEN exchange (Rust open/accept
	// timeout, pico Z_TRANSPORT_CONNECT_TIMEOUT: 10 s).
	DefaultOpenTimeout = 10 * time.Second
	// DefaultMaxHandshakes bounds the links a Listener holds in INIT/OPEN at
	// a time (Rust: transport/unicast/accept_pending = 100).
	DefaultMaxHandshakes = 100
	// DefaultTxQueue is the TX queue depth, in messages.
	DefaultTxQueue = 1024
	// DefaultBlockTimeout bounds how long Send with Block waits for room.
	DefaultBlockTimeout = time.Second
	// DefaultWaitBeforeDrop is how long Send without Block waits for room in
	// a full TX queue before it drops the message: 1 ms, the Rust default
	// (transport/link/tx/queue/congestion_control/drop/wait_before_drop =
	// 1000 µs), so a short burst is absorbed as zenohd absorbs it while a
	// stuck peer still costs the sender at most 1 ms per message.
	DefaultWaitBeforeDrop = time.Millisecond
)

// Config configures a Listener or a dialled Session. The zero value of each
// field selects its default; ZID is required.
type Config struct {
	// ZID is our Zenoh ID (1..16 bytes on the wire). Required.
	ZID wire.ZID
	// WhatAmI is our role announced in INIT: WhatAmIRouter (the zero value)
	// for a router, WhatAmIClient or WhatAmIPeer when dialling as such.
	WhatAmI wire.WhatAmI
	// BatchSize is the largest batch we accept and propose, in bytes, the
	// 2-byte stream prefix included (§3.1). 0 = DefaultBatchSize. The
	// negotiated size is the smaller of both sides'; below MinBatchSize
	// the handshake fails.
	BatchSize uint16
	// Resolution is the resolution byte we propose/accept (bits 0-1 SN,
	// 2-3 request id). 0 = wire.DefaultResolution (32/32 bit, 28-bit SN mask).
	Resolution uint8
	// Lease is what we announce in OPEN: the peer closes us after this long
	// without receiving anything. 0 (or negative) = DefaultLease; other
	// values are clamped to [MinLease, MaxLease].
	Lease time.Duration
	// KeepAliveDivisor: a KEEP_ALIVE goes out after min(Lease, peer lease) /
	// KeepAliveDivisor without any TX. 0 = DefaultKeepAliveDivisor.
	KeepAliveDivisor int
	// FlushPeriod is how long a non-express message may wait in a partly
	// filled batch. 0 = no waiting: the writer flushes as soon as its queue
	// is empty (messages queued meanwhile still share a batch).
	FlushPeriod time.Duration
	// MaxReassembly bounds a reassembled (fragmented) message, in bytes, on
	// receive; a larger train is dropped and counted. It also bounds what
	// Send accepts. 0 = DefaultMaxReassembly.
	MaxReassembly int
	// OpenTimeout bounds the INIT/OPEN handshake. 0 = DefaultOpenTimeout.
	OpenTimeout time.Duration
	// MaxHandshakes bounds the links a Listener holds in INIT/OPEN at a
	// time; a connection beyond it is closed at once and counted
	// (handshake_failures_total{reason="refused"}). 0 = DefaultMaxHandshakes.
	MaxHandshakes int
	// TxQueue is the TX queue depth in messages. 0 = DefaultTxQueue.
	TxQueue int
	// BlockTimeout bounds Send with SendOptions.Block. 0 = DefaultBlockTimeout.
	BlockTimeout time.Duration
	// WaitBeforeDrop bounds how long Send without SendOptions.Block waits
	// for room in a full TX queue before dropping. 0 = DefaultWaitBeforeDrop;
	// negative = drop at once.
	WaitBeforeDrop time.Duration
	// NoPatch disables the fragment First/Drop markers (INIT ext Patch=1).
	NoPatch bool
	// Logger receives session logs (scoped with session id, zid, remote
	// address). nil = discard.
	Logger *slog.Logger
	// Metrics is optional (nil = none); see NewMetrics.
	Metrics *Metrics
}

func (c Config) withDefaults() Config {
	if c.BatchSize == 0 {
		c.BatchSize = DefaultBatchSize
	}
	c.BatchSize = max(c.BatchSize, MinBatchSize)
	if c.Resolution == 0 {
		c.Resolution = wire.DefaultResolution
	}
	if c.Lease <= 0 {
		c.Lease = DefaultLease
	}
	c.Lease = min(max(c.Lease, MinLease), MaxLease)
	if c.KeepAliveDivisor <= 0 {
		c.KeepAliveDivisor = DefaultKeepAliveDivisor
	}
	if c.MaxReassembly <= 0 {
		c.MaxReassembly = DefaultMaxReassembly
	}
	if c.OpenTimeout <= 0 {
		c.OpenTimeout = DefaultOpenTimeout
	}
	if c.MaxHandshakes <= 0 {
		c.MaxHandshakes = DefaultMaxHandshakes
	}
	if c.TxQueue <= 0 {
		c.TxQueue = DefaultTxQueue
	}
	if c.WaitBeforeDrop == 0 {
		c.WaitBeforeDrop = DefaultWaitBeforeDrop
	}
	if c.BlockTimeout <= 0 {
		c.BlockTimeout = DefaultBlockTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// SendOptions says how Send treats one message.
type SendOptions struct {
	// Reliable selects the reliable channel (FRAME R=1); else best effort.
	Reliable bool
	// Express: the message leaves at once in its own batch, not coalesced.
	Express bool
	// Priority is advisory (no QoS lanes are negotiated, §4.6); kept for
	// the API and the future QoS support.
	Priority wire.Priority
	// Block: when the TX queue is full, wait up to Config.BlockTimeout for
	// room (congestion control BLOCK); else drop at once (DROP).
	Block bool
}
