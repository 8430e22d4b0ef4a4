package routing

import (
	"encoding/hex"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/zenohpath/wire"
)

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	require.NoError(t, err)
	return b
}

// TestLinkStateWorkedExample: the constructed example of
// zenoh-mesh-auth.md §1.4, byte for byte, both ways, and its OAM envelope.
func TestLinkStateWorkedExample(t *testing.T) {
	g, r := wire.MustZID([]byte{0x2b}), wire.MustZID([]byte{0x1a})
	list := []LinkState{
		{PSID: 0, SN: 2, HasZID: true, ZID: g, HasWhatAmI: true, WhatAmI: wire.WhatAmIRouter,
			HasLocators: true, Locators: []string{"tcp/192.168.1.2:7447"}, Links: []uint64{1}},
		{PSID: 1, SN: 0, HasZID: true, ZID: r, HasWhatAmI: true, WhatAmI: wire.WhatAmIRouter, Links: []uint64{}},
	}
	want := unhex(t, "02 07 00 02 01 2b 01 01 14 7463702f3139322e3136382e312e323a37343437 01 01 03 01 00 01 1a 01 00")
	require.Len(t, want, 38)
	require.Equal(t, want, AppendLinkStateList(nil, list))
	got, err := ParseLinkStateList(want)
	require.NoError(t, err)
	require.Equal(t, list, got)

	oam := NewLinkStateOAM(list)
	require.Equal(t, append(unhex(t, "df 01 21 08 26"), want...), oam.Append(nil))

	weighted := []LinkState{{PSID: 0, SN: 3, HasZID: true, ZID: g, HasWhatAmI: true, Links: []uint64{1, 2}, Weights: []uint16{0, 50}}}
	wb := unhex(t, "01 0b 00 03 01 2b 01 02 01 02 00 32")
	require.Equal(t, wb, AppendLinkStateList(nil, weighted))
	got, err = ParseLinkStateList(wb)
	require.NoError(t, err)
	require.Equal(t, weighted, got)
}

// TestLinkStateRefusals: malformed inputs are errors wrapping ErrLinkState;
// unknown option bits and the gateway bit are accepted.
func TestLinkStateRefusals(t *testing.T) {
	for name, in := range map[string]string{
		"empty":            "",
		"count lies":       "05 00 00 00",
		"truncated zid":    "01 01 00 01 05 2b",
		"bad whatami":      "01 02 00 01 03 00",
		"missing whatami":  "01 02 00 01",
		"psid too large":   "01 00 80 80 04 01 00",
		"link too large":   "01 00 00 01 01 80 80 04",
		"weight too large": "01 08 00 01 01 01 80 80 04",
		"zero zid":         "01 01 00 01 01 00 00",
	} {
		_, err := ParseLinkStateList(unhex(t, in))
		require.ErrorIs(t, err, ErrLinkState, name)
	}
	got, err := ParseLinkStateList(unhex(t, "01 30 00 01 00"))
	require.NoError(t, err)
	require.Equal(t, []LinkState{{PSID: 0, SN: 1, Links: []uint64{}, Gateway: true}}, got)
}

// FuzzParseLinkStateList: never panics; what decodes re-encodes to bytes
// that decode to the same list.
func FuzzParseLinkStateList(f *testing.F) {
	f.Add(unhex(f, "02 07 00 02 01 2b 01 01 14 7463702f3139322e3136382e312e323a37343437 01 01 03 01 00 01 1a 01 00"))
	f.Add(unhex(f, "01 0b 00 03 01 2b 01 02 01 02 00 32"))
	f.Add(unhex(f, "01 1f 00 01 01 2b 02 01 01 61 01 00 07"))
	f.Fuzz(func(t *testing.T, b []byte) {
		list, err := ParseLinkStateList(b)
		if err != nil {
			return
		}
		enc := AppendLinkStateList(nil, list)
		again, err := ParseLinkStateList(enc)
		if err != nil {
			t.Fatalf("re-encoding %x of %x does not decode: %v", enc, b, err)
		}
		if hex.EncodeToString(AppendLinkStateList(nil, again)) != hex.EncodeToString(enc) {
			t.Fatalf("not stable: %x", b)
		}
	})
}
