package wire

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestZID(t *testing.T) {
	z := MustZID([]byte{0x1a, 0x2b, 0x3c})
	require.Equal(t, "3c2b1a", z.String())
	require.Equal(t, "1a2b3c", z.Hex())
	require.Equal(t, 3, z.Len())
	z = MustZID([]byte{0x01, 0x00})
	require.Equal(t, "1", z.String())
	_, err := NewZID(nil)
	require.ErrorIs(t, err, ErrInvalid)
	_, err = NewZID(make([]byte, 17))
	require.ErrorIs(t, err, ErrInvalid)
}

func TestExtChain(t *testing.T) {
	// unit, Z64 and ZBuf unknown non-mandatory extensions are kept raw
	// on KEEP_ALIVE; an unknown mandatory one is rejected.
	wire := unhex(t, `84 8f ae 2a 4e 02 "hi"`)
	want := KeepAlive{Exts: []Ext{{Header: 0x0f}, {Header: 0x2e, Value: 0x2a}, {Header: 0x4e, Body: []byte("hi")}}}
	trio(t, want, wire, 0, ParseKeepAlive)
	_, _, err := ParseKeepAlive([]byte{0x1f}, 0x84)
	require.ErrorIs(t, err, ErrUnknownMandatoryExt)
	var we *Error
	require.ErrorAs(t, err, &we)
	require.Equal(t, "KEEP_ALIVE", we.Msg)
	require.Equal(t, 0, we.Offset)
	// reserved encoding 11
	_, _, err = ParseKeepAlive([]byte{0x6f}, 0x84)
	require.ErrorIs(t, err, ErrInvalid)
}

// TestParseZID: zenohd's printed form (String) back to wire bytes:
// leading zeros and 0x dropped, odd digit counts and upper case accepted;
// empty, all-zero, non-hex and over 32 digits refused.
func TestParseZID(t *testing.T) {
	for in, wireHex := range map[string]string{
		"a5": "a5", "1a2b": "2b1a", "0x1a2b": "2b1a", "01A2B": "2b1a", "000a5": "a5",
		"1234567890abcdef1122334455667788": "8877665544332211efcdab9078563412",
	} {
		z, err := ParseZID(in)
		require.NoError(t, err, in)
		require.Equal(t, wireHex, z.Hex(), in)
	}
	z, err := ParseZID("00a5")
	require.NoError(t, err)
	require.Equal(t, "a5", z.String())
	for _, in := range []string{"", "0x", "0", "000", "xyz", "1234567890abcdef1122334455667788a", "a5 "} {
		_, err := ParseZID(in)
		require.ErrorIs(t, err, ErrInvalid, "%q", in)
	}
}
