package wire

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestReassembler(t *testing.T) {
	msg := Push{WireExpr: WireExpr{Suffix: "a/b"}, Body: &Put{Payload: make([]byte, 100)}}.Append(nil)
	r := Reassembler{Max: 1000, RequireFirst: true}
	_, done, err := r.Push(&Fragment{More: true, SN: 4, First: true, Payload: msg[:40]})
	require.NoError(t, err)
	require.False(t, done)
	require.Equal(t, 40, r.Buffered())
	_, done, err = r.Push(&Fragment{More: true, SN: 5, Payload: msg[40:80]})
	require.NoError(t, err)
	require.False(t, done)
	out, done, err := r.Push(&Fragment{SN: 6, Payload: msg[80:]})
	require.NoError(t, err)
	require.True(t, done)
	require.Equal(t, msg, out)
	var p Parser
	m, n, err := p.Network(out)
	require.NoError(t, err)
	require.Equal(t, len(out), n)
	require.Equal(t, "a/b", m.(*Push).WireExpr.Suffix)

	// a train without First is dropped when RequireFirst
	_, done, _ = r.Push(&Fragment{SN: 7, Payload: msg})
	require.False(t, done)
	// an SN gap discards the partial message
	_, _, _ = r.Push(&Fragment{More: true, SN: 10, First: true, Payload: msg[:10]})
	_, done, _ = r.Push(&Fragment{SN: 12, Payload: msg[10:]})
	require.False(t, done)
	require.Equal(t, 0, r.Buffered())
	// Drop marker
	_, _, _ = r.Push(&Fragment{More: true, SN: 1, First: true, Payload: msg[:10]})
	_, _, _ = r.Push(&Fragment{SN: 2, Drop: true})
	require.Equal(t, 0, r.Buffered())
	// bound
	small := Reassembler{Max: 50}
	_, _, err = small.Push(&Fragment{More: true, SN: 1, Payload: msg[:40]})
	require.NoError(t, err)
	_, _, err = small.Push(&Fragment{SN: 2, Payload: msg[40:]})
	require.ErrorIs(t, err, ErrTooLarge)
	require.Equal(t, 0, small.Buffered())
	// SN wraps inside the mask
	w := Reassembler{SNMask: 0x7f}
	_, _, _ = w.Push(&Fragment{More: true, SN: 0x7f, Payload: msg[:10]})
	out, done, _ = w.Push(&Fragment{SN: 0, Payload: msg[10:]})
	require.True(t, done)
	require.Equal(t, msg, out)
}

func frag(sn uint64, more, first bool, payload string) *Fragment {
	return &Fragment{SN: sn, More: more, First: first, Payload: []byte(payload)}
}

// TestReassemblerAdd pins the drop each rule reports (the transport counts
// them one by one) and that no buffer is held between trains.
func TestReassemblerAdd(t *testing.T) {
	const mask = 0x0fffffff
	add := func(r *Reassembler, f *Fragment) (string, FragmentDrop) {
		m, d := r.Add(f)
		if m == nil {
			return "<nil>", d
		}
		return string(m), d
	}
	t.Run("RequireFirst", func(t *testing.T) {
		r := &Reassembler{Max: 10, SNMask: mask, RequireFirst: true}
		require.Zero(t, r.Held())
		m, d := add(r, frag(1, true, true, "ab"))
		require.Equal(t, "<nil>", m)
		require.Equal(t, FragmentKept, d)
		require.NotZero(t, r.Held(), "a partial train holds a buffer")
		m, d = add(r, frag(2, false, false, "cd"))
		require.Equal(t, "abcd", m)
		require.Equal(t, FragmentKept, d)
		r.Release()
		require.Zero(t, r.Held(), "nothing held after the message was consumed")
		// Gap: 5 after 3 → the message is dropped, the rest of the train skipped.
		add(r, frag(3, true, true, "xx"))
		m, d = add(r, frag(5, true, false, "yy"))
		require.Equal(t, "<nil>", m)
		require.Equal(t, FragmentGap, d)
		require.Zero(t, r.Held(), "a dropped train gives its buffer back")
		m, d = add(r, frag(6, false, false, "zz"))
		require.Equal(t, "<nil>", m)
		require.Equal(t, FragmentKept, d, "the rest of a dropped train is skipped, not counted again")
		// No First: dropped once for the whole train.
		_, d = add(r, frag(7, true, false, "q"))
		require.Equal(t, FragmentNoFirst, d)
		_, d = add(r, frag(8, false, false, "q"))
		require.Equal(t, FragmentKept, d)
		// A new First while a train is open drops the old one.
		add(r, frag(8, true, true, "aa"))
		m, d = add(r, frag(9, true, true, "bb"))
		require.Equal(t, FragmentGap, d)
		require.Equal(t, "<nil>", m)
		m, _ = add(r, frag(10, false, false, "cc"))
		require.Equal(t, "bbcc", m)
		// Oversize: dropped, the rest of the train skipped.
		add(r, frag(11, true, true, "123456"))
		_, d = add(r, frag(12, true, false, "789012"))
		require.Equal(t, FragmentOversize, d)
		m, d = add(r, frag(13, false, false, "x"))
		require.Equal(t, "<nil>", m, "rest of the oversize train skipped")
		require.Equal(t, FragmentKept, d)
		// Exactly Max is fine.
		add(r, frag(14, true, true, "12345"))
		m, _ = add(r, frag(15, false, false, "67890"))
		require.Equal(t, "1234567890", m)
		// Drop marker: counted only when a train was open.
		add(r, frag(16, true, true, "ab"))
		_, d = add(r, &Fragment{SN: 17, Drop: true})
		require.Equal(t, FragmentDropMarker, d)
		_, d = add(r, &Fragment{SN: 18, Drop: true})
		require.Equal(t, FragmentKept, d)
		// Wrap inside the mask.
		add(r, frag(mask, true, true, "w"))
		m, _ = add(r, frag(0, false, false, "r"))
		require.Equal(t, "wr", m)
		// A single empty fragment is an empty message (non-nil).
		msg, d := r.Add(frag(1, false, true, ""))
		require.NotNil(t, msg)
		require.Empty(t, msg)
		require.Equal(t, FragmentKept, d)
		r.Reset()
		require.Zero(t, r.Held())
	})
	t.Run("lenient", func(t *testing.T) {
		r := &Reassembler{Max: 10, SNMask: mask}
		add(r, frag(1, true, false, "ab"))
		m, _ := add(r, frag(2, false, false, "cd"))
		require.Equal(t, "abcd", m)
		// Gap: the partial is dropped and the fragment starts a new train.
		add(r, frag(3, true, false, "xx"))
		_, d := add(r, frag(5, true, false, "yy"))
		require.Equal(t, FragmentGap, d)
		m, _ = add(r, frag(6, false, false, "zz"))
		require.Equal(t, "yyzz", m)
		// Oversize: the tail of the train does not become a message.
		add(r, frag(7, true, false, "123456"))
		_, d = add(r, frag(8, true, false, "789012"))
		require.Equal(t, FragmentOversize, d)
		m, _ = add(r, frag(9, false, false, "x"))
		require.Equal(t, "<nil>", m)
		m, _ = add(r, frag(10, false, false, "solo"))
		require.Equal(t, "solo", m)
	})
	t.Run("large train grows in the pool", func(t *testing.T) {
		r := &Reassembler{Max: 1 << 20, SNMask: mask, RequireFirst: true}
		chunk := make([]byte, 2000)
		for i := range 100 {
			for j := range chunk {
				chunk[j] = byte(i)
			}
			msg, d := r.Add(&Fragment{SN: uint64(i), First: i == 0, More: i < 99, Payload: chunk})
			require.Equal(t, FragmentKept, d)
			if i < 99 {
				require.Nil(t, msg)
				continue
			}
			require.Len(t, msg, 200000)
			for k := range 100 {
				require.Equal(t, byte(k), msg[k*2000], "fragment %d", k)
				require.Equal(t, byte(k), msg[k*2000+1999], "fragment %d", k)
			}
		}
		r.Release()
		require.Zero(t, r.Held())
	})
}

// FuzzReassembly feeds arbitrary fragment sequences to a Reassembler: it
// never panics, never buffers or returns more than Max, a completed message
// always ends with the last fragment's payload, and nothing is held once a
// train ended and its message was released.
func FuzzReassembly(f *testing.F) {
	f.Add([]byte{0x03, 0x01, 0x04, 'a', 'b', 'c', 'd', 0x00, 0x02, 0x02, 'e', 'f'})
	f.Add([]byte{0x01, 0x7f, 0x03, 'x', 'y', 'z', 0x00, 0x00, 0x01, 'w', 0x04, 0x01, 0x00})
	f.Add([]byte{0x83, 0, 30, 0x01, 1, 30, 0x00, 2, 30})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		r := Reassembler{Max: 64, RequireFirst: data[0]&0x80 != 0, SNMask: 0x7f}
		for len(data) >= 3 {
			flags, sn, n := data[0], data[1], int(data[2])%48
			data = data[3:]
			n = min(n, len(data))
			fr := Fragment{More: flags&1 != 0, First: flags&2 != 0, Drop: flags&4 != 0, SN: uint64(sn), Payload: data[:n]}
			data = data[n:]
			msg, drop := r.Add(&fr)
			if r.Buffered() > r.Max || len(msg) > r.Max {
				t.Fatalf("bound exceeded: %d %d", r.Buffered(), len(msg))
			}
			if drop > FragmentDropMarker {
				t.Fatalf("unknown drop %d", drop)
			}
			if drop == FragmentOversize && (msg != nil || r.Buffered() != 0) {
				t.Fatalf("oversize must reset")
			}
			if msg != nil {
				if fr.More || !bytes.HasSuffix(msg, fr.Payload) {
					t.Fatalf("completed on a non-last fragment, or wrong tail")
				}
				if r.Buffered() != 0 {
					t.Fatalf("partial left after a completed message")
				}
			}
			if !fr.More && msg == nil && r.Buffered() != 0 {
				t.Fatalf("a train ended but %d bytes stay buffered", r.Buffered())
			}
			r.Release()
			if r.Buffered() == 0 && r.Held() != 0 {
				t.Fatalf("holds %d bytes with nothing buffered", r.Held())
			}
		}
	})
}
