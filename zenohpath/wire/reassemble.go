package wire

import pool "github.com/libp2p/go-buffer-pool"

// Reassembler rebuilds one network message from a train of FRAGMENTs
// (zenoh-wire.md §4.7). It is bounded (it never holds more than Max bytes)
// and holds no buffer between trains: the buffer is taken from a shared
// pool on the first fragment of a train and given back when the message has
// been consumed (the next Add, Push, Reset or Release) or dropped. Use one
// per channel (the channel flag of the fragments is not checked here: pico
// sends the fragments of reliable messages with R=0).
//
// Rules, with the drop each one reports from Add:
//   - a fragment whose SN does not follow the previous one discards the
//     partial message (FragmentGap); without RequireFirst it starts a new
//     train, with it the rest of that train is skipped;
//   - a fragment with the First marker starts a new train, discarding an
//     open one (FragmentGap);
//   - with RequireFirst (Patch ≥ 1 negotiated) a train that does not start
//     with First is dropped as a whole (FragmentNoFirst);
//   - the Drop marker discards the partial message (FragmentDropMarker when
//     there was one);
//   - a train growing beyond Max is dropped as a whole, the rest of it
//     skipped (FragmentOversize).
type Reassembler struct {
	// Max is the largest reassembled message, in bytes (zenoh-pico:
	// Z_FRAG_MAX_SIZE, 4096 in cmake builds, 300000 in its GNUmakefile).
	// 0 means DefaultFragMax.
	Max int
	// RequireFirst drops trains that do not start with the First marker.
	RequireFirst bool
	// SNMask is the SN space (SNMask(resolution)); 0 means the default
	// 28-bit mask.
	SNMask uint64

	buf      []byte // the partial message (pooled), nil between trains
	done     []byte // the last completed message (pooled), given back on the next call
	active   bool   // a train is being collected
	skipping bool   // discarding the rest of a dropped train
	next     uint64 // SN expected next while active
	last     int    // size of the last completed message: the first buffer of a train
}

// DefaultFragMax is the reassembly bound used when Reassembler.Max is 0.
const DefaultFragMax = 300000

// FragmentDrop says what Reassembler.Add discarded.
type FragmentDrop uint8

// Outcomes of Reassembler.Add.
const (
	FragmentKept       FragmentDrop = iota // nothing dropped
	FragmentGap                            // a partial message: SN gap, or a new First
	FragmentOversize                       // a train over Max
	FragmentNoFirst                        // a train without First (RequireFirst)
	FragmentDropMarker                     // a partial message, on the peer's Drop marker
)

func (d FragmentDrop) String() string {
	switch d {
	case FragmentKept:
		return "kept"
	case FragmentGap:
		return "gap"
	case FragmentOversize:
		return "oversize"
	case FragmentNoFirst:
		return "no_first"
	case FragmentDropMarker:
		return "drop_marker"
	}
	return "unknown"
}

// fragPool holds the reassembly buffers of every Reassembler.
var fragPool pool.BufferPool

// minFragBuf is the smallest reassembly buffer taken from the pool, in bytes.
const minFragBuf = 1 << 10

// Reset discards any partial message and gives the buffers back.
func (r *Reassembler) Reset() {
	r.discard()
	r.Release()
}

// Release gives back the buffer of the last completed message (whose bytes
// must no longer be used). A partial message is kept.
func (r *Reassembler) Release() {
	if r.done != nil {
		fragPool.Put(r.done)
		r.done = nil
	}
}

// discard drops the partial message.
func (r *Reassembler) discard() {
	if r.buf != nil {
		fragPool.Put(r.buf)
		r.buf = nil
	}
	r.active = false
	r.skipping = false
}

// Buffered is the size of the partial message.
func (r *Reassembler) Buffered() int { return len(r.buf) }

// Held is the capacity of the buffers the Reassembler holds, in bytes (0
// between trains once the last message was released).
func (r *Reassembler) Held() int { return cap(r.buf) + cap(r.done) }

// Add adds a fragment (f.Payload is copied). When f completes a message it
// returns the serialized network message (non-nil, possibly empty), owned
// by the Reassembler and valid until the next Add, Push, Reset or Release;
// decode it with Parser.Network. drop says what was discarded on the way
// (at most one partial or whole message per call).
func (r *Reassembler) Add(f *Fragment) (msg []byte, drop FragmentDrop) {
	r.Release()
	mask := r.SNMask
	if mask == 0 {
		mask = SNMask(DefaultResolution)
	}
	limit := r.Max
	if limit <= 0 {
		limit = DefaultFragMax
	}
	if f.Drop {
		was := r.active
		r.discard()
		if was {
			return nil, FragmentDropMarker
		}
		return nil, FragmentKept
	}
	sn := f.SN & mask
	switch {
	case f.First:
		if r.active {
			drop = FragmentGap
		}
		r.discard()
		r.active = true
	case r.skipping:
		if !f.More {
			r.skipping = false
		}
		return nil, FragmentKept
	case r.active && sn != r.next:
		r.discard()
		if r.RequireFirst {
			// A fragment without First cannot start a train.
			r.skipping = f.More
			return nil, FragmentGap
		}
		drop = FragmentGap
		r.active = true
	case !r.active:
		if r.RequireFirst {
			r.skipping = f.More
			return nil, FragmentNoFirst
		}
		r.active = true
	}
	if len(r.buf)+len(f.Payload) > limit {
		r.discard()
		r.skipping = f.More
		return nil, FragmentOversize
	}
	r.grow(len(f.Payload))
	r.buf = append(r.buf, f.Payload...)
	r.next = (sn + 1) & mask
	if f.More {
		return nil, drop
	}
	msg = r.buf
	if msg == nil {
		msg = []byte{}
	}
	r.done, r.buf, r.active, r.last = r.buf, nil, false, len(msg)
	return msg, drop
}

// grow makes room for n more bytes in buf: a pool buffer at least twice
// the current one, so that a train of k fragments costs O(log k) copies,
// and for the first fragment as large as the last message (a stream of
// same-size messages then costs no copy at all).
func (r *Reassembler) grow(n int) {
	if n == 0 || len(r.buf)+n <= cap(r.buf) {
		return
	}
	want := max(len(r.buf)+n, 2*cap(r.buf), minFragBuf)
	if r.buf == nil {
		want = max(want, r.last)
	}
	nb := fragPool.Get(want)[:len(r.buf)]
	copy(nb, r.buf)
	if r.buf != nil {
		fragPool.Put(r.buf)
	}
	r.buf = nb
}

// Push is Add with the older signature: it returns the completed message
// and true, and an *Error wrapping ErrTooLarge when a train went over Max;
// the other drops are silent.
func (r *Reassembler) Push(f *Fragment) ([]byte, bool, error) {
	msg, drop := r.Add(f)
	if drop == FragmentOversize {
		return nil, false, newErr("FRAGMENT", "payload", 0, ErrTooLarge)
	}
	return msg, msg != nil, nil
}
