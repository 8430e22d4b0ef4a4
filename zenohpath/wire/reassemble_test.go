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
