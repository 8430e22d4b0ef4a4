package knobs_test

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/firmware"
	"github.com/picobridge/picobridge/knobs"
)

// The announcement of a native_sim device (zephyr defaults), byte for byte.
const nativeSimAnn = "0103" + "0f00" + "0004" + "0400" + "00080000" + "10270000" + "64000000" + "3200" + "03" + "00" + "00040000" + "00000000"

func nativeSim(t *testing.T) *knobs.Resolved {
	t.Helper()
	cat, err := firmware.Catalog()
	require.NoError(t, err)
	r, err := cat.Resolve(knobs.Options{Board: "native_sim"})
	require.NoError(t, err)
	return r
}

func TestAnnouncementBytes(t *testing.T) {
	a := knobs.AnnouncementOf(nativeSim(t))
	require.Equal(t, nativeSimAnn, hex.EncodeToString(a.Append(nil)))
	raw, _ := hex.DecodeString(nativeSimAnn)
	got, err := knobs.DecodeAnnouncement(raw)
	require.NoError(t, err)
	require.Equal(t, a, got)
}

func TestDecodeAnnouncementErrors(t *testing.T) {
	raw, _ := hex.DecodeString(nativeSimAnn)
	mut := func(f func(b []byte)) []byte { b := append([]byte(nil), raw...); f(b); return b }
	for _, tc := range []struct {
		in   []byte
		want string
	}{
		{raw[:31], "bad knob announcement: 31 bytes, want 32"},
		{mut(func(b []byte) { b[0] = 2 }), "bad knob announcement: version 2 kind 3, want version 1 kind 3"},
		{mut(func(b []byte) { b[1] = 1 }), "bad knob announcement: version 1 kind 1, want version 1 kind 3"},
		{mut(func(b []byte) { b[4], b[5] = 10, 0 }), "bad knob announcement: zenoh.wire.batch_unicast_size 10 outside 64..65535"},
		{mut(func(b []byte) { b[22] = 0 }), "bad knob announcement: zenoh.link.lease_expire_factor 0 outside 1..100"},
		{mut(func(b []byte) { b[20], b[21] = 0, 0 }), "bad knob announcement: zenoh.tx.flush_ms 0 outside 1..60000"},
	} {
		_, err := knobs.DecodeAnnouncement(tc.in)
		require.ErrorIs(t, err, knobs.ErrAnnouncement)
		require.EqualError(t, err, tc.want)
	}
	// Without the nano-ros bit its fields are not read (a plain zenoh-pico build).
	a, err := knobs.DecodeAnnouncement(mut(func(b []byte) { b[2] = 0x01; b[20], b[21] = 0, 0 }))
	require.NoError(t, err)
	require.False(t, a.NanoROS)
	require.Zero(t, a.TxFlushMs)
}

// TestWithAnnouncement: the announced values win with provenance device,
// and the disagreements name the rung they overrule.
func TestWithAnnouncement(t *testing.T) {
	r := nativeSim(t)
	a := knobs.AnnouncementOf(r)
	a.BatchUnicastSize, a.LeaseMs = 2048, 3000
	got, ds := r.WithAnnouncement(a, "imu1")
	require.EqualValues(t, 2048, got.Int(knobs.BatchUnicastSize))
	require.EqualValues(t, 1024, r.Int(knobs.BatchUnicastSize), "the input is not changed")
	require.Equal(t, "device imu1 (announced)", got.Get(knobs.BatchUnicastSize).Source.String())
	require.Equal(t, "device imu1 (announced)", got.Get(knobs.TxBatch).Source.String())
	require.Equal(t, "builtin", got.Get(knobs.MaxPublishers).Source.String(), "knobs it does not announce keep their rung")
	require.Len(t, ds, 2)
	require.Equal(t, "zenoh.link.lease_ms: the device announced 3000, the configuration says 10000 (set by builtin)", ds[0].String())
	require.Equal(t, "zenoh.wire.batch_unicast_size: the device announced 2048, the configuration says 1024 (set by builtin)", ds[1].String())
	require.Equal(t, knobs.RungDevice, got.Get(knobs.FragMaxSize).Source.Rung)
	require.Equal(t, "device", knobs.RungDevice.String())
}

// FuzzDecodeAnnouncement: never panics; what decodes re-encodes to the
// same bytes up to ignored bits (reserved bytes, nano-ros fields without
// their flag, unknown flags).
func FuzzDecodeAnnouncement(f *testing.F) {
	raw, _ := hex.DecodeString(nativeSimAnn)
	f.Add(raw)
	f.Add(raw[:10])
	f.Add(knobs.Announcement{BatchUnicastSize: 65535, FragMaxSize: 300000, Fragmentation: true, LeaseMs: 10000, LeaseExpireFactor: 3, SocketTimeoutMs: 100}.Append(nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := knobs.DecodeAnnouncement(b)
		if err != nil {
			return
		}
		again, err := knobs.DecodeAnnouncement(a.Append(nil))
		require.NoError(t, err)
		require.Equal(t, a, again)
	})
}

// TestWriteExplainText: the ladder read back from JSON prints exactly as
// the resolution itself.
func TestWriteExplainText(t *testing.T) {
	cat, err := firmware.Catalog()
	require.NoError(t, err)
	for _, o := range []knobs.Options{{Platform: "posix"}, {Board: "native_sim"}, {Board: "esp32"}} {
		r, err := cat.Resolve(o)
		require.NoError(t, err)
		r, _ = r.WithAnnouncement(knobs.Announcement{BatchUnicastSize: 512, FragMaxSize: 900, LeaseMs: 2000, LeaseExpireFactor: 4, SocketTimeoutMs: 7}, "d")
		var want, got, js bytes.Buffer
		require.NoError(t, knobs.WriteExplain(&want, r))
		require.NoError(t, knobs.WriteExplainJSON(&js, r))
		var e knobs.ExplainJSON
		require.NoError(t, json.Unmarshal(js.Bytes(), &e))
		require.NoError(t, knobs.WriteExplainText(&got, e))
		require.Equal(t, want.String(), got.String())
	}
}
