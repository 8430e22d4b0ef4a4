package egress

// What a payload carries (sequence number and send time) and what one device got of
// one stream.

import (
	"encoding/binary"
	"sync"
	"time"
)

// PayloadHeader is the bytes every payload starts with: "PBE1", sequence number (u32 LE),
// send time (Unix ns, i64 LE); the rest is zero padding.
const PayloadHeader = 16

var magic = [4]byte{'P', 'B', 'E', '1'}

func encodePayload(b []byte, seq uint32, at time.Time) {
	copy(b, magic[:])
	binary.LittleEndian.PutUint32(b[4:], seq)
	binary.LittleEndian.PutUint64(b[8:], uint64(at.UnixNano()))
}

func decodePayload(b []byte) (seq uint32, sent int64, ok bool) {
	if len(b) < PayloadHeader || [4]byte(b[:4]) != magic {
		return 0, 0, false
	}
	return binary.LittleEndian.Uint32(b[4:]), int64(binary.LittleEndian.Uint64(b[8:])), true
}

// recv is what one device got on one stream.
type recv struct {
	mu      sync.Mutex
	seen    map[uint32]bool
	lastSeq int64
	dups    int
	ooo     int
	lat     []float64 // ms
	sentAt  []int64   // send time of each lat, Unix ns
	seqs    []uint32
	keep    bool
}

func (r *recv) add(seq uint32, sent int64, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.seen[seq] {
		r.dups++
		return
	}
	r.seen[seq] = true
	if int64(seq) < r.lastSeq {
		r.ooo++
	}
	r.lastSeq = int64(seq)
	r.lat = append(r.lat, float64(now.UnixNano()-sent)/1e6)
	r.sentAt = append(r.sentAt, sent)
	if r.keep {
		r.seqs = append(r.seqs, seq)
	}
}

func (r *recv) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.seen)
}
