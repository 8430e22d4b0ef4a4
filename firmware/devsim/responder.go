package devsim

import "github.com/picobridge/picobridge/bridge"

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

// ProbeResponder is the gateway's probe protocol responder (bridge.Respond),
// the same logic as the C responder in the firmware. Devices use it unless
// Options.Responder says otherwise.
var ProbeResponder Responder = ResponderFunc(bridge.Respond)

// PingKey and PongKey are the probe keys of a device (bridge.PingKey,
// bridge.PongKey): the device subscribes to its ping key (announcing its
// name) and answers on its pong key.
func PingKey(device string) string { return bridge.PingKey(device) }

// PongKey: see PingKey.
func PongKey(device string) string { return bridge.PongKey(device) }
