package wire

import (
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

func FuzzReassembly(f *testing.F) {
	f.Add([]byte{0x03, 0x01, 0x04, 'a', 'b', 'c', 'd', 0x00, 0x02, 0x02, 'e', 'f'})
	f.Add([]byte{0x01, 0x7f, 0x03, 'x', 'y', 'z', 0x00, 0x00, 0x01, 'w', 0x04, 0x01, 0x00})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		r := Reassembler{Max: 64, RequireFirst: data[0]&0x80 != 0, SNMask: 0x7f}
		total := 0
		for len(data) >= 3 {
			flags, sn, n := data[0], data[1], int(data[2])%48
			data = data[3:]
			n = min(n, len(data))
			fr := Fragment{More: flags&1 != 0, First: flags&2 != 0, Drop: flags&4 != 0, SN: uint64(sn), Payload: data[:n]}
			data = data[n:]
			msg, done, err := r.Push(&fr)
			if r.Buffered() > r.Max || len(msg) > r.Max {
				t.Fatalf("bound exceeded: %d %d", r.Buffered(), len(msg))
			}
			if err != nil && (done || r.Buffered() != 0) {
				t.Fatalf("error must reset: %v", err)
			}
			if done {
				total += len(msg)
				if fr.More {
					t.Fatalf("completed on a non-last fragment")
				}
			}
		}
		_ = total
	})
}
