package wire

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPutDelQueryReplyErr(t *testing.T) {
	trio(t, Put{Payload: []byte("Pub from Pico!")}, unhex(t, `01 0e "Pub from Pico!"`), 0, ParsePut)
	trio(t, Put{HasEncoding: true, Encoding: Encoding{ID: 1, Schema: []byte("utf8")}, Shm: true, Exts: []Ext{{Header: 0x0e}}, Payload: []byte{}},
		unhex(t, `c1 03 04 "utf8" 92 0e 00`), 0, ParsePut)
	trio(t, Del{}, unhex(t, "02"), 0, ParseDel)
	trio(t, Del{HasTimestamp: true, Timestamp: Timestamp{Time: 1, ZID: routerZID}, Attachment: []byte("a")},
		unhex(t, `a2 01 08 0123456789abcdef 42 01 "a"`), 0, ParseDel)
	trio(t, Query{HasConsolidation: true, Consolidation: 2}, unhex(t, "23 02"), 0, ParseQuery)
	trio(t, Query{Parameters: "from=router"}, unhex(t, `43 0b "from=router"`), 0, ParseQuery)
	trio(t, Query{HasSourceInfo: true, SourceInfo: SourceInfo{ZID: MustZID([]byte{0xaa}), EID: 1, SN: 2}, HasBody: true,
		Body: QueryBody{Encoding: Encoding{ID: 5}, Payload: []byte("{}")}, Attachment: []byte{}},
		unhex(t, `83 c1 04 00 aa 01 02 c3 03 0a "{}" 45 00`), 0, ParseQuery)
	trio(t, Reply{Body: &Put{Payload: []byte("x")}}, unhex(t, `04 01 01 "x"`), 0, ParseReply)
	trio(t, Reply{Exts: []Ext{{Header: 0x0f}}, Body: &Del{}}, unhex(t, `84 0f 02`), 0, ParseReply)
	trio(t, Err{Payload: []byte("no")}, unhex(t, `05 02 "no"`), 0, ParseErr)
	trio(t, Err{HasEncoding: true, Encoding: Encoding{ID: 4}, HasSourceInfo: true, SourceInfo: SourceInfo{ZID: MustZID([]byte{0xaa})}, Payload: []byte("no")},
		unhex(t, `c5 08 41 04 00 aa 00 00 02 "no"`), 0, ParseErr)

	// malformed structured extensions are errors at the extension's offset
	_, _, err := ParsePut(unhex(t, `41 02 00 aa 00`), 0x81) // SourceInfo missing sn
	require.ErrorIs(t, err, ErrTruncated)
	var we *Error
	require.ErrorAs(t, err, &we)
	require.Equal(t, 0, we.Offset)
	require.Equal(t, "source_info", we.Field)
	_, _, err = ParsePut(unhex(t, `12 00`), 0x81) // SHM marker without... fine, then payload
	require.NoError(t, err)
	_, _, err = ParsePut(unhex(t, `1f 00`), 0x81) // unknown mandatory
	require.ErrorIs(t, err, ErrUnknownMandatoryExt)
	_, _, err = ParsePush(unhex(t, `01 a1 ff03 01 00`), 0x9d) // QoS > 0xff
	require.ErrorIs(t, err, ErrTooLarge)
	_, _, err = ParsePush(unhex(t, `01 42 02 01 00 01 00`), 0x9d) // timestamp with zid length 0
	require.ErrorIs(t, err, ErrInvalid)
	_, _, err = ParseDel(unhex(t, `01 11 0123456789abcdef0123456789abcdef01`), 0x22) // 17-byte ZID
	require.ErrorIs(t, err, ErrInvalid)
	_, _, err = ParsePut(unhex(t, `ffffffff0f`), 0x41) // encoding id above u16
	require.ErrorIs(t, err, ErrTooLarge)
}

func TestQoS(t *testing.T) {
	q := NewQoS(PriorityRealTime, CongestionBlock, true)
	require.Equal(t, QoS(0x19), q)
	require.Equal(t, PriorityRealTime, q.Priority())
	require.Equal(t, CongestionBlock, q.CongestionControl())
	require.True(t, q.Express())
	require.Equal(t, "prio 5,block", RequestQoS.String())
	require.Equal(t, DefaultQoS, NetExt{}.EffectiveQoS())
	require.Equal(t, "Data", PriorityData.String())
	require.Equal(t, "EXPIRED", CloseExpired.String())
	require.Equal(t, "client", WhatAmIClient.String())
	require.Equal(t, uint64(0x0fff_ffff), SNMask(DefaultResolution))
	require.Equal(t, "zenoh/string", Encoding{ID: 1}.Name())
}
