package wire

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// framePush builds a batch: FRAME(R, sn) · PUSH(key) · PUT(payload).
func framePush(sn uint64, we WireExpr, payload []byte) []byte {
	b := Frame{Reliable: true, SN: sn}.Append(nil)
	return Push{WireExpr: we, Body: &Put{Payload: payload}}.Append(b)
}

func TestParserAllocs(t *testing.T) {
	for _, we := range []WireExpr{
		{Scope: 1, Mapping: MappingSender},   // pico: numeric scope
		{Suffix: "demo/example/fake-router"}, // full key: interned after the first decode
		{Scope: 7, Suffix: "/example/x", Mapping: MappingSender},
	} {
		batch := framePush(11259375, we, make([]byte, 64))
		var p Parser
		var payload int
		decode := func() {
			m, n, err := p.Transport(batch)
			if err != nil || n != len(batch) {
				t.Fatal(err)
			}
			f := m.(*Frame)
			nm, k, err := p.Network(f.Payload)
			if err != nil || k != len(f.Payload) {
				t.Fatal(err)
			}
			payload += len(nm.(*Push).Body.(*Put).Payload)
		}
		decode()
		require.Zero(t, testing.AllocsPerRun(100, decode), "Transport+Network %v", we)

		walk := func() {
			err := p.WalkBatch(batch, func(_ TransportMessage, n NetworkMessage) error {
				if push, ok := n.(*Push); ok {
					payload += len(push.Body.(*Put).Payload)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		require.Zero(t, testing.AllocsPerRun(100, walk), "WalkBatch %v", we)
	}

	// encoding into a reused buffer does not allocate either
	put := &Put{Payload: make([]byte, 64)}
	push := Push{WireExpr: WireExpr{Suffix: "demo/example/fake-router"}, Body: put}
	buf := make([]byte, 0, 256)
	enc := func() {
		buf = Frame{Reliable: true, SN: 5}.Append(buf[:0])
		buf = push.Append(buf)
	}
	require.Zero(t, testing.AllocsPerRun(100, enc))
}

// The batches used by the benchmarks: FRAME carrying one PUSH/PUT.
var benchSizes = []int{64, 1500, 64 * 1024}

func BenchmarkAppendFramePush(b *testing.B) {
	for _, size := range benchSizes {
		b.Run(fmt.Sprintf("%dB", size), func(b *testing.B) {
			put := &Put{Payload: make([]byte, size)}
			push := Push{WireExpr: WireExpr{Suffix: "demo/example/zenoh-pico-pub"}, Body: put}
			buf := make([]byte, 0, size+64)
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				buf = Frame{Reliable: true, SN: 11259375}.Append(buf[:0])
				buf = push.Append(buf)
			}
		})
	}
}

func BenchmarkParseFramePush(b *testing.B) {
	for _, size := range benchSizes {
		b.Run(fmt.Sprintf("%dB", size), func(b *testing.B) {
			batch := framePush(11259375, WireExpr{Suffix: "demo/example/zenoh-pico-pub"}, make([]byte, size))
			var p Parser
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				m, _, err := p.Transport(batch)
				if err != nil {
					b.Fatal(err)
				}
				if _, _, err := p.Network(m.(*Frame).Payload); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkWalkBatch170Push(b *testing.B) {
	// pico's batching: 170 PUSH/PUT of 8 B in one FRAME (pub_thr_batched_2048)
	batch := Frame{Reliable: true, SN: 2}.Append(nil)
	for range 170 {
		batch = Push{WireExpr: WireExpr{Scope: 1, Mapping: MappingSender}, Body: &Put{Payload: make([]byte, 8)}}.Append(batch)
	}
	var p Parser
	n := 0
	fn := func(_ TransportMessage, m NetworkMessage) error {
		if m != nil {
			n++
		}
		return nil
	}
	b.SetBytes(int64(len(batch)))
	b.ReportAllocs()
	for b.Loop() {
		if err := p.WalkBatch(batch, fn); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkReassemble(b *testing.B) {
	msg := Push{WireExpr: WireExpr{Suffix: "demo/example/x"}, Body: &Put{Payload: make([]byte, 10240)}}.Append(nil)
	var frags []Fragment
	for i, sn := 0, uint64(0); i < len(msg); i, sn = i+2040, sn+1 {
		end := min(i+2040, len(msg))
		frags = append(frags, Fragment{SN: sn, More: end < len(msg), First: i == 0, Payload: msg[i:end]})
	}
	r := Reassembler{RequireFirst: true}
	b.SetBytes(int64(len(msg)))
	b.ReportAllocs()
	for b.Loop() {
		for i := range frags {
			if _, _, err := r.Push(&frags[i]); err != nil {
				b.Fatal(err)
			}
		}
	}
}

func TestClone(t *testing.T) {
	batch := framePush(1, WireExpr{Suffix: "a/b"}, []byte("payload"))
	var p Parser
	m, _, err := p.Transport(batch)
	require.NoError(t, err)
	n, _, err := p.Network(m.(*Frame).Payload)
	require.NoError(t, err)
	c, err := CloneNetwork(n)
	require.NoError(t, err)
	ct, err := CloneTransport(m)
	require.NoError(t, err)
	for i := range batch {
		batch[i] = 0xee // the batch buffer is reused
	}
	require.Equal(t, []byte("payload"), c.(*Push).Body.(*Put).Payload)
	require.Equal(t, "a/b", c.(*Push).WireExpr.Suffix)
	require.Equal(t, uint64(1), ct.(*Frame).SN)
}
