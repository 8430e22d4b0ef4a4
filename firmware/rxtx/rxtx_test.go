package rxtx_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/firmware/rxtx"
)

func TestParseResult(t *testing.T) {
	out := "ready\n" + `{"rxtx":1,"shim":true,"seconds":3.004580,"rx":{"samples":91,"stamped":90,"p50_ms":0.1900,"p95_ms":0.2600,"p99_ms":3.7200,"max_ms":4.0000},"tx":{"puts":31,"errors":0,"msg_per_s":10.318}}` + "\n"
	r, err := rxtx.ParseResult([]byte(out))
	require.NoError(t, err)
	require.True(t, r.Shim)
	require.Equal(t, int64(90), r.RX.Stamped)
	require.Equal(t, int64(91), r.RX.Samples)
	require.Equal(t, 3.72, r.RX.P99Ms)
	require.Equal(t, int64(31), r.TX.Puts)
	require.Equal(t, 10.318, r.TX.MsgPerS)
	_, err = rxtx.ParseResult([]byte("ready\n"))
	require.ErrorIs(t, err, rxtx.ErrNoResult)
	_, err = rxtx.ParseResult([]byte(`{"rxtx":1,"shim":`))
	require.Error(t, err)
}
