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
	// DefaultMaxMessageSize bounds one network message, in bytes: what Send
	// and SendEncoded accept and what a fragment train may reassemble to on
	// receive (zenohd's transport max message size idea; Rust defaults to
	// 1 GiB, pico's GNUmakefile Z_FRAG_MAX_SIZE is 300000). 8 MiB holds a
	// 2 MB camera image (or a 1920×1080 RGB frame, 6.2 MB) with room for
	// attachments, while one hostile peer's reassembly stays a few MiB.
	DefaultMaxMessageSize = 8 << 20
	// DefaultMaxReassembly is the former name of DefaultMaxMessageSize.
	//
	// Deprecated: use DefaultMaxMessageSize.
	DefaultMaxReassembly = DefaultMaxMessageSize
	// DefaultOpenTimeout bounds the INIT/OPEN exchange (Rust open/accept
	// timeout, pico Z_TRANSPORT_CONNECT_TIMEOUT: 10 s).
	DefaultOpenTimeout = 10 * time.Second
	// DefaultMaxHandshakes bounds the links a Listener holds in INIT/OPEN at
	// a time (Rust: transport/unicast/accept_pending = 100).
	DefaultMaxHandshakes = 100
	// DefaultTxQueue bounds each TX priority queue, in messages.
	DefaultTxQueue = 1024
	// DefaultTxQueueBatches sizes each TX priority queue's byte bound when
	// Config.TxQueueBytes is 0: this many negotiated batches (16 × 65535 ≈
	// 1 MiB on TCP, 32 KiB towards a batch-2048 pico). Rust sizes its
	// per-priority queues in batches too (transport/link/tx/queue/size: 1
	// to 4 batches of 64 KiB, each batch a stage of its pipeline); we queue
	// whole messages, so a few more batches keep a 200 kB-at-50 Hz stream
	// from dropping on a single hiccup while bounding the wait behind the
	// queue to 16 batch times.
	DefaultTxQueueBatches = 16
	// DefaultTCPNotSentLowat is the TCP_NOTSENT_LOWAT set on TCP links, in
	// bytes: the kernel holds at most about this many unsent bytes, so the
	// TX scheduler, not the socket buffer, decides what goes next. 16 KiB is
	// 1.3 ms at 100 Mbit/s, a quarter of a 64 KiB batch, and large enough
	// that a loopback or LAN link still runs at full speed (Linux's own
	// suggestion for latency-sensitive senders is 16 KiB to 128 KiB).
	DefaultTCPNotSentLowat = 16 << 10
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
	// MaxMessageSize bounds one network message, in bytes (its encoding):
	// Send and SendEncoded refuse a larger one (ErrTooLarge, counted
	// too_large) and a fragment train that grows beyond it on receive is
	// dropped (counted fragment_oversize). 0 = MaxReassembly if set, else
	// DefaultMaxMessageSize (8 MiB).
	MaxMessageSize int
	// MaxReassembly is the former name of MaxMessageSize; used only when
	// MaxMessageSize is 0. After defaults both hold the same value.
	//
	// Deprecated: use MaxMessageSize.
	MaxReassembly int
	// OpenTimeout bounds the INIT/OPEN handshake. 0 = DefaultOpenTimeout.
	OpenTimeout time.Duration
	// MaxHandshakes bounds the links a Listener holds in INIT/OPEN at a
	// time; a connection beyond it is closed at once and counted
	// (handshake_failures_total{reason="refused"}). 0 = DefaultMaxHandshakes.
	MaxHandshakes int
	// AdmitRate paces the TCP connections a Listener admits, in sessions
	// per second, with a bucket of AdmitBurst (0 = DefaultAdmitBurst): a
	// connection beyond it waits in the accept loop and is counted
	// (admission_deferred_total; admission.go). 0 = not paced.
	AdmitRate  float64
	AdmitBurst int
	// HandshakeWait: a TCP connection that finds MaxHandshakes links in
	// INIT/OPEN waits in the accept loop up to this long for one to finish
	// (counted admission_deferred_total{reason="handshakes"}) before it is
	// refused. 0 = refused at once.
	HandshakeWait time.Duration
	// TxQueue bounds each of the 8 TX priority queues, in messages.
	// 0 = DefaultTxQueue.
	TxQueue int
	// TxQueueBytes bounds each of the 8 TX priority queues, in bytes of
	// encoded messages. A message up to TxQueueBytes is admitted when it
	// fits under both bounds; one larger message (up to MaxMessageSize) may
	// wait beside them in a slot of its own, so a queue never holds more
	// than TxQueueBytes + MaxMessageSize bytes and a large message never
	// blocks the small ones behind it. Once the writer takes a message it
	// no longer counts here (a message being fragmented is one of at most
	// two trains per session). 0 = DefaultTxQueueBatches × the negotiated
	// batch size.
	TxQueueBytes int
	// TCPNotSentLowat is the TCP_NOTSENT_LOWAT of TCP links, in bytes.
	// 0 = DefaultTCPNotSentLowat; negative = leave the kernel default (no
	// limit: up to the whole send buffer may wait in the kernel, where
	// priority no longer applies).
	TCPNotSentLowat int
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
	// TLS configures tls/ endpoints (tls.go); an endpoint's #config keys
	// override it. nil: a tls/ Listen fails (no certificate), a tls/ Dial
	// trusts the system roots only.
	TLS *TLSConfig
	// UsrPwd configures user/password authentication (usrpwd.go); nil = off.
	UsrPwd *UsrPwdConfig
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
	c.MaxMessageSize = c.MessageSizeLimit()
	c.MaxReassembly = c.MaxMessageSize
	if c.OpenTimeout <= 0 {
		c.OpenTimeout = DefaultOpenTimeout
	}
	if c.MaxHandshakes <= 0 {
		c.MaxHandshakes = DefaultMaxHandshakes
	}
	if c.TxQueue <= 0 {
		c.TxQueue = DefaultTxQueue
	}
	if c.TCPNotSentLowat == 0 {
		c.TCPNotSentLowat = DefaultTCPNotSentLowat
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

// MessageSizeLimit is the effective MaxMessageSize, in bytes: MaxMessageSize,
// else the deprecated MaxReassembly, else DefaultMaxMessageSize. The Go
// client API (zenohpath) uses it to refuse a local Put above the limit.
func (c Config) MessageSizeLimit() int {
	switch {
	case c.MaxMessageSize > 0:
		return c.MaxMessageSize
	case c.MaxReassembly > 0:
		return c.MaxReassembly
	}
	return DefaultMaxMessageSize
}

// SendOptions says how Send treats one message.
type SendOptions struct {
	// Reliable selects the reliable channel (FRAME R=1); else best effort.
	Reliable bool
	// Express: the message leaves at once in its own batch, not coalesced.
	Express bool
	// Priority selects the TX queue (wire.PriorityControl 0 … 7
	// Background; values above 7 count as 7): the writer always serves the
	// highest non-empty priority, so a message waits at most about one
	// batch behind lower-priority bytes (see docs/transport.md). It is a
	// local scheduling decision only: no QoS lanes are negotiated (§4.6),
	// so nothing about it goes on the wire.
	Priority wire.Priority
	// Block: when the priority's TX queue is full, wait up to
	// Config.BlockTimeout for room (congestion control BLOCK, then
	// ErrBlockTimeout); else wait at most Config.WaitBeforeDrop and drop
	// (DROP, ErrQueueFull).
	Block bool
	// Inline (SendEncoded, SendShared): the caller queues these bytes on
	// this one session only, so an idle session may write them from the
	// caller's goroutine (the inline write, inline.go) as Send does. Leave
	// it false for a fan-out to many sessions: one caller doing all their
	// write(2)s in a row delivered 77 % instead of 100 % in fleetbench
	// (3 000 sessions × 30 Hz), where N writer goroutines spread them.
	Inline bool
}
