package linkemu

import (
	"fmt"
	"time"
)

// Framing says how the TCP proxy cuts a byte stream into packets.
type Framing uint8

const (
	// FramingZenoh treats each Zenoh batch as one packet: a little-endian
	// u16 length followed by that many bytes (zenoh-wire.md §3.1, stream
	// links). A batch is held until it is complete, as the receiver would
	// wait for it anyway; for other protocols use FramingChunk. The
	// default.
	FramingZenoh Framing = iota
	// FramingChunk cuts what each read returns into packets of at most
	// Config.ChunkSize bytes, for streams whose framing is unknown.
	FramingChunk
)

func (f Framing) String() string {
	if f == FramingChunk {
		return "chunk"
	}
	return "zenoh"
}

// ParseFraming accepts "zenoh" and "chunk".
func ParseFraming(s string) (Framing, error) {
	switch s {
	case "zenoh":
		return FramingZenoh, nil
	case "chunk":
		return FramingChunk, nil
	}
	return 0, fmt.Errorf("unknown framing %q (allowed: zenoh, chunk)", s)
}

// Config configures a proxy. The zero Config is a clean link with seed 0.
type Config struct {
	// Profile is applied from the start; the zero Profile is Clean.
	Profile Profile
	// Seed seeds every random source (per direction: one PCG stream for
	// the loss chain, one for delays). Same seed, same traffic: same
	// decisions.
	Seed uint64
	// QueueBytes bounds, per direction, the bytes waiting in the bandwidth
	// queue (UDP: beyond it datagrams are dropped as queue_full) and the
	// bytes held per TCP connection and direction (beyond it the proxy
	// stops reading, which pushes back on the sender like a full window).
	// Default DefaultQueueBytes.
	QueueBytes int
	// RTO is the TCP retransmission model.
	RTO RTOConfig
	// Framing is how TCP streams are cut into packets.
	Framing Framing
	// ChunkSize is the largest packet of FramingChunk, in bytes. Default
	// DefaultChunkSize.
	ChunkSize int
	// UDPReorder lets a datagram with a shorter drawn delay overtake an
	// earlier one (netem's behaviour with jitter and no rate). By default
	// datagrams keep their order: one is released no earlier than the one
	// before it, as netem does when a rate is set (netem_enqueue takes the
	// last queued packet's send time as its reference), which is the case
	// of every impaired profile.
	UDPReorder bool
	// UDPIdle ends a UDP client mapping after this long without traffic in
	// either direction. Default DefaultUDPIdle.
	UDPIdle time.Duration
	// DialTimeout bounds connecting to the upstream. Default
	// DefaultDialTimeout.
	DialTimeout time.Duration
	// Metrics, if not nil, receives the proxy's counters.
	Metrics *Metrics
}

// Defaults of Config.
const (
	// DefaultQueueBytes is 1 MiB, about netem's default limit of 1000
	// packets of a 1000-odd-byte MTU; 1.7 s of backlog at 5000 kbit/s.
	DefaultQueueBytes = 1 << 20
	// DefaultChunkSize is 1448 bytes, the TCP MSS of a 1500-byte MTU with
	// timestamps, so a chunk is what one segment would carry.
	DefaultChunkSize = 1448
	// DefaultUDPIdle is 60 s, beyond zenoh-pico's default lease of 10 s
	// (Z_TRANSPORT_LEASE), so a live session never loses its mapping.
	DefaultUDPIdle = 60 * time.Second
	// DefaultDialTimeout is 5 s.
	DefaultDialTimeout = 5 * time.Second
)

func (c Config) withDefaults() (Config, error) {
	if c.Profile.Name == "" && c.Profile.ToDevice.Clean() && c.Profile.ToGateway.Clean() {
		c.Profile = Clean
	}
	if err := c.Profile.Validate(); err != nil {
		return c, err
	}
	if c.QueueBytes <= 0 {
		c.QueueBytes = DefaultQueueBytes
	}
	if c.ChunkSize <= 0 {
		c.ChunkSize = DefaultChunkSize
	}
	if c.UDPIdle <= 0 {
		c.UDPIdle = DefaultUDPIdle
	}
	if c.DialTimeout <= 0 {
		c.DialTimeout = DefaultDialTimeout
	}
	c.RTO = c.RTO.withDefaults()
	return c, nil
}
