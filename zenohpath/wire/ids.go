package wire

// Header byte of every transport, network and zenoh message
// (zenoh-wire.md §2.1):
//
//	 7 6  5  4 3 2 1 0
//	+-+--+--+---------+
//	|Z|F2|F1|   ID    |   ID = low 5 bits, F1 = 0x20, F2 = 0x40,
//	+-+--+--+---------+   Z = 0x80: an extension chain follows
//
// The three ID spaces overlap numerically: transport IDs at batch level,
// network IDs inside FRAME/FRAGMENT, zenoh IDs inside network messages,
// declaration IDs inside DECLARE.
const (
	MaskID byte = 0x1f // message ID bits of a header byte
	FlagZ  byte = 0x80 // extension chain follows
	Flag1  byte = 0x20 // F1
	Flag2  byte = 0x40 // F2
)

// TransportID is the ID of a transport message (zenoh-wire.md §4).
type TransportID byte

// Transport message IDs (zenoh-wire.md §4, table).
const (
	IDTransportOAM TransportID = 0x00 // OAM: F1/F2 = body encoding
	IDInit         TransportID = 0x01 // INIT: F1 = A (ack), F2 = S (size params)
	IDOpen         TransportID = 0x02 // OPEN: F1 = A (ack), F2 = T (lease in seconds)
	IDClose        TransportID = 0x03 // CLOSE: F1 = S (whole session)
	IDKeepAlive    TransportID = 0x04 // KEEP_ALIVE
	IDFrame        TransportID = 0x05 // FRAME: F1 = R (reliable)
	IDFragment     TransportID = 0x06 // FRAGMENT: F1 = R (reliable), F2 = M (more)
	IDJoin         TransportID = 0x07 // JOIN: F1 = T (lease in s), F2 = S (size params)
)

// Transport header flags (zenoh-wire.md §4).
const (
	FlagInitAck      byte = 0x20 // INIT A
	FlagInitSize     byte = 0x40 // INIT S
	FlagOpenAck      byte = 0x20 // OPEN A
	FlagOpenSeconds  byte = 0x40 // OPEN T: lease is in seconds
	FlagCloseSession byte = 0x20 // CLOSE S: close the whole session, not only the link
	FlagReliable     byte = 0x20 // FRAME/FRAGMENT R
	FlagMore         byte = 0x40 // FRAGMENT M: more fragments follow
	FlagJoinSeconds  byte = 0x20 // JOIN T
	FlagJoinSize     byte = 0x40 // JOIN S
)

// NetworkID is the ID of a network message (zenoh-wire.md §9).
type NetworkID byte

// Network message IDs (zenoh-wire.md §9, table).
const (
	IDInterest      NetworkID = 0x19 // INTEREST: F1/F2 = mode
	IDResponseFinal NetworkID = 0x1a // RESPONSE_FINAL
	IDResponse      NetworkID = 0x1b // RESPONSE: F1 = N, F2 = M
	IDRequest       NetworkID = 0x1c // REQUEST: F1 = N, F2 = M
	IDPush          NetworkID = 0x1d // PUSH: F1 = N, F2 = M
	IDDeclare       NetworkID = 0x1e // DECLARE: F1 = I (interest id present)
	IDNetworkOAM    NetworkID = 0x1f // OAM: F1/F2 = body encoding
)

// Network header flags (zenoh-wire.md §9).
const (
	FlagN            byte = 0x20 // WireExpr has a suffix
	FlagM            byte = 0x40 // WireExpr scope declared by the sender
	FlagDeclareI     byte = 0x20 // DECLARE carries an interest id
	interestModeMask byte = 0x60
)

// ZenohID is the ID of a zenoh message, the body of PUSH/REQUEST/RESPONSE
// (zenoh-wire.md §10).
type ZenohID byte

// Zenoh message IDs (zenoh-wire.md §10, table).
const (
	IDPut   ZenohID = 0x01 // PUT: F1 = T (timestamp), F2 = E (encoding)
	IDDel   ZenohID = 0x02 // DEL: F1 = T
	IDQuery ZenohID = 0x03 // QUERY: F1 = C (consolidation), F2 = P (parameters)
	IDReply ZenohID = 0x04 // REPLY: F1 = C
	IDErr   ZenohID = 0x05 // ERR: F2 = E
)

// Zenoh message flags (zenoh-wire.md §10).
const (
	FlagTimestamp     byte = 0x20 // PUT/DEL T
	FlagEncoding      byte = 0x40 // PUT/ERR E
	FlagConsolidation byte = 0x20 // QUERY/REPLY C
	FlagParameters    byte = 0x40 // QUERY P
)

// DeclID is the ID of a declaration body inside DECLARE (zenoh-wire.md §9.6).
type DeclID byte

// Declaration body IDs (zenoh-wire.md §9.6 table).
const (
	IDDeclareKeyExpr      DeclID = 0x00
	IDUndeclareKeyExpr    DeclID = 0x01
	IDDeclareSubscriber   DeclID = 0x02
	IDUndeclareSubscriber DeclID = 0x03
	IDDeclareQueryable    DeclID = 0x04
	IDUndeclareQueryable  DeclID = 0x05
	IDDeclareToken        DeclID = 0x06
	IDUndeclareToken      DeclID = 0x07
	IDDeclareFinal        DeclID = 0x1a
)

// ProtoVersion is the Zenoh 1.x protocol version carried by INIT and JOIN
// (zenoh-wire.md §4.1; Z_PROTO_VERSION in zenoh-pico).
const ProtoVersion byte = 0x09

// WhatAmI is the role of a node (zenoh-wire.md §4.1): 2 bits in INIT/JOIN.
type WhatAmI uint8

// Roles as encoded in INIT/JOIN (not the scouting bitmap).
const (
	WhatAmIRouter WhatAmI = 0
	WhatAmIPeer   WhatAmI = 1
	WhatAmIClient WhatAmI = 2
)

func (w WhatAmI) String() string {
	switch w {
	case WhatAmIRouter:
		return "router"
	case WhatAmIPeer:
		return "peer"
	case WhatAmIClient:
		return "client"
	}
	return "whatami(" + itoa(uint64(w)) + ")"
}

// CloseReason is the u8 reason of a CLOSE message (zenoh-wire.md §4.4).
type CloseReason uint8

// Close reasons (zenoh-wire.md §4.4).
const (
	CloseGeneric          CloseReason = 0
	CloseUnsupported      CloseReason = 1
	CloseInvalid          CloseReason = 2
	CloseMaxSessions      CloseReason = 3 // pico: MAX_TRANSPORTS
	CloseMaxLinks         CloseReason = 4
	CloseExpired          CloseReason = 5 // lease expired (pico sends 23 05)
	CloseUnresponsive     CloseReason = 6 // Rust only
	CloseConnectionToSelf CloseReason = 7 // Rust only
)

func (c CloseReason) String() string {
	switch c {
	case CloseGeneric:
		return "GENERIC"
	case CloseUnsupported:
		return "UNSUPPORTED"
	case CloseInvalid:
		return "INVALID"
	case CloseMaxSessions:
		return "MAX_SESSIONS"
	case CloseMaxLinks:
		return "MAX_LINKS"
	case CloseExpired:
		return "EXPIRED"
	case CloseUnresponsive:
		return "UNRESPONSIVE"
	case CloseConnectionToSelf:
		return "CONNECTION_TO_SELF"
	}
	return "UNKNOWN"
}

// Resolution defaults (zenoh-wire.md §4.1, §5): bits 0-1 frame SN, bits 2-3
// request id; 00 = 8, 01 = 16, 10 = 32, 11 = 64 bit.
const (
	DefaultResolution     uint8  = 0x0a  // 32-bit SN, 32-bit request id
	DefaultBatchUnicast   uint16 = 65535 // INIT without S
	DefaultBatchMulticast uint16 = 8192  // JOIN without S
)

// SNMask returns the sequence-number mask for a resolution byte's SN field
// (zenoh-wire.md §5: 32 bit means a 28-bit mask on both implementations).
func SNMask(resolution uint8) uint64 {
	switch resolution & 0x03 {
	case 0:
		return 0x7f
	case 1:
		return 0x3fff
	case 2:
		return 0x0fff_ffff
	}
	return 0x7fff_ffff_ffff_ffff
}

func itoa(v uint64) string {
	var buf [20]byte
	i := len(buf)
	for {
		i--
		buf[i] = byte('0' + v%10)
		v /= 10
		if v == 0 {
			break
		}
	}
	return string(buf[i:])
}
