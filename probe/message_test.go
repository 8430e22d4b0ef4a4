package probe_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/probe"
)

func TestMessageKnownBytes(t *testing.T) {
	p := probe.Message{Kind: probe.Pong, Flags: 0x0102, Seq: 0x03040506, GwSend: 0x1122334455667788, DevRecv: 1, DevSend: 2}
	want := []byte{
		1, 2, 0x02, 0x01, 0x06, 0x05, 0x04, 0x03,
		0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11,
		1, 0, 0, 0, 0, 0, 0, 0,
		2, 0, 0, 0, 0, 0, 0, 0,
	}
	b := p.Append(nil)
	require.Equal(t, want, b)
	require.Equal(t, p.Len(), len(b))
	got, err := probe.Decode(b)
	require.NoError(t, err)
	require.Equal(t, p, got)
	for i := range len(b) {
		_, err := probe.Decode(b[:i])
		require.ErrorIs(t, err, probe.ErrSize, "truncated at %d", i)
	}
	_, err = probe.Decode(append(b, 0))
	require.ErrorIs(t, err, probe.ErrSize)
	bad := bytes.Clone(b)
	bad[0] = 2
	_, err = probe.Decode(bad)
	require.ErrorIs(t, err, probe.ErrVersion)
	bad[0], bad[1] = 1, 3
	_, err = probe.Decode(bad)
	require.ErrorIs(t, err, probe.ErrKind)
}

func TestRespond(t *testing.T) {
	ping := probe.Message{Kind: probe.Ping, Flags: 7, Seq: 42, GwSend: 123456}.Append(nil)
	pong, err := probe.Respond(ping, 1000, 1500)
	require.NoError(t, err)
	p, err := probe.Decode(pong)
	require.NoError(t, err)
	require.Equal(t, probe.Message{Kind: probe.Pong, Flags: 7, Seq: 42, GwSend: 123456, DevRecv: 1000, DevSend: 1500}, p)
	_, err = probe.Respond(pong, 0, 0)
	require.ErrorIs(t, err, probe.ErrKind, "a pong is not answered")
	_, err = probe.Respond(ping[:5], 0, 0)
	require.ErrorIs(t, err, probe.ErrSize)
}

func FuzzDecode(f *testing.F) {
	f.Add(probe.Message{Kind: probe.Ping, Seq: 1, GwSend: 2}.Append(nil))
	f.Add(probe.Message{Kind: probe.Pong, Seq: 1, GwSend: 2, DevRecv: 3, DevSend: 4}.Append(nil))
	f.Add([]byte{1, 1, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := probe.Decode(b)
		if err != nil {
			return
		}
		require.Equal(t, b, p.Append(nil), "decode/append round trip")
		if p.Kind == probe.Ping {
			pong, err := probe.Respond(b, 1, 2)
			require.NoError(t, err)
			require.Len(t, pong, probe.Size)
		}
	})
}
