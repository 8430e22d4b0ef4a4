package knobs

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// A device's knob announcement (docs/probe.md, "Knob announcement"): what
// the C responder (picobridge_probe_knobs_encode) and devsim publish once
// per session on @picobridge/probe/<device>/knobs, 32 bytes little-endian:
//
//	offset size field
//	 0     1    version               1
//	 1     1    kind                  3 (knobs; ping 1 and pong 2 share the layout's first bytes)
//	 2     2    flags                 bit 0 fragmentation, bit 1 tx batch, bit 2 tx split lock,
//	                                  bit 3 nano-ros fields valid (tx batch, split lock, flush_ms,
//	                                  ring depth, subscriber buffer); other bits 0
//	 4     2    batch_unicast_size    bytes (Z_BATCH_UNICAST_SIZE)
//	 6     2    subscriber_ring_depth samples (nano-ros; valid with bit 3)
//	 8     4    frag_max_size         bytes (Z_FRAG_MAX_SIZE)
//	12     4    lease_ms              ms (Z_TRANSPORT_LEASE)
//	16     4    socket_timeout_ms     ms (Z_CONFIG_SOCKET_TIMEOUT)
//	20     2    tx_flush_ms           ms (nano-ros; valid with bit 3)
//	22     1    lease_expire_factor   count (Z_TRANSPORT_LEASE_EXPIRE_FACTOR)
//	23     1    reserved              0
//	24     4    subscriber_buffer_size bytes (nano-ros; valid with bit 3)
//	28     4    reserved              0
//	32
const (
	AnnouncementSize    = 32
	AnnouncementVersion = 1
	AnnouncementKind    = 3

	annFragmentation = 1 << 0
	annTxBatch       = 1 << 1
	annSplitLock     = 1 << 2
	annNanoROS       = 1 << 3
)

// ErrAnnouncement is wrapped by every DecodeAnnouncement error.
var ErrAnnouncement = errors.New("bad knob announcement")

// Announcement is a device's compile-time transport knobs as it announced
// them. NanoROS says the nano-ros fields (TxBatch, TxSplitLock, TxFlushMs,
// SubscriberRingDepth, SubscriberBufferSize) are valid; a plain zenoh-pico
// build announces only the zenoh-pico ones.
type Announcement struct {
	BatchUnicastSize     uint16
	FragMaxSize          uint32
	Fragmentation        bool
	LeaseMs              uint32
	LeaseExpireFactor    uint8
	SocketTimeoutMs      uint32
	NanoROS              bool
	TxBatch              bool
	TxSplitLock          bool
	TxFlushMs            uint16
	SubscriberRingDepth  uint16
	SubscriberBufferSize uint32
}

// Append appends the 32-byte encoding.
func (a Announcement) Append(b []byte) []byte {
	var p [AnnouncementSize]byte
	p[0], p[1] = AnnouncementVersion, AnnouncementKind
	var flags uint16
	if a.Fragmentation {
		flags |= annFragmentation
	}
	if a.NanoROS {
		flags |= annNanoROS
		if a.TxBatch {
			flags |= annTxBatch
		}
		if a.TxSplitLock {
			flags |= annSplitLock
		}
		binary.LittleEndian.PutUint16(p[6:], a.SubscriberRingDepth)
		binary.LittleEndian.PutUint16(p[20:], a.TxFlushMs)
		binary.LittleEndian.PutUint32(p[24:], a.SubscriberBufferSize)
	}
	binary.LittleEndian.PutUint16(p[2:], flags)
	binary.LittleEndian.PutUint16(p[4:], a.BatchUnicastSize)
	binary.LittleEndian.PutUint32(p[8:], a.FragMaxSize)
	binary.LittleEndian.PutUint32(p[12:], a.LeaseMs)
	binary.LittleEndian.PutUint32(p[16:], a.SocketTimeoutMs)
	p[22] = a.LeaseExpireFactor
	return append(b, p[:]...)
}

// DecodeAnnouncement decodes an announcement. It rejects any other
// length, version or kind, and values outside their knob's range
// (Registry), naming the field; it never panics.
func DecodeAnnouncement(b []byte) (Announcement, error) {
	var a Announcement
	if len(b) != AnnouncementSize {
		return a, fmt.Errorf("%w: %d bytes, want %d", ErrAnnouncement, len(b), AnnouncementSize)
	}
	if b[0] != AnnouncementVersion || b[1] != AnnouncementKind {
		return a, fmt.Errorf("%w: version %d kind %d, want version %d kind %d", ErrAnnouncement, b[0], b[1], AnnouncementVersion, AnnouncementKind)
	}
	flags := binary.LittleEndian.Uint16(b[2:])
	a.Fragmentation = flags&annFragmentation != 0
	a.NanoROS = flags&annNanoROS != 0
	a.BatchUnicastSize = binary.LittleEndian.Uint16(b[4:])
	a.FragMaxSize = binary.LittleEndian.Uint32(b[8:])
	a.LeaseMs = binary.LittleEndian.Uint32(b[12:])
	a.SocketTimeoutMs = binary.LittleEndian.Uint32(b[16:])
	a.LeaseExpireFactor = b[22]
	if a.NanoROS {
		a.TxBatch = flags&annTxBatch != 0
		a.TxSplitLock = flags&annSplitLock != 0
		a.SubscriberRingDepth = binary.LittleEndian.Uint16(b[6:])
		a.TxFlushMs = binary.LittleEndian.Uint16(b[20:])
		a.SubscriberBufferSize = binary.LittleEndian.Uint32(b[24:])
	}
	for _, v := range a.values() {
		k, _ := Lookup(v.id)
		if v.v < k.Min || v.v > k.Max {
			return Announcement{}, fmt.Errorf("%w: %s %d outside %s", ErrAnnouncement, v.id, v.v, k.RangeString())
		}
	}
	return a, nil
}

type annValue struct {
	id string
	v  int64
}

// values lists the knobs the announcement sets, in registry order.
func (a Announcement) values() []annValue {
	b := func(x bool) int64 {
		if x {
			return 1
		}
		return 0
	}
	out := []annValue{}
	if a.NanoROS {
		out = append(out, annValue{TxBatch, b(a.TxBatch)}, annValue{TxFlushMs, int64(a.TxFlushMs)}, annValue{TxSplitLock, b(a.TxSplitLock)})
	}
	out = append(out,
		annValue{SocketTimeoutMs, int64(a.SocketTimeoutMs)},
		annValue{LeaseMs, int64(a.LeaseMs)},
		annValue{LeaseExpireFactor, int64(a.LeaseExpireFactor)},
		annValue{BatchUnicastSize, int64(a.BatchUnicastSize)},
		annValue{FragMaxSize, int64(a.FragMaxSize)},
		annValue{Fragmentation, b(a.Fragmentation)})
	if a.NanoROS {
		out = append(out, annValue{SubscriberRingDepth, int64(a.SubscriberRingDepth)}, annValue{SubscriberBufferSize, int64(a.SubscriberBufferSize)})
	}
	return out
}

// AnnouncementOf is what a device resolved as r announces (devsim).
func AnnouncementOf(r *Resolved) Announcement {
	return Announcement{
		BatchUnicastSize:     uint16(min(r.Int(BatchUnicastSize), 65535)),
		FragMaxSize:          uint32(r.Int(FragMaxSize)),
		Fragmentation:        r.Bool(Fragmentation),
		LeaseMs:              uint32(r.Int(LeaseMs)),
		LeaseExpireFactor:    uint8(r.Int(LeaseExpireFactor)),
		SocketTimeoutMs:      uint32(r.Int(SocketTimeoutMs)),
		NanoROS:              true,
		TxBatch:              r.Bool(TxBatch),
		TxSplitLock:          r.Bool(TxSplitLock),
		TxFlushMs:            uint16(min(r.Int(TxFlushMs), 65535)),
		SubscriberRingDepth:  uint16(r.Int(SubscriberRingDepth)),
		SubscriberBufferSize: uint32(r.Int(SubscriberBufferSize)),
	}
}

// Disagreement is one knob where an announcement differs from what the
// ladder had resolved.
type Disagreement struct {
	Knob      string
	Resolved  Value // before the announcement
	Announced int64
}

func (d Disagreement) String() string {
	k, _ := Lookup(d.Knob)
	return fmt.Sprintf("%s: the device announced %s, the configuration says %s (set by %s)", d.Knob, k.Format(d.Announced), d.Resolved, d.Resolved.Source)
}

// WithAnnouncement returns a copy of r in which every knob the
// announcement carries is set on the device rung (Source{Rung: RungDevice,
// Profile: device}), and the knobs where it disagrees with r.
func (r *Resolved) WithAnnouncement(a Announcement, device string) (*Resolved, []Disagreement) {
	out := *r
	out.Values = append([]Value(nil), r.Values...)
	out.Warnings = append([]Warning(nil), r.Warnings...)
	var ds []Disagreement
	for _, v := range a.values() {
		i := byID[v.id]
		cur := out.Values[i]
		if cur.Value != v.v {
			ds = append(ds, Disagreement{Knob: v.id, Resolved: cur, Announced: v.v})
		}
		out.Values[i].Value = v.v
		out.Values[i].Source = Source{Rung: RungDevice, Profile: device}
	}
	return &out, ds
}
