package devsim

import "github.com/picobridge/picobridge/probe"

// Responder turns a probe ping into its pong (docs/probe.md). devRecv and
// devSend are the device's receive and send times, ns on a monotonic device
// clock.
type Responder interface {
	Respond(ping []byte, devRecv, devSend uint64) ([]byte, error)
}

// ResponderFunc adapts a function to a Responder.
type ResponderFunc func(ping []byte, devRecv, devSend uint64) ([]byte, error)

// Respond implements Responder.
func (f ResponderFunc) Respond(ping []byte, devRecv, devSend uint64) ([]byte, error) {
	return f(ping, devRecv, devSend)
}

// ProbeResponder is the gateway's probe protocol responder (probe.Respond),
// the same logic as the C responder in the firmware. Devices use it unless
// Options.Responder says otherwise.
var ProbeResponder Responder = ResponderFunc(probe.Respond)

// PingKey and PongKey are the probe keys of a device (probe.PingKey,
// probe.PongKey): the device subscribes to its ping key (announcing its
// name) and answers on its pong key.
func PingKey(device string) string { return probe.PingKey(device) }

// PongKey: see PingKey.
func PongKey(device string) string { return probe.PongKey(device) }
