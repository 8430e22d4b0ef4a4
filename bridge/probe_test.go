package bridge_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/bridge"
)

func TestProbeKnownBytes(t *testing.T) {
	p := bridge.Probe{Kind: bridge.ProbePong, Flags: 0x0102, Seq: 0x03040506, GwSend: 0x1122334455667788, DevRecv: 1, DevSend: 2}
	want := []byte{
		1, 2, 0x02, 0x01, 0x06, 0x05, 0x04, 0x03,
		0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11,
		1, 0, 0, 0, 0, 0, 0, 0,
		2, 0, 0, 0, 0, 0, 0, 0,
	}
	b := p.Append(nil)
	require.Equal(t, want, b)
	require.Equal(t, p.Len(), len(b))
	got, err := bridge.DecodeProbe(b)
	require.NoError(t, err)
	require.Equal(t, p, got)
	for i := range len(b) {
		_, err := bridge.DecodeProbe(b[:i])
		require.ErrorIs(t, err, bridge.ErrProbeSize, "truncated at %d", i)
	}
	_, err = bridge.DecodeProbe(append(b, 0))
	require.ErrorIs(t, err, bridge.ErrProbeSize)
	bad := bytes.Clone(b)
	bad[0] = 2
	_, err = bridge.DecodeProbe(bad)
	require.ErrorIs(t, err, bridge.ErrProbeVersion)
	bad[0], bad[1] = 1, 3
	_, err = bridge.DecodeProbe(bad)
	require.ErrorIs(t, err, bridge.ErrProbeKind)
}

func TestRespond(t *testing.T) {
	ping := bridge.Probe{Kind: bridge.ProbePing, Flags: 7, Seq: 42, GwSend: 123456}.Append(nil)
	pong, err := bridge.Respond(ping, 1000, 1500)
	require.NoError(t, err)
	p, err := bridge.DecodeProbe(pong)
	require.NoError(t, err)
	require.Equal(t, bridge.Probe{Kind: bridge.ProbePong, Flags: 7, Seq: 42, GwSend: 123456, DevRecv: 1000, DevSend: 1500}, p)
	_, err = bridge.Respond(pong, 0, 0)
	require.ErrorIs(t, err, bridge.ErrProbeKind, "a pong is not answered")
	_, err = bridge.Respond(ping[:5], 0, 0)
	require.ErrorIs(t, err, bridge.ErrProbeSize)
}

func TestProbeKeys(t *testing.T) {
	require.Equal(t, "@picobridge/probe/imu-1/ping", bridge.PingKey("imu-1"))
	require.Equal(t, "@picobridge/probe/imu-1/pong", bridge.PongKey("imu-1"))
	for key, want := range map[string]struct {
		dev  string
		kind bridge.ProbeKind
		ok   bool
	}{
		"@picobridge/probe/imu-1/ping":   {"imu-1", bridge.ProbePing, true},
		"@picobridge/probe/imu-1/pong":   {"imu-1", bridge.ProbePong, true},
		"@picobridge/probe/imu-1/other":  {},
		"@picobridge/probe/a/b/ping":     {},
		"@picobridge/probe//ping":        {},
		"@picobridge/probe/*/pong":       {},
		"picobridge/probe/imu-1/ping":    {},
		"@picobridge/probe/imu-1":        {},
		"@picobridge/probe/imu-1/ping/x": {},
	} {
		dev, kind, ok := bridge.ParseProbeKey(key)
		require.Equal(t, want.ok, ok, key)
		require.Equal(t, want.dev, dev, key)
		require.Equal(t, want.kind, kind, key)
	}
}

func FuzzDecodeProbe(f *testing.F) {
	f.Add(bridge.Probe{Kind: bridge.ProbePing, Seq: 1, GwSend: 2}.Append(nil))
	f.Add(bridge.Probe{Kind: bridge.ProbePong, Seq: 1, GwSend: 2, DevRecv: 3, DevSend: 4}.Append(nil))
	f.Add([]byte{1, 1, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := bridge.DecodeProbe(b)
		if err != nil {
			return
		}
		require.Equal(t, b, p.Append(nil), "decode/append round trip")
		if p.Kind == bridge.ProbePing {
			pong, err := bridge.Respond(b, 1, 2)
			require.NoError(t, err)
			require.Len(t, pong, bridge.ProbeSize)
		}
	})
}
