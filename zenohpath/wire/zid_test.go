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
