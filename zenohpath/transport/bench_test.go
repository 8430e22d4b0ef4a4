package transport

import (
	"bytes"
	"testing"
	"time"

	"github.com/picobridge/picobridge/zenohpath/wire"
)

// countHandler counts PUSHes and signals when want arrived.
type countHandler struct {
	n    int
	want int
	done chan struct{}
}

func (h *countHandler) HandleNetwork(s *Session, m wire.NetworkMessage) {
	h.n++
	if h.n == h.want {
		h.done <- struct{}{}
		h.n = 0
	}
}
func (h *countHandler) HandleClose(*Session, error) {}

// BenchmarkSendSmall: throughput of small (16-byte payload) reliable
// messages, batched, over loopback TCP, end to end.
func BenchmarkSendSmall(b *testing.B) {
	const perRound = 1000
	h := &countHandler{want: perRound, done: make(chan struct{}, 1)}
	o := pairOpts{}
	o.cfgA.TxQueue = 4096
	a, _ := sessionPair(b, o, HandlerFuncs{}, h)
	m := push("demo/bench/small", bytes.Repeat([]byte("p"), 16))
	b.ReportAllocs()
	b.SetBytes(int64(m.Len()) * perRound)
	for b.Loop() {
		for i := 0; i < perRound; i++ {
			if err := a.Send(m, SendOptions{Reliable: true, Block: true}); err != nil {
				b.Fatal(err)
			}
		}
		select {
		case <-h.done:
		case <-time.After(10 * time.Second):
			b.Fatal("timeout")
		}
	}
	b.ReportMetric(float64(b.N*perRound)/b.Elapsed().Seconds(), "msgs/s")
}

// BenchmarkBatchAppend: the writer's per-message cost (encode in Send,
// append into the FRAME) without I/O.
func BenchmarkBatchAppend(b *testing.B) {
	cfg := testConfig().withDefaults()
	s := newSession(&cfg, nullLink{}, params{resolution: wire.DefaultResolution, batchSize: 65535, peerLease: time.Second}, HandlerFuncs{})
	w := &writer{s: s, buf: make([]byte, wire.StreamPrefixLen, wire.StreamPrefixLen+s.maxContent)}
	m := push("demo/bench/small", bytes.Repeat([]byte("p"), 16))
	b.ReportAllocs()
	b.SetBytes(int64(m.Len()))
	for b.Loop() {
		bp := getBuf(m.Len())
		*bp = m.Append((*bp)[:0])
		w.add(txItem{b: *bp, pooled: bp, rel: true})
	}
}

// BenchmarkFragmentReassemble64K: a 64 KB message sent as FRAGMENTs at
// batch 2048 and reassembled, end to end over loopback TCP.
func BenchmarkFragmentReassemble64K(b *testing.B) {
	h := &countHandler{want: 1, done: make(chan struct{}, 1)}
	a, _ := sessionPair(b, pairOpts{batch: 2048, patch: 1}, HandlerFuncs{}, h)
	m := push("demo/bench/big", bytes.Repeat([]byte("0123456789abcdef"), 4096))
	b.ReportAllocs()
	b.SetBytes(int64(m.Len()))
	for b.Loop() {
		if err := a.Send(m, SendOptions{Reliable: true, Block: true}); err != nil {
			b.Fatal(err)
		}
		<-h.done
	}
}

// BenchmarkReassemble64K: the reassembler alone (no I/O).
func BenchmarkReassemble64K(b *testing.B) {
	r := wire.Reassembler{Max: 1 << 20, SNMask: 0x0fffffff, RequireFirst: true}
	chunk := bytes.Repeat([]byte("x"), 2040)
	const n = 33 // ≈ 64 KB
	b.ReportAllocs()
	b.SetBytes(n * 2040)
	var sn uint64
	for b.Loop() {
		for i := 0; i < n; i++ {
			f := wire.Fragment{SN: sn, First: i == 0, More: i < n-1, Payload: chunk}
			sn = snNext(sn, 0x0fffffff)
			if msg, _ := r.Add(&f); i == n-1 && len(msg) != n*2040 {
				b.Fatal("bad reassembly")
			}
		}
	}
}

// TestRXAllocs pins zero allocations on the receive path FRAME → PUSH →
// handler, and on Send's encode + enqueue.
func TestRXAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("SKIP: allocation counts are not meaningful under -race (sync.Pool drops items)")
	}
	cfg := testConfig().withDefaults()
	h := &countHandler{want: -1}
	s := newSession(&cfg, nullLink{}, params{resolution: wire.DefaultResolution, batchSize: 65535, peerLease: time.Second}, h)
	b := frameBatch(true, 7, push("demo/alloc", []byte("payload")), push("demo/alloc", []byte("payload")))
	allocs := testing.AllocsPerRun(1000, func() {
		s.rxLast[chReliable] = 6
		if err := s.rxBatch(b); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("receive path allocates %v per batch", allocs)
	}
	m := push("demo/alloc", []byte("payload"))
	allocs = testing.AllocsPerRun(1000, func() {
		if err := s.Send(m, SendOptions{Reliable: true}); err != nil {
			t.Fatal(err)
		}
		s.tx.mu.Lock()
		it := s.tx.q[wire.PriorityControl].ch[chReliable].pop() // the zero SendOptions.Priority
		s.tx.doneLocked(it.prio, len(it.b))
		s.tx.mu.Unlock()
		it.release()
	})
	if allocs != 0 {
		t.Fatalf("Send allocates %v per message", allocs)
	}
}
