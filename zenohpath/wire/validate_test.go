package wire

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestValidate(t *testing.T) {
	require.NoError(t, Validate(&InitSyn{ZID: routerZID}))
	require.ErrorIs(t, Validate(&InitSyn{}), ErrInvalid)
	require.ErrorIs(t, Validate(InitAck{ZID: routerZID, Cookie: make([]byte, 70000)}), ErrTooLarge)
	require.ErrorIs(t, Validate(&Push{}), ErrInvalid)
	require.NoError(t, Validate(&Push{Body: &Put{}}))
	require.ErrorIs(t, Validate(&Push{Body: &Put{HasTimestamp: true}}), ErrInvalid)
	require.ErrorIs(t, Validate(&Push{WireExpr: WireExpr{Suffix: strings.Repeat("a", 70000)}, Body: &Del{}}), ErrTooLarge)
	require.ErrorIs(t, Validate(&Declare{Body: &DeclareFinal{}}), ErrInvalid)
	require.NoError(t, Validate(&Declare{HasInterestID: true, Body: &DeclareFinal{}}))
	require.ErrorIs(t, Validate(&Response{Body: &Reply{}}), ErrInvalid)
	require.ErrorIs(t, Validate(&Request{Body: &Query{HasBody: true, Body: QueryBody{Encoding: Encoding{Schema: make([]byte, 300)}}}}), ErrTooLarge)
	// a zero ZID still appends (one 0x00 byte) and Len agrees
	m := InitSyn{}
	require.Equal(t, len(m.Append(nil)), m.Len())
	ts := Timestamp{Time: 1}
	require.Equal(t, len(ts.Append(nil)), ts.Len())
}
