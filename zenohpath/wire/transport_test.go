package wire

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var (
	picoZID   = MustZID(unhexS("1bea48b64ff8c429c24d0a02d8882068"))
	routerZID = MustZID(unhexS("0123456789abcdef"))
)

func unhexS(s string) []byte { return unhex(&testing.T{}, s) }

func TestInitSyn(t *testing.T) {
	trio(t, InitSyn{Version: 9, WhatAmI: WhatAmIClient, ZID: picoZID, Resolution: DefaultResolution, BatchSize: 65535, Patch: 1},
		unhex(t, "81 09 f2 1bea48b64ff8c429c24d0a02d8882068 27 01"), 0, ParseInitSyn)
	trio(t, InitSyn{Version: 9, WhatAmI: WhatAmIClient, ZID: picoZID, HasSize: true, Resolution: 0x0a, BatchSize: 2048, Patch: 1},
		unhex(t, "c1 09 f2 1bea48b64ff8c429c24d0a02d8882068 0a 00 08 27 01"), 0, ParseInitSyn)
	_, _, err := ParseInitSyn(unhex(t, "09 00 01"), 0xa1)
	require.ErrorIs(t, err, ErrInvalid)
}

func TestInitAck(t *testing.T) {
	trio(t, InitAck{Version: 9, WhatAmI: WhatAmIRouter, ZID: routerZID, Resolution: DefaultResolution, BatchSize: 65535,
		Cookie: unhex(t, "23d2a1162f3fd891"), Patch: 1},
		unhex(t, "a1 09 70 0123456789abcdef 08 23d2a1162f3fd891 27 01"), 0, ParseInitAck)
	trio(t, InitAck{Version: 9, WhatAmI: WhatAmIRouter, ZID: routerZID, HasSize: true, Resolution: 0x0a, BatchSize: 2048,
		Cookie: []byte{1}, Exts: []Ext{{Header: ExtInitQoS}}},
		unhex(t, "e1 09 70 0123456789abcdef 0a 00 08 01 01 01"), 0, ParseInitAck)
}

func TestOpen(t *testing.T) {
	trio(t, OpenSyn{Lease: 10 * time.Second, InitialSN: 0, Cookie: unhex(t, "23d2a1162f3fd891")},
		unhex(t, "42 0a 00 08 23d2a1162f3fd891"), 0, ParseOpenSyn)
	trio(t, OpenAck{Lease: 10 * time.Second, InitialSN: 11259375}, unhex(t, "62 0a ef9baf05"), 0, ParseOpenAck)
	trio(t, OpenAck{Lease: 2500 * time.Millisecond, InitialSN: 1}, unhex(t, "22 c413 01"), 0, ParseOpenAck)
}

func TestCloseKeepAlive(t *testing.T) {
	trio(t, Close{Session: true, Reason: CloseExpired}, unhex(t, "23 05"), 0, ParseClose)
	trio(t, Close{Reason: CloseGeneric}, unhex(t, "03 00"), 0, ParseClose)
	trio(t, KeepAlive{}, unhex(t, "04"), 0, ParseKeepAlive)
}

func TestFrameFragment(t *testing.T) {
	trio(t, Frame{Reliable: true, SN: 11259375, Payload: unhex(t, "1a01")}, unhex(t, "25 ef9baf05 1a01"), 5, ParseFrame)
	trio(t, Frame{SN: 3, HasQoS: true, QoS: 2, Payload: unhex(t, "1a01")}, unhex(t, "85 03 31 02 1a01"), 4, ParseFrame)
	trio(t, Fragment{More: true, SN: 1, First: true, Payload: []byte("abc")}, unhex(t, `c6 01 02 "abc"`), 3, ParseFragment)
	trio(t, Fragment{Reliable: true, SN: 2, Payload: []byte("z")}, unhex(t, `26 02 "z"`), 2, ParseFragment)
	trio(t, Fragment{Reliable: true, SN: 2, Drop: true, HasQoS: true, QoS: 1, Payload: []byte("z")}, unhex(t, `a6 02 b1 01 03 "z"`), 5, ParseFragment)
}

func TestJoin(t *testing.T) {
	trio(t, Join{Version: 9, WhatAmI: WhatAmIPeer, ZID: routerZID, Resolution: DefaultResolution, BatchSize: 8192,
		Lease: 10 * time.Second, NextSNReliable: 5, NextSNBestEffort: 7, Patch: 1},
		unhex(t, "a7 09 71 0123456789abcdef 0a 05 07 27 01"), 0, ParseJoin)
	trio(t, Join{Version: 9, WhatAmI: WhatAmIPeer, ZID: routerZID, HasSize: true, Resolution: 0x0a, BatchSize: 2048,
		Lease: 1500 * time.Millisecond, Exts: []Ext{{Header: ExtJoinQoS, Body: []byte{0, 0}}}},
		unhex(t, "c7 09 71 0123456789abcdef 0a 00 08 dc0b 00 00 51 02 0000"), 0, ParseJoin)
}

func TestTransportOAM(t *testing.T) {
	trio(t, TransportOAM{ID: 1, Body: OAMBody{Enc: ExtEncZBuf, Body: []byte("xy")}}, unhex(t, `40 01 02 "xy"`), 0, ParseTransportOAM)
	trio(t, TransportOAM{ID: 300, HasQoS: true, QoS: 1, Body: OAMBody{Enc: ExtEncZ64, Value: 9}}, unhex(t, `a0 ac02 31 01 09`), 0, ParseTransportOAM)
}

func TestParserTransportDispatch(t *testing.T) {
	var p Parser
	m, n, err := p.Transport(unhex(t, "23 05"))
	require.NoError(t, err)
	require.Equal(t, 2, n)
	require.Equal(t, &Close{Session: true, Reason: CloseExpired}, m)
	_, _, err = p.Transport(unhex(t, "08"))
	require.ErrorIs(t, err, ErrUnknownMessage)
	_, _, err = p.Transport(nil)
	require.ErrorIs(t, err, ErrTruncated)
	_, _, err = p.Transport(unhex(t, "62 0a"))
	var we *Error
	require.ErrorAs(t, err, &we)
	require.Equal(t, 2, we.Offset)
	require.Equal(t, "OpenAck", we.Msg)
	require.Equal(t, "initial_sn", we.Field)
}

func TestStreamBatch(t *testing.T) {
	b := AppendStreamBatch(nil, []byte{0x04})
	b = AppendStreamBatch(b, []byte{0x23, 0x05})
	require.Equal(t, unhex(t, "0100 04 0200 2305"), b)
	batch, rest, err := SplitStreamBatch(b)
	require.NoError(t, err)
	require.Equal(t, []byte{4}, batch)
	batch, rest, err = SplitStreamBatch(rest)
	require.NoError(t, err)
	require.Equal(t, []byte{0x23, 5}, batch)
	require.Empty(t, rest)
	_, _, err = SplitStreamBatch([]byte{3, 0, 1})
	require.ErrorIs(t, err, ErrTruncated)
	require.Equal(t, 2046, MaxStreamBatchContent(2048))
}

func TestInitExtOrder(t *testing.T) {
	// a Rust-style chain sorted by ID: QoS (unit), Shm (ZBuf), Patch, RegionName (ZBuf)
	trio(t, InitSyn{Version: 9, WhatAmI: WhatAmIPeer, ZID: routerZID, Resolution: DefaultResolution, BatchSize: 65535, Patch: 1,
		Exts: []Ext{{Header: ExtInitQoS}, {Header: ExtInitShm, Body: []byte{1}}, {Header: 0x48, Body: []byte("r")}}},
		unhex(t, `81 09 71 0123456789abcdef 81 c2 01 01 a7 01 48 01 "r"`), 0, ParseInitSyn)
}
