package bridge

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
)

// The probe protocol (docs/probe.md). The gateway publishes a ping to each
// device at 5 Hz on
//
//	@picobridge/probe/<device>/ping    gateway → device, reliable channel, express
//
// and the device's responder answers each ping on
//
//	@picobridge/probe/<device>/pong    device → gateway, best effort, express
//
// The responder's subscription to its ping key is how a device announces
// its name. Both payloads have the same fixed, little-endian layout:
//
//	offset size field
//	 0     1    version     ProbeVersion (1)
//	 1     1    kind        1 ping, 2 pong
//	 2     2    flags       0; a responder copies them
//	 4     4    seq         u32, chosen by the gateway, echoed
//	 8     8    gw_send     u64 ns, gateway clock, opaque to the device, echoed
//	16     8    dev_recv    u64 ns, device clock when the ping arrived (0 in a ping)
//	24     8    dev_send    u64 ns, device clock when the pong left (0 in a ping)
//	32
//
// The gateway's RTT is its own receive time − its send time − (dev_send −
// dev_recv): the device's processing time does not count. The device clock
// needs no synchronisation, only a monotonic counter.
const (
	// ProbePrefix is the first chunks of every probe key. A chunk starting
	// with @ is verbatim in Zenoh 1.x: wildcard subscriptions do not match it.
	ProbePrefix = "@picobridge/probe/"
	// ProbeVersion is the layout version above.
	ProbeVersion = 1
	// ProbeSize is the size of a ping and of a pong, bytes.
	ProbeSize = 32
)

// ProbeKind tells a ping from a pong.
type ProbeKind uint8

const (
	ProbePing ProbeKind = 1
	ProbePong ProbeKind = 2
)

func (k ProbeKind) String() string {
	switch k {
	case ProbePing:
		return "ping"
	case ProbePong:
		return "pong"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Probe is one decoded ping or pong.
type Probe struct {
	Kind    ProbeKind
	Flags   uint16
	Seq     uint32
	GwSend  uint64 // ns, gateway clock
	DevRecv uint64 // ns, device clock
	DevSend uint64 // ns, device clock
}

// Errors of DecodeProbe, matched with errors.Is.
var (
	ErrProbeSize    = errors.New("probe: wrong size")
	ErrProbeVersion = errors.New("probe: unknown version")
	ErrProbeKind    = errors.New("probe: unknown kind")
)

// Append appends the encoded probe to b.
func (p Probe) Append(b []byte) []byte {
	b = append(b, ProbeVersion, byte(p.Kind))
	b = binary.LittleEndian.AppendUint16(b, p.Flags)
	b = binary.LittleEndian.AppendUint32(b, p.Seq)
	b = binary.LittleEndian.AppendUint64(b, p.GwSend)
	b = binary.LittleEndian.AppendUint64(b, p.DevRecv)
	return binary.LittleEndian.AppendUint64(b, p.DevSend)
}

// Len is the encoded size, ProbeSize.
func (Probe) Len() int { return ProbeSize }

// DecodeProbe decodes a ping or pong. It never panics and rejects any
// length other than ProbeSize, an unknown version and an unknown kind.
func DecodeProbe(b []byte) (Probe, error) {
	if len(b) != ProbeSize {
		return Probe{}, fmt.Errorf("%w: %d bytes, want %d", ErrProbeSize, len(b), ProbeSize)
	}
	if b[0] != ProbeVersion {
		return Probe{}, fmt.Errorf("%w %d", ErrProbeVersion, b[0])
	}
	p := Probe{
		Kind:    ProbeKind(b[1]),
		Flags:   binary.LittleEndian.Uint16(b[2:]),
		Seq:     binary.LittleEndian.Uint32(b[4:]),
		GwSend:  binary.LittleEndian.Uint64(b[8:]),
		DevRecv: binary.LittleEndian.Uint64(b[16:]),
		DevSend: binary.LittleEndian.Uint64(b[24:]),
	}
	if p.Kind != ProbePing && p.Kind != ProbePong {
		return Probe{}, fmt.Errorf("%w %d", ErrProbeKind, b[1])
	}
	return p, nil
}

// Respond is the device side: it turns a ping into its pong, with the
// device's receive and send times (ns on any monotonic device clock). It is
// pure, so simulators call it from their own loops; the C responder in
// firmware does the same on the device.
func Respond(ping []byte, devRecv, devSend uint64) ([]byte, error) {
	p, err := DecodeProbe(ping)
	if err != nil {
		return nil, err
	}
	if p.Kind != ProbePing {
		return nil, fmt.Errorf("%w: got a %v, want a ping", ErrProbeKind, p.Kind)
	}
	p.Kind, p.DevRecv, p.DevSend = ProbePong, devRecv, devSend
	return p.Append(make([]byte, 0, ProbeSize)), nil
}

// PingKey is the key the gateway publishes device's pings on.
func PingKey(device string) string { return ProbePrefix + device + "/ping" }

// PongKey is the key device's responder answers on.
func PongKey(device string) string { return ProbePrefix + device + "/pong" }

// PongSubscription is the key expression the gateway subscribes to for every device's pongs.
const PongSubscription = ProbePrefix + "*/pong"

// ParseProbeKey splits a probe key into device name and kind; ok is false
// for any other key. A device announces its name by subscribing to its
// PingKey: the router calls ParseProbeKey on subscriber declarations.
func ParseProbeKey(key string) (device string, kind ProbeKind, ok bool) {
	rest, found := strings.CutPrefix(key, ProbePrefix)
	if !found {
		return "", 0, false
	}
	device, last, found := strings.Cut(rest, "/")
	if !found || !validDeviceName(device) {
		return "", 0, false
	}
	switch last {
	case "ping":
		return device, ProbePing, true
	case "pong":
		return device, ProbePong, true
	}
	return "", 0, false
}
