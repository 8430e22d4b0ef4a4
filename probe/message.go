package probe

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// The gateway publishes a ping to each device at 5 Hz on PingKey (gateway →
// device, reliable channel, express) and the device's responder answers each ping
// on PongKey (device → gateway, best effort, express). Both payloads have the
// same fixed, little-endian layout:
//
//	offset size field
//	 0     1    version     Version (1)
//	 1     1    kind        1 ping, 2 pong
//	 2     2    flags       0; a responder copies them
//	 4     4    seq         u32, chosen by the gateway, echoed
//	 8     8    gw_send     u64 ns, gateway clock, opaque to the device, echoed
//	16     8    dev_recv    u64 ns, device clock when the ping arrived (0 in a ping)
//	24     8    dev_send    u64 ns, device clock when the pong left (0 in a ping)
//	32
//
// The gateway's RTT is its own receive time − its send time − (dev_send −
// dev_recv): the device's processing time does not count (Message.RTT). The
// device clock needs no synchronisation, only a monotonic counter.
const (
	// Version is the layout version above.
	Version = 1
	// Size is the size of a ping and of a pong, bytes.
	Size = 32
)

// Kind tells a ping from a pong.
type Kind uint8

const (
	Ping Kind = 1
	Pong Kind = 2
)

func (k Kind) String() string {
	switch k {
	case Ping:
		return "ping"
	case Pong:
		return "pong"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Message is one decoded ping or pong.
type Message struct {
	Kind    Kind
	Flags   uint16
	Seq     uint32
	GwSend  uint64 // ns, gateway clock
	DevRecv uint64 // ns, device clock
	DevSend uint64 // ns, device clock
}

// Errors of Decode, matched with errors.Is.
var (
	ErrSize    = errors.New("probe: wrong size")
	ErrVersion = errors.New("probe: unknown version")
	ErrKind    = errors.New("probe: unknown kind")
)

// Append appends the encoded message (Size bytes) to b.
func (p Message) Append(b []byte) []byte {
	b = append(b, Version, byte(p.Kind))
	b = binary.LittleEndian.AppendUint16(b, p.Flags)
	b = binary.LittleEndian.AppendUint32(b, p.Seq)
	b = binary.LittleEndian.AppendUint64(b, p.GwSend)
	b = binary.LittleEndian.AppendUint64(b, p.DevRecv)
	return binary.LittleEndian.AppendUint64(b, p.DevSend)
}

// Len is the encoded size, Size.
func (Message) Len() int { return Size }

// Decode decodes a ping or pong. It never panics and rejects any length
// other than Size (ErrSize), an unknown version (ErrVersion) and an unknown
// kind (ErrKind).
func Decode(b []byte) (Message, error) {
	if len(b) != Size {
		return Message{}, fmt.Errorf("%w: %d bytes, want %d", ErrSize, len(b), Size)
	}
	if b[0] != Version {
		return Message{}, fmt.Errorf("%w %d", ErrVersion, b[0])
	}
	p := Message{
		Kind:    Kind(b[1]),
		Flags:   binary.LittleEndian.Uint16(b[2:]),
		Seq:     binary.LittleEndian.Uint32(b[4:]),
		GwSend:  binary.LittleEndian.Uint64(b[8:]),
		DevRecv: binary.LittleEndian.Uint64(b[16:]),
		DevSend: binary.LittleEndian.Uint64(b[24:]),
	}
	if p.Kind != Ping && p.Kind != Pong {
		return Message{}, fmt.Errorf("%w %d", ErrKind, b[1])
	}
	return p, nil
}

// Respond is the device side: it turns a ping into its pong, with the
// device's receive and send times (ns on any monotonic device clock). It is
// pure, so simulators call it from their own loops; the C responder in
// firmware/responder does the same on the device. Errors: those of Decode,
// and ErrKind for a pong.
func Respond(ping []byte, devRecv, devSend uint64) ([]byte, error) {
	p, err := Decode(ping)
	if err != nil {
		return nil, err
	}
	if p.Kind != Ping {
		return nil, fmt.Errorf("%w: got a %v, want a ping", ErrKind, p.Kind)
	}
	p.Kind, p.DevRecv, p.DevSend = Pong, devRecv, devSend
	return p.Append(make([]byte, 0, Size)), nil
}
