package wire

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestVLEKnown(t *testing.T) {
	cases := []struct {
		v    uint64
		wire string
	}{
		{0, "00"},
		{1, "01"},
		{0x7f, "7f"},
		{0x80, "8001"},
		{10000, "904e"},
		{11259375, "ef9baf05"},
		{1<<56 - 1, "ffffffffffffff7f"},
		{1 << 56, "8080808080808080" + "01"},
		{1 << 63, "8080808080808080" + "80"},
		{math.MaxUint64, "ffffffffffffffffff"},
		{7713657436024128632, "f888938a9cd29a866b"},
	}
	for _, c := range cases {
		w := unhex(t, c.wire)
		require.Equal(t, w, AppendVLE(nil, c.v), "%d", c.v)
		require.Equal(t, len(w), VLELen(c.v))
		v, n, err := ParseVLE(w)
		require.NoError(t, err)
		require.Equal(t, c.v, v)
		require.Equal(t, len(w), n)
		for i := 0; i < len(w); i++ {
			_, _, err := ParseVLE(w[:i])
			require.ErrorIs(t, err, ErrTruncated)
		}
	}
}

func TestVLEAgreesWithUvarintBelow2p63(t *testing.T) {
	for _, v := range []uint64{0, 1, 127, 128, 300, 1<<35 + 5, 1<<62 + 12345, 1<<63 - 1} {
		require.Equal(t, binary.AppendUvarint(nil, v), AppendVLE(nil, v))
	}
}

func TestVLENonMinimalAcceptedAndBounded(t *testing.T) {
	v, n, err := ParseVLE([]byte{0x81, 0x00})
	require.NoError(t, err)
	require.Equal(t, uint64(1), v)
	require.Equal(t, 2, n)
	// 9th byte has its high bit set and is still the last byte
	v, n, err = ParseVLE([]byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0xff, 0x01})
	require.NoError(t, err)
	require.Equal(t, uint64(0xff)<<56, v)
	require.Equal(t, 9, n)
	// bounded reads
	r := reader{b: AppendVLE(nil, 0x10000), msg: "t"}
	_, err = r.z16("f")
	require.ErrorIs(t, err, ErrTooLarge)
	r = reader{b: AppendVLE(nil, 0x100), msg: "t"}
	_, err = r.z8("f")
	require.ErrorIs(t, err, ErrTooLarge)
	r = reader{b: AppendVLE(nil, 1<<32), msg: "t"}
	_, err = r.z32("f")
	require.ErrorIs(t, err, ErrTooLarge)
	// a length that claims more than what remains
	r = reader{b: []byte{0x05, 'a', 'b'}, msg: "t"}
	_, err = r.bytes("f", 0xffff)
	require.ErrorIs(t, err, ErrTruncated)
	r = reader{b: []byte{0xff, 0xff, 0xff, 0xff, 0x0f}, msg: "t"}
	_, err = r.bytes("f", 0xffff_ffff)
	require.ErrorIs(t, err, ErrTruncated)
}

func FuzzVLE(f *testing.F) {
	f.Add(uint64(0), []byte{0x80})
	f.Add(uint64(math.MaxUint64), []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, v uint64, b []byte) {
		w := AppendVLE(nil, v)
		got, n, err := ParseVLE(w)
		if err != nil || got != v || n != len(w) || n != VLELen(v) {
			t.Fatalf("round trip %d: %x -> %d %d %v", v, w, got, n, err)
		}
		if x, n, err := ParseVLE(b); err == nil {
			if n > len(b) || n > MaxVLELen {
				t.Fatalf("consumed %d", n)
			}
			if len(AppendVLE(nil, x)) > n {
				t.Fatalf("minimal form longer than parsed form")
			}
		}
	})
}
