package ros2

import (
	"bytes"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	require.NoError(t, err)
	return b
}

// talkerInfo is a participant with one node /talker owning one reader and one
// writer (GUIDs with a Cyclone vendor prefix, entity kinds 04 reader, 03 writer).
func talkerInfo(size GidSize) ParticipantEntitiesInfo {
	prefix := []byte{0x01, 0x10, 0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0, 0x11, 0x22}
	guid := func(entity ...byte) Gid {
		var g Gid
		copy(g[:], prefix)
		copy(g[12:], entity)
		return g
	}
	return ParticipantEntitiesInfo{GidSize: size, Gid: guid(0, 0, 1, 0xc1), Nodes: []NodeEntitiesInfo{{
		Namespace: "/", Name: "talker",
		Readers: []Gid{guid(0, 0, 4, 4)},
		Writers: []Gid{guid(0, 0, 3, 3)},
	}}}
}

// Known bytes, worked out by hand from the .msg files of rmw_dds_common
// (humble: char[24], iron: char[16]) and XCDR1 alignment.
const (
	talkerHumbleHex = `00010000
		0110123456789abcdef01122 000001c1 0000000000000000
		01000000
		02000000 2f00
		0000 07000000 74616c6b657200
		00 01000000 0110123456789abcdef01122 00000404 0000000000000000
		01000000 0110123456789abcdef01122 00000303 0000000000000000`
	talkerIronHex = `00010000
		0110123456789abcdef01122 000001c1
		01000000
		02000000 2f00
		0000 07000000 74616c6b657200
		00 01000000 0110123456789abcdef01122 00000404
		01000000 0110123456789abcdef01122 00000303`
)

func TestParticipantEntitiesInfoKnownBytes(t *testing.T) {
	for _, tc := range []struct {
		name string
		size GidSize
		hex  string
		len  int
	}{
		{"humble", GidSizeHumble, talkerHumbleHex, 108},
		{"iron", GidSizeIron, talkerIronHex, 84},
		{"zero size is humble", 0, talkerHumbleHex, 108},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := unhex(t, tc.hex)
			require.Len(t, want, tc.len)
			m := talkerInfo(tc.size)
			require.NoError(t, m.Validate())
			got := Marshal(&m)
			require.Equal(t, hex.EncodeToString(want), hex.EncodeToString(got))
			require.Equal(t, len(got), m.CDRLen())

			dec, err := DecodeParticipantEntitiesInfo(want, tc.size)
			require.NoError(t, err)
			exp := talkerInfo(tc.size)
			if tc.size == 0 {
				exp.GidSize = GidSizeHumble
			}
			require.Equal(t, exp, dec)

			// every cut is an error, never a panic
			for i := range want {
				_, err := decodeParticipantEntitiesInfo(want[:i], tc.size)
				require.Error(t, err, "cut at %d", i)
				var de *DecodeError
				require.True(t, errors.As(err, &de), "cut at %d: %v", i, err)
			}
		})
	}
}

func TestParticipantEntitiesInfoShapes(t *testing.T) {
	var g1, g2, g3 Gid
	for i := range g1 {
		g1[i], g2[i], g3[i] = byte(i), byte(0x40+i), byte(0x80+i)
	}
	for _, m := range []ParticipantEntitiesInfo{
		{Gid: g1}, // no node at all
		{Gid: g1, Nodes: []NodeEntitiesInfo{{Namespace: "/", Name: "n"}}}, // node with nothing
		{Gid: g1, Nodes: []NodeEntitiesInfo{
			{Namespace: "/robot1/arm", Name: "picobridge", Readers: []Gid{g2, g3}, Writers: []Gid{g3}},
			{Namespace: "/", Name: "abc", Writers: []Gid{g2, g1, g3}},
		}},
	} {
		for _, size := range []GidSize{GidSizeHumble, GidSizeIron} {
			for _, e := range []Endianness{LittleEndian, BigEndian} {
				m.GidSize = size
				b := m.AppendCDR(nil, e)
				require.Len(t, b, m.CDRLen())
				got, err := DecodeParticipantEntitiesInfo(b, size)
				require.NoError(t, err)
				require.Equal(t, m, got)
			}
		}
	}
	// the 8 bytes after a Humble GUID are zero on the wire
	m := ParticipantEntitiesInfo{Gid: g1, Nodes: []NodeEntitiesInfo{{Namespace: "/", Name: "n", Writers: []Gid{g2}}}}
	b := Marshal(&m)
	require.Equal(t, make([]byte, 8), b[4+16:4+24])
	require.Equal(t, make([]byte, 8), b[len(b)-8:])
	require.Equal(t, g2[:], b[len(b)-24:len(b)-8])
}

func TestParticipantEntitiesInfoTypeNames(t *testing.T) {
	dds, err := TypeToDDS(ParticipantEntitiesInfoType)
	require.NoError(t, err)
	require.Equal(t, ParticipantEntitiesInfoDDSType, dds)
}

func TestGidSizeForDistro(t *testing.T) {
	for d, want := range map[string]GidSize{"foxy": 24, "galactic": 24, "humble": 24, "iron": 16, "jazzy": 16, "kilted": 16, "rolling": 16} {
		got, err := GidSizeForDistro(d)
		require.NoError(t, err, d)
		require.Equal(t, want, got, d)
	}
	for _, bad := range []string{"", "Humble", "hum", "lyrical", "humble "} {
		_, err := GidSizeForDistro(bad)
		require.ErrorIs(t, err, ErrInvalidDistro, bad)
		require.ErrorContains(t, err, "want one of foxy, galactic, humble, iron, jazzy, kilted, rolling")
	}
	s, err := GidSizeForDistro(DefaultROSDistro)
	require.NoError(t, err)
	require.Equal(t, GidSizeHumble, s)
}

// A message of the other distro is refused, and the error says which Gid size
// would have worked (the mistake zenoh-plugin-ros2dds warns about when
// ROS_DISTRO is unset and its peers run Humble).
func TestParticipantEntitiesInfoWrongDistro(t *testing.T) {
	humble := unhex(t, talkerHumbleHex)
	_, err := DecodeParticipantEntitiesInfo(humble, GidSizeIron)
	require.ErrorIs(t, err, ErrGidSize)
	require.ErrorIs(t, err, ErrMalformed)
	require.ErrorContains(t, err, "it decodes with 24-byte GIDs: foxy, galactic, humble")

	iron := unhex(t, talkerIronHex)
	_, err = DecodeParticipantEntitiesInfo(iron, GidSizeHumble)
	require.ErrorIs(t, err, ErrGidSize)
	require.ErrorContains(t, err, "it decodes with 16-byte GIDs: iron, jazzy, kilted, rolling")

	// garbage decodes with neither: a plain DecodeError
	_, err = DecodeParticipantEntitiesInfo([]byte{0, 1, 0, 0, 1}, GidSizeIron)
	require.Error(t, err)
	require.False(t, errors.Is(err, ErrGidSize))
}

func TestParticipantEntitiesInfoLimits(t *testing.T) {
	long := strings.Repeat("a", MaxNodeInfoString+1)
	m := ParticipantEntitiesInfo{Nodes: []NodeEntitiesInfo{{Namespace: "/", Name: long}}}
	require.ErrorContains(t, m.Validate(), "at most 256 bytes")
	_, err := DecodeParticipantEntitiesInfo(Marshal(&m), GidSizeHumble)
	require.ErrorIs(t, err, ErrMalformed)
	m.Nodes[0].Name = long[:MaxNodeInfoString]
	require.NoError(t, m.Validate())
	_, err = DecodeParticipantEntitiesInfo(Marshal(&m), GidSizeHumble)
	require.NoError(t, err)
	require.Error(t, (&ParticipantEntitiesInfo{GidSize: 20}).Validate())

	// huge counts are refused before allocating
	b := unhex(t, talkerIronHex)[:4+16]
	b = append(b, 0xff, 0xff, 0xff, 0x7f)
	_, err = DecodeParticipantEntitiesInfo(b, GidSizeIron)
	require.ErrorIs(t, err, ErrTruncated)
	b = unhex(t, talkerIronHex)[:4+16+4+6+2+4+7+1]
	b = append(b, 0xff, 0xff, 0xff, 0xff)
	_, err = DecodeParticipantEntitiesInfo(b, GidSizeIron)
	require.ErrorIs(t, err, ErrTruncated)
	// trailing bytes beyond padding
	b = append(unhex(t, talkerIronHex), 0, 0, 0, 0)
	_, err = DecodeParticipantEntitiesInfo(b, GidSizeIron)
	require.ErrorIs(t, err, ErrMalformed)
}

// FuzzDecodeParticipantEntitiesInfo: no panic on any input; what decodes
// re-encodes (same byte order, same Gid size) to at most the input's length,
// CDRLen bytes, and to a fixed point. Bytes the decoder ignores (the 8 after
// a Humble GUID, padding) may differ from the input.
func FuzzDecodeParticipantEntitiesInfo(f *testing.F) {
	for _, size := range []GidSize{GidSizeHumble, GidSizeIron} {
		m := talkerInfo(size)
		f.Add(m.AppendCDR(nil, LittleEndian), size == GidSizeIron)
		f.Add(m.AppendCDR(nil, BigEndian), size == GidSizeIron)
		m.Nodes = append(m.Nodes, NodeEntitiesInfo{Namespace: "/a/b", Name: "x"})
		f.Add(m.AppendCDR(nil, LittleEndian), size == GidSizeIron)
	}
	f.Add([]byte{0, 1, 0, 0}, false)
	f.Fuzz(func(t *testing.T, in []byte, iron bool) {
		size := GidSizeHumble
		if iron {
			size = GidSizeIron
		}
		m, err := DecodeParticipantEntitiesInfo(in, size)
		if err != nil {
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("error is not a *DecodeError: %v", err)
			}
			return
		}
		if err := m.Validate(); err != nil {
			t.Fatalf("decoded message does not validate: %v", err)
		}
		e, _ := ParseEncapsulation(in)
		out := m.AppendCDR(nil, e)
		if len(out) != m.CDRLen() {
			t.Fatalf("len(AppendCDR) %d != CDRLen %d", len(out), m.CDRLen())
		}
		if len(out) > len(in) {
			t.Fatalf("re-encoded %d bytes from %d", len(out), len(in))
		}
		m2, err := DecodeParticipantEntitiesInfo(out, size)
		if err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		if out2 := m2.AppendCDR(nil, e); !bytes.Equal(out, out2) {
			t.Fatalf("not a fixed point:\n%x\n%x", out, out2)
		}
	})
}
