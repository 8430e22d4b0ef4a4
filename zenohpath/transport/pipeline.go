package transport

import (
	"math"
	"math/bits"
	"sync"
	"sync/atomic"
	"time"

	"github.com/picobridge/picobridge/zenohpath/wire"
)

// The TX pipeline (issue 10): Send and SendEncoded put encoded messages on
// one of 8 priority queues (wire.Priority 0 Control … 7 Background), each
// bounded in bytes and in messages, with congestion control applied here,
// at enqueue. The writer (tx.go) serves the highest non-empty priority one
// batch at a time and cuts large messages into FRAGMENTs at dequeue, so a
// higher-priority message waits at most one batch behind lower-priority
// bytes. See docs/transport.md for the rules and their sources.

// numPrio is the number of Zenoh priorities (zenoh-wire.md §8.1).
const numPrio = 8

// txItem is one encoded network message waiting in a priority queue.
type txItem struct {
	b      []byte   // the encoded message; immutable while queued
	pooled *[]byte  // b's pooled buffer (Send); nil for SendEncoded: never pooled
	enc    *Encoded // SendShared: the reference this queue holds on b's buffer
	inline bool     // SendEncoded/SendShared with SendOptions.Inline: may be written inline
	rel    bool     // reliable channel
	expr   bool     // express: leaves at once in its own batch
	prio   uint8
	seq    uint64 // enqueue order (FIFO across the two channels of a priority)
}

// release returns the item's buffer to the pool when it owns one.
func (it *txItem) release() {
	if it.pooled != nil {
		putBuf(it.pooled)
	}
	if it.enc != nil {
		it.enc.Release()
	}
	*it = txItem{}
}

// Send's encode buffers are pooled in power-of-two size classes from 256 B
// to 256 KiB, so that a queued message never pins a buffer more than twice
// its size (a single pool would let a 20-byte message sit in a recycled
// 256 KiB buffer). Larger messages get a buffer of their own, not pooled.
const (
	minBufClass = 8  // 256 B
	maxBufClass = 18 // 256 KiB
)

var bufPools [maxBufClass + 1]sync.Pool

// bufClass is the size class holding n bytes (0 when n is too large).
func bufClass(n int) int {
	c := max(bits.Len(uint(max(n, 1)-1)), minBufClass)
	if c > maxBufClass {
		return 0
	}
	return c
}

// getBuf returns an empty buffer with room for n bytes: pooled when n ≤ 256
// KiB, else a fresh one (putBuf then drops it).
func getBuf(n int) *[]byte {
	c := bufClass(n)
	if c == 0 {
		b := make([]byte, 0, n)
		return &b
	}
	if b, ok := bufPools[c].Get().(*[]byte); ok {
		return b
	}
	b := make([]byte, 0, 1<<c)
	return &b
}

func putBuf(b *[]byte) {
	c := bits.Len(uint(cap(*b))) - 1
	if c < minBufClass || c > maxBufClass || cap(*b) != 1<<c {
		return
	}
	*b = (*b)[:0]
	bufPools[c].Put(b)
}

// ring is a power-of-two FIFO of messages of one priority and channel,
// released when it empties while the writer goes idle (so an idle session
// holds no ring).
type ring struct {
	items []txItem
	head  int
	n     int
}

func (r *ring) push(it txItem) {
	if r.n == len(r.items) {
		x := make([]txItem, max(8, 2*len(r.items)))
		for i := 0; i < r.n; i++ {
			x[i] = r.items[(r.head+i)&(len(r.items)-1)]
		}
		r.items, r.head = x, 0
	}
	r.items[(r.head+r.n)&(len(r.items)-1)] = it
	r.n++
}

func (r *ring) peek() *txItem { return &r.items[r.head] }

func (r *ring) pop() txItem {
	it := r.items[r.head]
	r.items[r.head] = txItem{}
	r.head = (r.head + 1) & (len(r.items) - 1)
	r.n--
	return it
}

// prioQueue is one priority's queue: a FIFO per channel (so a message of
// one channel never waits behind one that waits for a fragment train of
// the other), served oldest head first, bounded together.
type prioQueue struct {
	ch    [2]ring
	bytes int // encoded bytes queued, messages up to the byte bound
	big   int // encoded bytes of the one queued message larger than the bound (0: none)
	count int // messages queued
}

// idleRing is the largest ring kept while a session is idle (8 items, 320
// bytes); larger ones are dropped so that a burst does not pin memory.
const idleRing = 8

// txState is a session's TX side: the queues (guarded by mu) and the writer
// (owned by whichever goroutine runs writeLoop; running says one does).
type txState struct {
	mu       sync.Mutex
	q        [numPrio]prioQueue
	bound    int  // bytes per priority queue
	boundN   int  // messages per priority queue
	started  bool // start was called: a writer may run
	running  bool // a goroutine is in writeLoop
	sleeping bool // the running writer waits on wake
	dead     bool // the last writer exited: nothing is accepted any more
	kaDue    bool // the keep-alive timer fired
	seq      uint64
	queued   int // messages in all queues

	inlineWrites, inlinePartial atomic.Uint64 // inline.go, for tests
	starts                      atomic.Uint64 // writer goroutines started (Stats.WriterStarts)
	// Messages being fragmented (at most one per channel), by priority:
	// bytes not yet written, and messages.
	trainBytes [numPrio]int
	trainMsgs  [numPrio]int
	space      chan struct{}
	wake       chan struct{} // cap 1
	ka         *time.Timer   // keep-alive timer (AfterFunc: no goroutine while idle)

	epoch  time.Time
	lastTx atomic.Int64 // ns since epoch of the last write

	rate atomic.Uint64 // float64 bits, bytes/s; see SetTxRate
	// lowat is the TCP_NOTSENT_LOWAT last set on the socket, bytes (0:
	// none set); see applyLowat.
	lowat atomic.Int64

	w writer

	// loop is s.writeLoop as a func value made once (init): `go
	// s.writeLoop()` allocates a closure per start, i.e. per message on a
	// session that sends less often than idleLinger.
	loop func()
}

func (t *txState) init(s *Session) {
	t.epoch = time.Now()
	t.wake = make(chan struct{}, 1)
	t.boundN = s.cfg.TxQueue
	t.bound = s.cfg.TxQueueBytes
	if t.bound <= 0 {
		t.bound = DefaultTxQueueBatches * int(s.p.batchSize)
	}
	t.w.s = s
	t.w.initInline()
	t.loop = s.writeLoop
}

func (t *txState) sinceTx() time.Duration {
	return time.Since(t.epoch) - time.Duration(t.lastTx.Load())
}

// kickLocked makes sure a writer will look at the queues. It returns true
// when the caller must start one (run writeLoop). Caller holds mu.
func (t *txState) kickLocked() bool {
	if t.running {
		if t.sleeping {
			t.sleeping = false
			select {
			case t.wake <- struct{}{}:
			default:
			}
		}
		return false
	}
	if t.dead || !t.started {
		return false
	}
	t.running = true
	return true
}

// roomLocked wakes the senders that wait for room. Caller holds mu.
func (t *txState) roomLocked() {
	if t.space != nil {
		close(t.space)
		t.space = nil
	}
}

// doneLocked removes a message taken by the writer (or discarded) from its
// queue's bounds. Caller holds mu.
func (t *txState) doneLocked(prio uint8, n int) {
	q := &t.q[prio]
	if n > t.bound {
		q.big = 0
	} else {
		q.bytes -= n
	}
	q.count--
	t.queued--
	t.roomLocked()
}

// Send queues one network message. It encodes m before returning, so m
// (and the bytes it points to) may be reused as soon as Send returns.
// o.Priority selects one of 8 queues, each bounded by Config.TxQueueBytes
// and Config.TxQueue; when the message does not fit, Send never blocks on a
// slow peer beyond the congestion control in o: without Block it waits at
// most Config.WaitBeforeDrop (1 ms by default, as Rust Zenoh does) for room
// and then drops the message (ErrQueueFull, counted queue_full); with Block
// it waits up to Config.BlockTimeout (ErrBlockTimeout, counted
// block_timeout). A message larger than Config.MaxMessageSize is refused
// (ErrTooLarge, counted too_large). Express messages leave at once in their
// own batch; others share a FRAME with the messages queued around them.
// Messages larger than a batch are fragmented by the writer. Safe to call
// from HandleNetwork.
func (s *Session) Send(m wire.NetworkMessage, o SendOptions) error {
	select {
	case <-s.closing:
		return ErrClosed
	default:
	}
	n := m.Len()
	if n > s.cfg.MaxMessageSize {
		s.drop(dropTooLarge)
		return ErrTooLarge
	}
	bp := getBuf(n)
	*bp = m.Append((*bp)[:0])
	return s.enqueue(txItem{b: *bp, pooled: bp, rel: o.Reliable, expr: o.Express}, o)
}

// SendEncoded queues one network message that is already encoded (the wire
// bytes of exactly one NetworkMessage, as m.Append produces them). It is how
// the router fans one sample out to N sessions while encoding it once: b is
// shared and never copied at enqueue (the writer copies it into the batch at
// write time) and never pooled, so neither the caller nor anyone else may
// modify it after the call; the session keeps a reference until the bytes
// are written or dropped. Bounds, congestion control and errors are as for
// Send (len(b) counts against the queue's byte bound of every session it
// is queued on).
func (s *Session) SendEncoded(b []byte, o SendOptions) error {
	select {
	case <-s.closing:
		return ErrClosed
	default:
	}
	if len(b) > s.cfg.MaxMessageSize {
		s.drop(dropTooLarge)
		return ErrTooLarge
	}
	return s.enqueue(txItem{b: b, rel: o.Reliable, expr: o.Express, inline: o.Inline}, o)
}

// enqueue places it in its priority queue under the congestion control of o.
func (s *Session) enqueue(it txItem, o SendOptions) error {
	p := min(int(o.Priority), numPrio-1)
	it.prio = uint8(p)
	n := len(it.b)
	t := &s.tx
	var timer *time.Timer
	for {
		t.mu.Lock()
		if t.dead {
			t.mu.Unlock()
			it.release()
			return ErrClosed
		}
		q := &t.q[p]
		if q.count < t.boundN && (n > t.bound && q.big == 0 || n <= t.bound && q.bytes+n <= t.bound) {
			if t.inlineOKLocked(&it) {
				t.running = true
				t.mu.Unlock()
				s.writeInline(it)
				return nil
			}
			t.seq++
			it.seq = t.seq
			q.ch[channel(it.rel)].push(it)
			if n > t.bound {
				q.big = n
			} else {
				q.bytes += n
			}
			q.count++
			t.queued++
			run := t.kickLocked()
			t.mu.Unlock()
			if run {
				go t.loop()
			}
			return nil
		}
		if timer == nil {
			wait := s.cfg.BlockTimeout
			if !o.Block {
				wait = s.cfg.WaitBeforeDrop
			}
			if wait <= 0 {
				t.mu.Unlock()
				return s.refuse(&it, o)
			}
			timer = time.NewTimer(wait)
			defer timer.Stop()
		}
		if t.space == nil {
			t.space = make(chan struct{})
		}
		room := t.space
		t.mu.Unlock()
		select {
		case <-room:
		case <-timer.C:
			return s.refuse(&it, o)
		case <-s.closing:
			it.release()
			return ErrClosed
		}
	}
}

// refuse drops a message that found no room in time and counts it.
func (s *Session) refuse(it *txItem, o SendOptions) error {
	it.release()
	if o.Block {
		s.drop(dropBlockTimeout)
		return ErrBlockTimeout
	}
	s.drop(dropQueueFull)
	return ErrQueueFull
}

// SetTxRate paces the session's link at bytesPerSecond (batch bytes per
// second, the 2-byte stream prefix included), 0 = unpaced: the writer
// releases batches under a token bucket at that rate with bursts of at most
// one batch, so the queue forms here, where priority decides the order, and
// not in a bottleneck downstream (issue 10 item 2). An express message
// (RealTime or above) does not wait for tokens: it goes next and its bytes
// are charged, so the bulk behind it pays the debt (critical first; the
// rate holds on average; issue 30). While paced, batches and
// fragments are cut to at most rate × 1 ms (clamped to [1 KiB, negotiated
// batch]), so a higher-priority message waits about 1 ms behind bulk bytes
// whatever the batch size (12.5 KB at 100 Mbit/s); a message larger than
// that chunk is therefore sent as FRAGMENTs, so pace only peers that
// reassemble (zenoh-pico with Z_FEATURE_FRAGMENTATION, its default; Rust).
// On a TCP link the socket's TCP_NOTSENT_LOWAT follows: one paced chunk
// (at least 4 KiB, at most Config.TCPNotSentLowat; pacedLowat), so the
// kernel holds no more unsent bytes than the writer's own batch.
// Safe for concurrent use; it takes effect at the next batch.
func (s *Session) SetTxRate(bytesPerSecond float64) {
	if math.IsNaN(bytesPerSecond) || bytesPerSecond < 0 {
		bytesPerSecond = 0
	}
	s.tx.rate.Store(math.Float64bits(bytesPerSecond))
	s.applyLowat(bytesPerSecond)
	// A writer sleeping for pacing tokens recomputes its wait at the new
	// rate now (unpaced: it writes at once), not when the old wait ends.
	t := &s.tx
	t.mu.Lock()
	if t.running && t.sleeping {
		t.sleeping = false
		select {
		case t.wake <- struct{}{}:
		default:
		}
	}
	t.mu.Unlock()
}

// TxRate is the pacing rate set by SetTxRate, in bytes/s; 0 = unpaced.
func (s *Session) TxRate() float64 { return math.Float64frombits(s.tx.rate.Load()) }

// pacedChunk is the largest batch content while paced at rate bytes/s:
// rate × 1 ms, clamped to [1 KiB, maxContent].
func pacedChunk(rate float64, maxContent int) int {
	c := int(rate / 1000)
	return min(max(c, 1024), maxContent)
}

// TxBacklog is what waits in a session's TX queues, per priority
// (wire.Priority 0 Control … 7 Background).
type TxBacklog struct {
	// Bytes are encoded message bytes not yet written: queued messages
	// and the rest of a message being fragmented (the batch being filled
	// is not counted).
	Bytes [8]int
	// Messages counts queued messages, including those being fragmented.
	Messages [8]int
}

// Total returns the queued bytes and messages over all priorities.
func (b TxBacklog) Total() (bytes, messages int) {
	for i := range b.Bytes {
		bytes += b.Bytes[i]
		messages += b.Messages[i]
	}
	return bytes, messages
}

// TxBacklog returns what waits to be written now, per priority.
func (s *Session) TxBacklog() TxBacklog {
	var b TxBacklog
	t := &s.tx
	t.mu.Lock()
	for i := range t.q {
		b.Bytes[i] = t.q[i].bytes + t.q[i].big + t.trainBytes[i]
		b.Messages[i] = t.q[i].count + t.trainMsgs[i]
	}
	t.mu.Unlock()
	return b
}
