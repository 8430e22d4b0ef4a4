package wire

// TransportMessage is a message at batch level (zenoh-wire.md §4). The
// dynamic type is always a pointer: *InitSyn, *InitAck, *OpenSyn,
// *OpenAck, *Close, *KeepAlive, *Frame, *Fragment, *Join or *TransportOAM.
type TransportMessage interface {
	// Append appends the encoded message (header byte included).
	Append(b []byte) []byte
	// Len is len(Append(nil)).
	Len() int
	// TransportID is the message's ID.
	TransportID() TransportID
}

// NetworkMessage is a message inside a FRAME or a reassembled FRAGMENT
// (zenoh-wire.md §9). The dynamic type is always a pointer: *Push,
// *Request, *Response, *ResponseFinal, *Declare, *Interest or *NetworkOAM.
type NetworkMessage interface {
	Append(b []byte) []byte
	Len() int
	NetworkID() NetworkID
}

// ZenohMessage is the body of a PUSH, REQUEST or RESPONSE (zenoh-wire.md
// §10): *Put, *Del, *Query, *Reply or *Err.
type ZenohMessage interface {
	Append(b []byte) []byte
	Len() int
	ZenohID() ZenohID
}

// PushBody is the body of a PUSH: *Put or *Del.
type PushBody interface {
	ZenohMessage
	isPushBody()
}

// RequestBody is the body of a REQUEST: *Query (pico also accepts *Put and
// *Del, zenoh-wire.md §9.3).
type RequestBody interface {
	ZenohMessage
	isRequestBody()
}

// ResponseBody is the body of a RESPONSE: *Reply or *Err.
type ResponseBody interface {
	ZenohMessage
	isResponseBody()
}

// DeclarationBody is the body of a DECLARE (zenoh-wire.md §9.6):
// *DeclareKeyExpr, *UndeclareKeyExpr, *DeclareSubscriber,
// *UndeclareSubscriber, *DeclareQueryable, *UndeclareQueryable,
// *DeclareToken, *UndeclareToken or *DeclareFinal.
type DeclarationBody interface {
	Append(b []byte) []byte
	Len() int
	DeclID() DeclID
}
