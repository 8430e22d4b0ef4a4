package wire

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestPush(t *testing.T) {
	// pico publisher: PUSH M scope 1, PUT
	trio(t, Push{WireExpr: WireExpr{Scope: 1, Mapping: MappingSender}, Body: &Put{Payload: []byte("[   0] Pub from Pico!")}},
		unhex(t, `5d 01 01 15 "[   0] Pub from Pico!"`), 0, ParsePush)
	// router push with full key and encoding 0 + attachment
	trio(t, Push{WireExpr: WireExpr{Suffix: "demo/example/fake-router"},
		Body: &Put{HasEncoding: true, Attachment: []byte{1, 2}, Payload: []byte("router sample 1")}},
		unhex(t, `3d 00 18 "demo/example/fake-router" c1 00 43 02 0102 0f "router sample 1"`), 0, ParsePush)
	// pub_attachment: timestamp, encoding with schema, attachment
	ts := Timestamp{Time: 7713657436024128632, ZID: picoZID}
	trio(t, Push{WireExpr: WireExpr{Scope: 1, Mapping: MappingSender},
		Body: &Put{HasTimestamp: true, Timestamp: ts, HasEncoding: true, Encoding: Encoding{ID: 1, Schema: []byte("utf8")},
			Attachment: unhex(t, "0206736f75726365014305696e6465780130"), Payload: []byte("[   0] Pub from Pico!")}},
		unhex(t, `5d01e1f888938a9cd29a866b101bea48b64ff8c429c24d0a02d888206803047574663843120206736f75726365014305696e6465780130155b202020305d205075622066726f6d205069636f21`), 0, ParsePush)
	// DEL with common extensions (QoS express, timestamp, NodeId) and source info
	trio(t, Push{WireExpr: WireExpr{Scope: 7, Suffix: "/x"}, NetExt: NetExt{HasQoS: true, QoS: NewQoS(PriorityRealTime, CongestionBlock, true),
		HasTimestamp: true, Timestamp: Timestamp{Time: 5, ZID: routerZID}, HasNodeID: true, NodeID: 3},
		Body: &Del{HasSourceInfo: true, SourceInfo: SourceInfo{ZID: routerZID, EID: 2, SN: 9}}},
		unhex(t, `bd 07 02 "/x" a1 19 c2 0a 05 08 0123456789abcdef 33 03 82 41 0b 70 0123456789abcdef 02 09`), 0, ParsePush)
}

func TestRequest(t *testing.T) {
	// pico z_get
	trio(t, Request{ID: 1, WireExpr: WireExpr{Suffix: "demo/example/**", Mapping: MappingSender},
		NetExt: NetExt{HasQoS: true, QoS: RequestQoS}, HasTimeout: true, Timeout: 10 * time.Second,
		Body: &Query{HasConsolidation: true, Consolidation: 2}},
		unhex(t, `fc 01 00 0f "demo/example/**" a1 0d 26 904e 23 02`), 0, ParseRequest)
	// with query body ext
	trio(t, Request{ID: 1, WireExpr: WireExpr{Suffix: "demo/example/**", Mapping: MappingSender},
		NetExt: NetExt{HasQoS: true, QoS: RequestQoS}, HasTimeout: true, Timeout: 10 * time.Second,
		Body: &Query{HasConsolidation: true, Consolidation: 2, HasBody: true, Body: QueryBody{Payload: []byte("query payload")}}},
		unhex(t, `fc01000f64656d6f2f6578616d706c652f2a2aa10d26904ea302430e007175657279207061796c6f6164`), 0, ParseRequest)
	// router request with parameters; target, budget, attachment
	trio(t, Request{ID: 1, WireExpr: WireExpr{Suffix: "q"}, HasTarget: true, Target: TargetAllComplete, HasBudget: true, Budget: 4,
		Body: &Query{Parameters: "from=router", Attachment: []byte{7}}},
		unhex(t, `bc 01 00 01 "q" b4 02 25 04 c3 0b "from=router" 45 01 07`), 0, ParseRequest)
}

func TestResponse(t *testing.T) {
	zid := MustZID(unhex(t, "c229c0f9603639ee60eb881b5e5394e8"))
	trio(t, Response{ID: 1, WireExpr: WireExpr{Suffix: "demo/example/zenoh-pico-queryable", Mapping: MappingSender},
		HasResponderID: true, ResponderID: EntityGlobalID{ZID: zid},
		Body: &Reply{Body: &Put{Payload: []byte("Queryable from Pico!")}}},
		unhex(t, `fb 01 00 21 "demo/example/zenoh-pico-queryable" 43 12 f0 c229c0f9603639ee60eb881b5e5394e8 00 04 01 14 "Queryable from Pico!"`), 0, ParseResponse)
	trio(t, Response{ID: 300, WireExpr: WireExpr{Scope: 2},
		Body: &Err{HasEncoding: true, Encoding: Encoding{ID: 4}, Shm: false, Payload: []byte("bad")}},
		unhex(t, `1b ac02 02 45 08 03 "bad"`), 0, ParseResponse)
	trio(t, Response{ID: 2, WireExpr: WireExpr{Suffix: "k"},
		Body: &Reply{HasConsolidation: true, Consolidation: ConsolidationLatest, Body: &Del{}}},
		unhex(t, `3b 02 00 01 "k" 24 03 02`), 0, ParseResponse)
	trio(t, ResponseFinal{ID: 1}, unhex(t, "1a 01"), 0, ParseResponseFinal)
	trio(t, ResponseFinal{ID: 1, NetExt: NetExt{HasQoS: true, QoS: 8}}, unhex(t, "9a 01 21 08"), 0, ParseResponseFinal)
}

func TestDeclare(t *testing.T) {
	trio(t, Declare{Body: &DeclareKeyExpr{ID: 1, WireExpr: WireExpr{Suffix: "demo/example"}}},
		unhex(t, `1e 20 01 00 0c "demo/example"`), 0, ParseDeclare)
	trio(t, Declare{Body: &DeclareSubscriber{ID: 1, WireExpr: WireExpr{Suffix: "demo/example/**", Mapping: MappingSender}}},
		unhex(t, `1e 62 01 00 0f "demo/example/**"`), 0, ParseDeclare)
	trio(t, Declare{Body: &DeclareSubscriber{ID: 1, WireExpr: WireExpr{Scope: 1, Suffix: "/**", Mapping: MappingSender}}},
		unhex(t, `1e 62 01 01 03 "/**"`), 0, ParseDeclare)
	trio(t, Declare{HasInterestID: true, InterestID: 2, Body: &DeclareSubscriber{ID: 902, WireExpr: WireExpr{Suffix: "demo/example/zenoh-pico-pub"}}},
		unhex(t, `3e 02 22 8607 00 1b "demo/example/zenoh-pico-pub"`), 0, ParseDeclare)
	trio(t, Declare{HasInterestID: true, InterestID: 2, Body: &DeclareFinal{}}, unhex(t, "3e 02 1a"), 0, ParseDeclare)
	trio(t, Declare{Body: &DeclareQueryable{ID: 1, WireExpr: WireExpr{Scope: 1, Mapping: MappingSender}}}, unhex(t, "1e 44 01 01"), 0, ParseDeclare)
	trio(t, Declare{NetExt: NetExt{HasQoS: true, QoS: DeclareQoS},
		Body: &DeclareQueryable{ID: 1, WireExpr: WireExpr{Suffix: "q"}, HasInfo: true, Complete: true, Distance: 2}},
		unhex(t, `9e 21 08 a4 01 00 01 "q" 21 8104`), 0, ParseDeclare)
	trio(t, Declare{Body: &DeclareToken{ID: 1, WireExpr: WireExpr{Scope: 1, Mapping: MappingSender}}}, unhex(t, "1e 46 01 01"), 0, ParseDeclare)
	trio(t, Declare{Body: &UndeclareToken{ID: 1, HasWireExpr: true, WireExpr: WireExpr{Scope: 1, Mapping: MappingSender}}},
		unhex(t, "1e 87 01 5f 02 02 01"), 0, ParseDeclare)
	trio(t, Declare{Body: &UndeclareSubscriber{ID: 902}}, unhex(t, "1e 03 8607"), 0, ParseDeclare)
	trio(t, Declare{Body: &UndeclareSubscriber{ID: 5, HasWireExpr: true, WireExpr: WireExpr{Scope: 0, Suffix: "a/b"}}},
		unhex(t, `1e 83 05 5f 05 01 00 "a/b"`), 0, ParseDeclare)
	trio(t, Declare{Body: &UndeclareQueryable{ID: 1}}, unhex(t, "1e 05 01"), 0, ParseDeclare)
	trio(t, Declare{Body: &UndeclareKeyExpr{ID: 1}}, unhex(t, "1e 01 01"), 0, ParseDeclare)
	_, _, err := ParseDeclare(unhex(t, "08"), 0x1e)
	require.ErrorIs(t, err, ErrUnknownMessage)
	_, _, err = ParseDeclare(unhex(t, "83 05 5e 00"), 0x1e) // unknown mandatory ext on the body
	require.ErrorIs(t, err, ErrUnknownMandatoryExt)
}

func TestInterest(t *testing.T) {
	trio(t, Interest{Mode: InterestCurrentFuture, ID: 2, Options: 0xd3, WireExpr: WireExpr{Scope: 1, Mapping: MappingSender}},
		unhex(t, "79 02 d3 01"), 0, ParseInterest)
	trio(t, Interest{Mode: InterestCurrent, ID: 1, Options: 0x79, WireExpr: WireExpr{Suffix: "group1/**", Mapping: MappingSender}},
		unhex(t, `39 01 79 00 09 "group1/**"`), 0, ParseInterest)
	trio(t, Interest{Mode: InterestFinal, ID: 2}, unhex(t, "19 02"), 0, ParseInterest)
	trio(t, Interest{Mode: InterestFuture, ID: 3, Options: InterestTokens | InterestKeyExprs, NetExt: NetExt{HasQoS: true, QoS: 8}},
		unhex(t, "d9 03 09 21 08"), 0, ParseInterest)
	require.Equal(t, "K,S,R,M,A", InterestOptions(0xd3).String())
}

func TestNetworkOAM(t *testing.T) {
	trio(t, NetworkOAM{ID: 1, Body: OAMBody{Enc: ExtEncZBuf, Body: []byte{1, 2, 3}}}, unhex(t, "5f 01 03 010203"), 0, ParseNetworkOAM)
	trio(t, NetworkOAM{ID: 1, NetExt: NetExt{HasQoS: true, QoS: 8}, Body: OAMBody{Enc: ExtEncUnit}}, unhex(t, "9f 01 21 08"), 0, ParseNetworkOAM)
}

func TestParserNetworkDispatch(t *testing.T) {
	var p Parser
	_, _, err := p.Network([]byte{0x05, 0x00})
	require.ErrorIs(t, err, ErrNotNetwork)
	_, _, err = p.Network([]byte{0x10})
	require.ErrorIs(t, err, ErrUnknownMessage)
	m, n, err := p.Network(unhex(t, `5d 01 01 02 "hi"`))
	require.NoError(t, err)
	require.Equal(t, 6, n)
	push := m.(*Push)
	require.Equal(t, []byte("hi"), push.Body.(*Put).Payload)
	// PUSH with a QUERY body is rejected
	_, _, err = p.Network(unhex(t, `1d 01 03`))
	require.ErrorIs(t, err, ErrUnknownMessage)
	zm, n, err := ParseZenohMessage(unhex(t, `01 02 "hi"`))
	require.NoError(t, err)
	require.Equal(t, 4, n)
	require.Equal(t, &Put{Payload: []byte("hi")}, zm)
}

func TestWalkBatchMultiFrame(t *testing.T) {
	// Rust-style batch: FRAME(R) [PUSH, RESPONSE_FINAL] FRAME(BE) [RESPONSE_FINAL] KEEP_ALIVE
	batch := unhex(t, `25 07 5d 01 01 02 "hi" 1a 03 05 09 1a 04 04`)
	var p Parser
	var got []string
	err := p.WalkBatch(batch, func(tm TransportMessage, nm NetworkMessage) error {
		switch {
		case nm != nil:
			got = append(got, "net")
		default:
			got = append(got, "transport")
		}
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, []string{"transport", "net", "net", "transport", "net", "transport"}, got)
	// decode error offsets are batch offsets
	err = p.WalkBatch(unhex(t, `04 25 00 5d 01 01 09 "x"`), func(TransportMessage, NetworkMessage) error { return nil })
	var we *Error
	require.ErrorAs(t, err, &we)
	require.ErrorIs(t, err, ErrTruncated)
	require.Equal(t, "PUSH", we.Msg)
	require.Equal(t, 6, we.Offset)
}

func TestDeclarationBodies(t *testing.T) {
	trio(t, DeclareKeyExpr{ID: 1, WireExpr: WireExpr{Suffix: "demo"}}, unhex(t, `20 01 00 04 "demo"`), 0, ParseDeclareKeyExpr)
	trio(t, UndeclareKeyExpr{ID: 1}, unhex(t, `01 01`), 0, ParseUndeclareKeyExpr)
	trio(t, DeclareSubscriber{ID: 1, WireExpr: WireExpr{Scope: 1, Mapping: MappingSender}}, unhex(t, `42 01 01`), 0, ParseDeclareSubscriber)
	trio(t, UndeclareSubscriber{ID: 1}, unhex(t, `03 01`), 0, ParseUndeclareSubscriber)
	trio(t, DeclareQueryable{ID: 1, WireExpr: WireExpr{Scope: 1, Mapping: MappingSender}}, unhex(t, `44 01 01`), 0, ParseDeclareQueryable)
	trio(t, UndeclareQueryable{ID: 1}, unhex(t, `05 01`), 0, ParseUndeclareQueryable)
	trio(t, DeclareToken{ID: 1, WireExpr: WireExpr{Scope: 1, Mapping: MappingSender}}, unhex(t, `46 01 01`), 0, ParseDeclareToken)
	trio(t, UndeclareToken{ID: 1, HasWireExpr: true, WireExpr: WireExpr{Scope: 1, Mapping: MappingSender}}, unhex(t, `87 01 5f 02 02 01`), 0, ParseUndeclareToken)
	trio(t, DeclareFinal{Exts: []Ext{{Header: 0x01}}}, unhex(t, `9a 01`), 0, ParseDeclareFinal)
	// AppendFrame builds what pico expects: one FRAME, messages to the end
	b := AppendFrame(nil, true, 11259375,
		&Declare{HasInterestID: true, InterestID: 2, Body: &DeclareSubscriber{ID: 902, WireExpr: WireExpr{Suffix: "demo/example/zenoh-pico-pub"}}},
		&Declare{HasInterestID: true, InterestID: 2, Body: &DeclareFinal{}})
	require.Equal(t, unhex(t, "25ef9baf053e02228607001b64656d6f2f6578616d706c652f7a656e6f682d7069636f2d7075623e021a"), b)
}
